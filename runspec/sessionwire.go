package runspec

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A check session's pod serves its checks over the pod network (ModeServe): its main
// process, the runner, listens on SessionPort with TLS, and runs each check a client
// sends it as a ModeSession runner of its own, as one exec'd into the container would
// run, without a request through the API server and the kubelet, nor a process the
// container runtime starts. Only a client that knows the session's key may ask:
//
//   - at its start the serving runner makes a TLS key of its own and a random token, and
//     writes them as a SessionKey (the key's pin, not the key) to SessionKeyFile, under
//     SessionCreds, readable by the container's user alone;
//   - the backend reads that file once per pod (ModeSessionKey, exec'd into the pod: what
//     only a client allowed pods/exec can do, the one who may exec a check today), then
//     dials the pod's IP, accepts only the certificate of the pinned key, and sends the
//     token and the request on the connection;
//   - the runner answers with the check's stderr, stdout and exit status, each a
//     SessionFrame; the client hanging up interrupts the check, as stdin closing does.
//
// Nothing of the key is in the pod's spec, its annotations or its log.
const (
	// SessionPort is the port a check session's runner serves checks on.
	SessionPort = 7788
	// SessionPortName names it in the pod's spec.
	SessionPortName = "checks"
	// SessionKeyFile is the serving runner's SessionKey, under SessionCreds.
	SessionKeyFile = ".session-key"
	// sessionHello starts what a client sends: "<hello> <token>\n", then the request
	// (SessionRequest's JSON) and a newline.
	sessionHello = "concourse-tekton-check/1"
	// maxSessionHello bounds the first line.
	maxSessionHello = 256
)

// SessionKey is how a backend reaches a check session's runner: the port it listens
// on, its certificate's public key's pin (SessionPin), and the token a client gives.
type SessionKey struct {
	Port  int    `json:"port"`
	Pin   string `json:"pin"`
	Token string `json:"token"`
}

// ParseSessionKey reads a SessionKey as the serving runner wrote it.
func ParseSessionKey(data []byte) (SessionKey, error) {
	var k SessionKey
	if err := json.Unmarshal(data, &k); err != nil {
		return SessionKey{}, fmt.Errorf("reading the check container's key: %w", err)
	}
	if k.Port <= 0 || k.Port > 65535 || k.Pin == "" || len(k.Token) < 32 {
		return SessionKey{}, errors.New("reading the check container's key: it is incomplete")
	}
	return k, nil
}

// SessionPin is the pin of a certificate's public key (its SubjectPublicKeyInfo, DER):
// its SHA-256, base64.
func SessionPin(spki []byte) string {
	sum := sha256.Sum256(spki)
	return base64.StdEncoding.EncodeToString(sum[:])
}

// SessionHello is the first line a client sends, newline included.
func SessionHello(token string) []byte {
	return []byte(sessionHello + " " + token + "\n")
}

// ReadSessionHello reads a client's first line and returns the token it gave.
func ReadSessionHello(r *bufio.Reader) (string, error) {
	var line []byte
	for {
		b, err := r.ReadByte()
		if err != nil {
			return "", fmt.Errorf("reading the client's hello: %w", err)
		}
		if b == '\n' {
			break
		}
		if len(line) == maxSessionHello {
			return "", errors.New("the client's hello is too long")
		}
		line = append(line, b)
	}
	token, ok := strings.CutPrefix(string(line), sessionHello+" ")
	if !ok {
		return "", errors.New("the client speaks no check session protocol of this runner's")
	}
	return token, nil
}

// SessionFrameKind says what a frame of a serving runner's answer carries.
type SessionFrameKind byte

const (
	// FrameStderr is a piece of the check's stderr (its log); FrameStdout of its stdout
	// (its result); FrameExit its exit status in decimal, the last frame.
	FrameStderr SessionFrameKind = 'e'
	FrameStdout SessionFrameKind = 'o'
	FrameExit   SessionFrameKind = 'x'
	// maxSessionFrame bounds a frame's payload.
	maxSessionFrame = 64 << 10
)

// SessionFrameWriter writes a serving runner's frames to one connection; its Stream
// writers can be a process's stdout and stderr at once.
type SessionFrameWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// NewSessionFrameWriter writes frames to w.
func NewSessionFrameWriter(w io.Writer) *SessionFrameWriter { return &SessionFrameWriter{w: w} }

// Write writes one frame of kind, or several where p is longer than a frame may be.
func (f *SessionFrameWriter) Write(kind SessionFrameKind, p []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for first := true; first || len(p) > 0; first = false {
		n := min(len(p), maxSessionFrame)
		var head [5]byte
		head[0] = byte(kind)
		binary.BigEndian.PutUint32(head[1:], uint32(n))
		if _, err := f.w.Write(head[:]); err != nil {
			return err
		}
		if _, err := f.w.Write(p[:n]); err != nil {
			return err
		}
		p = p[n:]
	}
	return nil
}

// Exit writes the last frame: the check's runner's exit status.
func (f *SessionFrameWriter) Exit(code int) error {
	return f.Write(FrameExit, []byte(strconv.Itoa(code)))
}

