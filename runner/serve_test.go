package runner_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/concourse-tekton/concourse-tekton/internal/syncbuf"
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// server is a check session's serving runner under way, as its pod's main process.
type server struct {
	*running
	root, creds string
	key         runspec.SessionKey
}

// serve starts a check session's serving runner on a port of its choosing and reads its
// key as the backend does (the session-key mode).
func (w *world) serve() *server {
	w.t.Helper()
	s := &server{root: filepath.Join(w.root, "session"), creds: filepath.Join(w.root, "session-creds")}
	for _, d := range []string{s.root, s.creds} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			w.t.Fatal(err)
		}
	}
	cmd := exec.Command(binary, "serve", "--timeout=2m", "--x-session-port=0", "--x-session-root="+s.root, "--x-session-creds="+s.creds,
		"--x-resource-dir="+w.resources, "--x-rootfs="+w.rootfs, "--x-grace=3s", "--x-poll=20ms")
	s.running = w.startStopped(cmd, func() { cmd.Process.Signal(syscall.SIGTERM) })
	out, err := exec.Command(binary, "session-key", "--x-session-creds="+s.creds).Output()
	if err != nil {
		w.t.Fatalf("session-key: %v; the server said %q", err, s.stderr.String())
	}
	if s.key, err = runspec.ParseSessionKey(out); err != nil {
		w.t.Fatal(err)
	}
	return s
}

// check sends req to the server as the backend does, and returns its log and result.
func (s *server) check(ctx context.Context, t *testing.T, req runspec.SessionRequest) (string, runspec.SessionResult, error) {
	t.Helper()
	c, err := runspec.DialSession(ctx, "127.0.0.1", s.key)
	if err != nil {
		t.Fatal(err)
	}
	var log syncbuf.Buffer
	res, err := c.Check(ctx, s.key.Token, []byte(mustJSON(t, req)), &log)
	return log.String(), res, err
}

// TestServeChecks: a check sent to a check session's serving runner sees what it sees
// exec'd into its container (its build's environment, its source with the request's
// credentials), its log comes back redacted and its result whole, and nothing of it is
// left; the key is readable by the container's user alone, and said nowhere else.
func TestServeChecks(t *testing.T) {
	w := newWorld(t)
	rec, req := w.credentialedCheck()
	s := w.serve()
	for i := range 2 {
		log, res, err := s.check(t.Context(), t, req)
		if err != nil {
			t.Fatalf("check %d: %v", i, err)
		}
		want := runspec.SessionResult{Outcome: runspec.Succeeded, Versions: []map[string]string{{"v": "1"}, {"v": "2"}}}
		if diff := cmp.Diff(want, res); diff != "" {
			t.Errorf("check %d: result (-want +got):\n%s", i, diff)
		}
		if strings.Contains(log, "s3cr3t") || !strings.Contains(log, "token is ((redacted))") {
			t.Errorf("check %d: log %q; want the credential redacted", i, log)
		}
	}
	if got := readFile(t, rec+"/check.stdin"); got != `{"source":{"uri":"s3cr3t-value"},"version":{"v":"0"}}` {
		t.Errorf("the check read %s", got)
	}
	if diff := cmp.Diff(checkBuildEnv, strings.Fields(readFile(t, rec+"/check.env"))); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
	entries, err := os.ReadDir(s.root)
	if err != nil || len(entries) != 0 {
		t.Errorf("the checks left %v (%v)", entries, err)
	}
	entries, err = os.ReadDir(s.creds)
	if err != nil || len(entries) != 1 || entries[0].Name() != runspec.SessionKeyFile {
		t.Errorf("the credentials' directory holds %v (%v); want the key alone", entries, err)
	}
	if fi, err := os.Stat(filepath.Join(s.creds, runspec.SessionKeyFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the key's file: %v, %v; want 0600", fi, err)
	}
	// The server's log reaches this process through a pipe: it may lag its answers.
	out := ""
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if out = s.stdout.String() + s.stderr.String(); strings.Count(out, "served a check: exit status 0 after ") == 2 {
			break
		}
	}
	if strings.Contains(out, s.key.Token) || strings.Contains(out, "s3cr3t") || strings.Count(out, "served a check: exit status 0 after ") != 2 {
		t.Errorf("the server said %q; want the two checks served, no secret", out)
	}
}

