package runner

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// helloTimeout is how long a client has to finish its TLS handshake and say its hello.
const helloTimeout = 10 * time.Second

// serveChecks is a check session's main process (runspec.ModeServe): it holds the pod
// until it is stopped (SIGTERM, when its pod is deleted) or timeout passes, and serves
// checks on port meanwhile (runspec/sessionwire.go): each check a runner of its own,
// started as child says (the runner's session mode), its stdin the client's request
// and then the connection, until the client hangs up or the session ends, its output
// sent back in frames. Its key goes to credsRoot's runspec.SessionKeyFile, and nowhere
// else.
func serveChecks(ctx context.Context, timeout time.Duration, port int, credsRoot string, child []string, stderr io.Writer) int {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cert, pin, err := sessionCertificate(timeout)
	if err != nil {
		fmt.Fprintf(stderr, "error: making the check container's key: %v\n", err)
		return 1
	}
	var tok [32]byte
	if _, err := rand.Read(tok[:]); err != nil {
		fmt.Fprintf(stderr, "error: making the check container's token: %v\n", err)
		return 1
	}
	token := hex.EncodeToString(tok[:])
	ln, err := net.Listen("tcp", net.JoinHostPort("", strconv.Itoa(port)))
	if err != nil {
		fmt.Fprintf(stderr, "error: serving checks: %v\n", err)
		return 1
	}
	defer ln.Close()
	key := runspec.SessionKey{Port: ln.Addr().(*net.TCPAddr).Port, Pin: pin, Token: token}
	if err := writeSessionKey(credsRoot, key); err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	tln := tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13})
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	var wg sync.WaitGroup
	for {
		conn, err := tln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			// Out of file descriptors and the like: the next client may fare better.
			fmt.Fprintf(stderr, "serving checks: %v\n", err)
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		wg.Go(func() { serveCheck(ctx, conn.(*tls.Conn), token, child, stderr) })
	}
	// Checks under way are interrupted (their stdin closes), and end.
	wg.Wait()
	return 0
}

// serveCheck serves one client: its hello, then one check, which it says it served on
// stderr, the pod's log.
func serveCheck(ctx context.Context, conn *tls.Conn, token string, child []string, stderr io.Writer) {
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(helloTimeout))
	if err := conn.HandshakeContext(ctx); err != nil {
		return
	}
	in := bufio.NewReader(conn)
	got, err := runspec.ReadSessionHello(in)
	if err == nil && subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
		err = errors.New("a client gave no token of this container's")
	}
	if err != nil {
		fmt.Fprintf(stderr, "serving checks: %s: %v\n", conn.RemoteAddr(), err)
		return
	}
	_ = conn.SetDeadline(time.Time{})
	start := time.Now()
	frames := runspec.NewSessionFrameWriter(conn)
	cmd := exec.Command(child[0], child[1:]...)
	cmd.Stdout, cmd.Stderr = frames.Stream(runspec.FrameStdout), frames.Stream(runspec.FrameStderr)
	// A process of the check's that keeps the runner's stdout open does not keep the
	// check from ending.
	cmd.WaitDelay = 5 * time.Second
	stdin, err := cmd.StdinPipe()
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		_ = frames.Write(runspec.FrameStderr, fmt.Appendf(nil, "error: starting the check: %v\n", err))
		_ = frames.Exit(runspec.Errored.ExitCode())
		return
	}
	done := make(chan struct{})
	var closeStdin sync.Once
	go func() {
		// The request, then nothing until the client hangs up.
		_, _ = io.Copy(stdin, in)
		closeStdin.Do(func() { stdin.Close() })
	}()
	go func() {
		select {
		case <-ctx.Done():
			// The session ends: its check is interrupted, as when its client hangs up.
			closeStdin.Do(func() { stdin.Close() })
		case <-done:
		}
	}()
	err = cmd.Wait()
	close(done)
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		_ = frames.Write(runspec.FrameStderr, fmt.Appendf(nil, "error: running the check: %v\n", err))
		code = runspec.Errored.ExitCode()
	}
	// A line of the pod's log for each check, nothing of its own in it: what kubectl logs
	// shows of the container's work.
	fmt.Fprintf(stderr, "served a check: exit status %d after %s\n", code, time.Since(start).Round(time.Millisecond))
	_ = frames.Exit(code)
}

// sessionCertificate makes a key and a certificate of it for a check session that lasts
// at most timeout, and returns it with its key's pin.
func sessionCertificate(timeout time.Duration) (tls.Certificate, string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, "", err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return tls.Certificate{}, "", err
	}
	now := time.Now()
	tpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "concourse-tekton check container"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(timeout + time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, "", err
	}
	spki, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return tls.Certificate{}, "", err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, runspec.SessionPin(spki), nil
}

// writeSessionKey writes key to dir's runspec.SessionKeyFile, readable by the
// container's user alone, whole or not at all.
func writeSessionKey(dir string, key runspec.SessionKey) error {
	data, err := json.Marshal(key)
	if err != nil {
		return fmt.Errorf("encoding the check container's key: %w", err)
	}
	tmp, err := os.CreateTemp(dir, runspec.SessionKeyFile+".*")
	if err != nil {
		return fmt.Errorf("writing the check container's key: %w", err)
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, runspec.SessionKeyFile))
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("writing the check container's key: %w", err)
	}
	return nil
}

// sessionKey writes the serving runner's key in credsRoot to stdout
// (runspec.ModeSessionKey), once it is there: the runner writes it as it starts.
func sessionKey(ctx context.Context, credsRoot string, stdout io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		data, err := os.ReadFile(filepath.Join(credsRoot, runspec.SessionKeyFile))
		if err == nil {
			if _, err := runspec.ParseSessionKey(data); err != nil {
				return err
			}
			_, err = stdout.Write(append(data, '\n'))
			return err
		}
		if !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("reading the check container's key: %w", err)
		}
		select {
		case <-ctx.Done():
			return errors.New("the check container serves no checks: it wrote no key")
		case <-time.After(50 * time.Millisecond):
		}
	}
}