// Stream is an io.Writer of frames of kind.
func (f *SessionFrameWriter) Stream(kind SessionFrameKind) io.Writer {
	return streamWriter{f: f, kind: kind}
}

type streamWriter struct {
	f    *SessionFrameWriter
	kind SessionFrameKind
}

func (s streamWriter) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if err := s.f.Write(s.kind, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// ReadSessionFrames reads a serving runner's answer from r: stderr's frames to stderr,
// stdout's to stdout, until the exit frame, whose status it returns. An answer that ends
// before it is an error.
func ReadSessionFrames(r io.Reader, stdout, stderr io.Writer) (int, error) {
	br := bufio.NewReader(r)
	for {
		var head [5]byte
		if _, err := io.ReadFull(br, head[:]); err != nil {
			return 0, fmt.Errorf("the check container's answer ended before the check did: %w", err)
		}
		n := binary.BigEndian.Uint32(head[1:])
		if n > maxSessionFrame {
			return 0, fmt.Errorf("the check container sent a frame of %d bytes", n)
		}
		var dst io.Writer
		switch kind := SessionFrameKind(head[0]); kind {
		case FrameStderr:
			dst = stderr
		case FrameStdout:
			dst = stdout
		case FrameExit:
			b := make([]byte, n)
			if _, err := io.ReadFull(br, b); err != nil {
				return 0, fmt.Errorf("reading the check's exit status: %w", err)
			}
			code, err := strconv.Atoi(string(b))
			if err != nil {
				return 0, fmt.Errorf("the check container sent an exit status %q", b)
			}
			return code, nil
		default:
			return 0, fmt.Errorf("the check container sent a frame of kind %q", kind)
		}
		if _, err := io.CopyN(dst, br, int64(n)); err != nil {
			return 0, fmt.Errorf("reading the check's output: %w", err)
		}
	}
}

// ErrSessionUnreachable says a check session's runner could not be reached, or was not
// the one its key names: nothing was sent to it.
var ErrSessionUnreachable = errors.New("the check container cannot be reached")

// sessionDialTimeout bounds a connection's making, its handshake apart: a pod that
// cannot be reached is not waited for long.
const sessionDialTimeout = 5 * time.Second

// SessionClient is a connection to a check session's runner, which has taken the
// client's token: a check can be sent on it (Check).
type SessionClient struct {
	conn *tls.Conn
}

// DialSession connects to the check session's runner at host, which must hold key's
// pinned key, and gives it key's token. An error wrapping ErrSessionUnreachable says
// nothing was sent.
func DialSession(ctx context.Context, host string, key SessionKey) (*SessionClient, error) {
	d := tls.Dialer{NetDialer: &net.Dialer{Timeout: sessionDialTimeout}, Config: &tls.Config{
		MinVersion: tls.VersionTLS13,
		// The certificate is the runner's own, self-signed: its key is pinned instead.
		InsecureSkipVerify: true,
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 {
				return errors.New("no certificate")
			}
			cert, err := x509.ParseCertificate(raw[0])
			if err != nil {
				return err
			}
			if SessionPin(cert.RawSubjectPublicKeyInfo) != key.Pin {
				return errors.New("the certificate is not of the check container's key")
			}
			return nil
		},
	}}
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(key.Port)))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSessionUnreachable, err)
	}
	return &SessionClient{conn: conn.(*tls.Conn)}, nil
}

// Close closes a connection on which no check was sent.
func (c *SessionClient) Close() { c.conn.Close() }

// Check runs one check (its request, SessionRequest's JSON, may carry credentials) and
// closes the connection: the check's log goes to log as the runner sends it, and its
// result is read from its stdout. When ctx ends first, the connection is closed, which
// interrupts the check, and ctx's error is returned.
func (c *SessionClient) Check(ctx context.Context, token string, request []byte, log io.Writer) (SessionResult, error) {
	stop := context.AfterFunc(ctx, func() { c.conn.Close() })
	defer stop()
	defer c.conn.Close()
	msg := append(SessionHello(token), request...)
	if _, err := c.conn.Write(append(msg, '\n')); err != nil {
		if ctx.Err() != nil {
			return SessionResult{}, ctx.Err()
		}
		return SessionResult{}, fmt.Errorf("sending the check: %w", err)
	}
	stdout := &SessionOutput{}
	_, err := ReadSessionFrames(c.conn, stdout, log)
	if ctx.Err() != nil {
		return SessionResult{}, ctx.Err()
	}
	if err != nil {
		return SessionResult{}, err
	}
	// The runner exits non-zero for a check that did not succeed: its result says how.
	return ParseSessionResult(stdout.Bytes())
}

// maxSessionOutput bounds what a check's runner writes on stdout: its result, every
// version the check found.
const maxSessionOutput = 16 << 20

// SessionOutput is a check's runner's stdout as its backend keeps it, over the network
// or through pods/exec: at most maxSessionOutput bytes, more an error. It is safe to
// write while another goroutine waits to read it.
type SessionOutput struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SessionOutput) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len()+len(p) > maxSessionOutput {
		return 0, fmt.Errorf("the check wrote more than %d bytes of results", maxSessionOutput)
	}
	return b.buf.Write(p)
}

// Bytes is what was written.
func (b *SessionOutput) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Bytes()
}
