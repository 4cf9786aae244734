package webcmd

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
)

// GenerateKeyCommand writes a new RSA private key in PEM, the format
// --session-signing-key reads. It takes the flags of `concourse generate-key` for RSA
// keys; SSH keys (for the TSA and workers) have no use here.
type GenerateKeyCommand struct {
	Type     string `short:"t" long:"type"     default:"rsa"  choice:"rsa" description:"The type of key to generate."`
	FilePath string `short:"f" long:"filename" required:"true" description:"File path where the key shall be created."`
	Bits     int    `short:"b" long:"bits"     default:"4096" description:"The number of bits in the key to create."`
}

// Execute writes the key to FilePath, readable by its owner only.
func (cmd *GenerateKeyCommand) Execute(args []string) error {
	if len(args) != 0 {
		return fmt.Errorf("unexpected arguments: %v", args)
	}
	pemBytes, err := newRSAKeyPEM(cmd.Bits)
	if err != nil {
		return err
	}
	if err := os.WriteFile(cmd.FilePath, pemBytes, 0o600); err != nil {
		return fmt.Errorf("writing the key: %w", err)
	}
	fmt.Println("wrote private key to", cmd.FilePath)
	return nil
}

func newRSAKeyPEM(bits int) ([]byte, error) {
	key, err := rsa.GenerateKey(rand.Reader, bits)
	if err != nil {
		return nil, fmt.Errorf("generating the key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), nil
}
