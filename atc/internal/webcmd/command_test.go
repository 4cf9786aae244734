package webcmd

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/concourse/concourse/flag"
	flags "github.com/jessevdk/go-flags"
)

// parse parses args as main does, but records the command instead of running it.
func parse(t *testing.T, args ...string) (*Command, flags.Commander, error) {
	t.Helper()
	var cmd Command
	parser := NewParser(&cmd)
	var ran flags.Commander
	parser.CommandHandler = func(c flags.Commander, _ []string) error {
		ran = c
		return nil
	}
	_, err := parser.ParseArgs(args)
	return &cmd, ran, err
}

func TestParseWeb(t *testing.T) {
	t.Setenv("CONCOURSE_POSTGRES_PORT", "55432")

	cmd, ran, err := parse(t, "web",
		"--bind-ip", "127.0.0.1", "--bind-port", "8090",
		"--add-local-user", "test:test", "--main-team-local-user", "test",
		"--enable-resource-causality")
	if err != nil {
		t.Fatalf("web without --session-signing-key and --client-secret, which it fills in: %v", err)
	}
	if ran != &cmd.Web {
		t.Errorf("ran %T, want the web command", ran)
	}
	web := cmd.Web.RunCommand
	if got := web.Postgres.Port; got != 55432 {
		t.Errorf("postgres port %d, want 55432 from CONCOURSE_POSTGRES_PORT", got)
	}
	if got := web.Auth.AuthFlags.LocalUsers["test"]; got != "test" {
		t.Errorf("local user test has password %q, want test", got)
	}
	if !web.FeatureFlags.EnableResourceCausality {
		t.Error("--enable-resource-causality not set")
	}
	if web.CredentialManagers == nil {
		t.Error("the credential managers' flags are not wired")
	}
}

func TestParseRejectsUnknownFlag(t *testing.T) {
	// The TSA's flags belong to `concourse web` but not to this web node.
	if _, _, err := parse(t, "web", "--tsa-bind-port", "2222"); err == nil {
		t.Error("--tsa-bind-port accepted; this web node has no TSA")
	}
}

func TestFillDefaults(t *testing.T) {
	_, ran, err := parse(t, "web")
	if err != nil {
		t.Fatal(err)
	}
	web := ran.(*WebCommand)
	if err := web.fillDefaults(); err != nil {
		t.Fatal(err)
	}
	auth := web.Auth.AuthFlags
	if auth.SigningKey == nil || auth.SigningKey.PrivateKey == nil {
		t.Fatal("no session signing key generated")
	}
	id, secret := web.Server.ClientID, web.Server.ClientSecret
	if secret == "" || auth.Clients[id] != secret {
		t.Errorf("client %q: secret %q, registered %q; want a secret, registered", id, secret, auth.Clients[id])
	}

	// A second web node given the same key derives the same secret, so logins survive a
	// restart; a given secret is kept.
	key := auth.SigningKey
	again := &WebCommand{RunCommand: web.RunCommand}
	again.Server.ClientSecret = ""
	if err := again.fillDefaults(); err != nil {
		t.Fatal(err)
	}
	if again.Auth.AuthFlags.SigningKey != key {
		t.Error("a given signing key was replaced")
	}
	if got := again.Server.ClientSecret; got != secret {
		t.Errorf("secret derived again from the same key: %q, want %q", got, secret)
	}
	again.Server.ClientSecret = "given"
	if err := again.fillDefaults(); err != nil {
		t.Fatal(err)
	}
	if got := again.Auth.AuthFlags.Clients[id]; got != "given" {
		t.Errorf("registered secret %q, want the given one", got)
	}
	if other := derivedSecret(key.PrivateKey, "other-client"); other == secret {
		t.Error("two clients derive the same secret")
	}
}

func TestGenerateKeyReadBySessionSigningKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "key")
	cmd, ran, err := parse(t, "generate-key", "-t", "rsa", "-f", path, "-b", "2048")
	if err != nil {
		t.Fatal(err)
	}
	if ran != &cmd.GenerateKey {
		t.Fatalf("ran %T, want generate-key", ran)
	}
	if err := cmd.GenerateKey.Execute(nil); err != nil {
		t.Fatal(err)
	}

	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if mode := info.Mode().Perm(); mode != 0o600 {
		t.Errorf("key file mode %v, want -rw-------", mode)
	}
	var key flag.PrivateKey
	if err := key.UnmarshalFlag(path); err != nil {
		t.Fatalf("--session-signing-key cannot read the key: %v", err)
	}
	if bits := key.N.BitLen(); bits != 2048 {
		t.Errorf("key of %d bits, want 2048", bits)
	}
}