// TestServeChecksRefusesStrangers: a client without the container's token, or speaking
// no protocol of the runner's, gets nothing run; a client whose pin is not the
// container's key's sends nothing.
func TestServeChecksRefusesStrangers(t *testing.T) {
	w := newWorld(t)
	ran := filepath.Join(w.root, "ran")
	w.script("check", `touch `+ran+`; echo '[]'`)
	s := w.serve()
	req := runspec.SessionRequest{Spec: runspec.Spec{Mode: runspec.ModeCheck, PlanID: "c", Name: "repo", Build: runspec.Build{Name: "9"},
		Check: &runspec.Check{Type: "git", Source: map[string]any{"uri": "x"}}}}
	c, err := runspec.DialSession(t.Context(), "127.0.0.1", s.key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Check(t.Context(), strings.Repeat("0", 64), []byte(mustJSON(t, req)), &syncbuf.Buffer{}); err == nil {
		t.Error("a check with another token was answered")
	}
	conn, err := tls.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(s.key.Port)), &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	conn.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
	conn.SetReadDeadline(time.Now().Add(15 * time.Second))
	if n, err := conn.Read(make([]byte, 64)); n != 0 || err == nil {
		t.Errorf("a stranger was answered %d bytes (%v)", n, err)
	}
	conn.Close()
	other := s.key
	other.Pin = runspec.SessionPin([]byte("another key"))
	if _, err := runspec.DialSession(t.Context(), "127.0.0.1", other); !errors.Is(err, runspec.ErrSessionUnreachable) {
		t.Errorf("dialling a container of another key: %v; want it unreachable", err)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("a stranger's check ran")
	}
	if !strings.Contains(s.stderr.String(), "a client gave no token of this container's") {
		t.Errorf("the server said %q; want the refusal", s.stderr.String())
	}
}

// TestServeChecksInterrupted: a client that hangs up (a check's timeout) interrupts its
// check at once, and the session's end (its pod deleted: SIGTERM) interrupts those
// under way, each answered, before the runner ends.
func TestServeChecksInterrupted(t *testing.T) {
	w := newWorld(t)
	started := filepath.Join(w.root, "started")
	w.script("check", `touch `+started+`; exec sleep 60`)
	s := w.serve()
	req := runspec.SessionRequest{Spec: runspec.Spec{Mode: runspec.ModeCheck, PlanID: "c", Name: "repo", Build: runspec.Build{Name: "9"},
		Check: &runspec.Check{Type: "git", Source: map[string]any{"uri": "x"}}}}

	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, _, err := s.check(ctx, t, req)
		errc <- err
	}()
	waitFile(t, started)
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("a check whose client hung up: %v", err)
	}
	waitEmpty(t, s.root)

	os.Remove(started)
	type answer struct {
		res runspec.SessionResult
		err error
	}
	answers := make(chan answer, 1)
	go func() {
		_, res, err := s.check(t.Context(), t, req)
		answers <- answer{res, err}
	}()
	waitFile(t, started)
	s.cmd.Process.Signal(syscall.SIGTERM)
	a := <-answers
	if a.err != nil || a.res.Outcome != runspec.Aborted || a.res.Error != "interrupted" {
		t.Errorf("a check under way when the session ended: %+v, %v; want aborted, interrupted", a.res, a.err)
	}
	if r := s.wait(t); r.exit != 0 {
		t.Errorf("the server exited %d; stderr %q", r.exit, r.stderr)
	}
	waitEmpty(t, s.root)
}

// waitEmpty waits until the directory dir is empty.
func waitEmpty(t *testing.T, dir string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		entries, err := os.ReadDir(dir)
		if err == nil && len(entries) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still holds %v", dir, entries)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
