package runner_test

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/concourse-tekton/concourse-tekton/internal/syncbuf"
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// sessionRun is a check session's runner under way, its stdin open until closed.
type sessionRun struct {
	*running
	stdin io.WriteCloser
	root  string
	creds string
}

// startSession starts a check session's runner on req, as the backend execs one into a
// session's container: the request, then stdin left open.
func (w *world) startSession(req runspec.SessionRequest) *sessionRun {
	w.t.Helper()
	s := &sessionRun{root: filepath.Join(w.root, "session"), creds: filepath.Join(w.root, "session-creds")}
	for _, d := range []string{s.root, s.creds} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			w.t.Fatal(err)
		}
	}
	cmd := exec.Command(binary, "session", "--x-session-root="+s.root, "--x-session-creds="+s.creds,
		"--x-resource-dir="+w.resources, "--x-rootfs="+w.rootfs, "--x-grace=3s", "--x-poll=20ms")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		w.t.Fatal(err)
	}
	s.running, s.stdin = w.startStopped(cmd, func() { stdin.Close() }), stdin
	if _, err := stdin.Write([]byte(mustJSON(w.t, req) + "\n")); err != nil {
		w.t.Fatal(err)
	}
	return s
}

// startStopped starts cmd, a runner that ends when stop asks it to: at the test's end it
// is asked, then killed if it has not ended 20 seconds later.
func (w *world) startStopped(cmd *exec.Cmd, stop func()) *running {
	w.t.Helper()
	r := &running{cmd: cmd, stdout: &syncbuf.Buffer{}, stderr: &syncbuf.Buffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = r.stdout, r.stderr
	r.start = time.Now()
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	go func() {
		cmd.Wait()
		close(r.done)
	}()
	w.t.Cleanup(func() {
		stop()
		select {
		case <-r.done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-r.done
		}
	})
	return r
}

// leftovers lists what a session's checks left in its directories.
func (s *sessionRun) leftovers(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, d := range []string{s.root, s.creds} {
		entries, err := os.ReadDir(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			out = append(out, filepath.Join(d, e.Name()))
		}
	}
	return out
}

func sessionResult(t *testing.T, r run) runspec.SessionResult {
	t.Helper()
	res, err := runspec.ParseSessionResult([]byte(r.stdout))
	if err != nil {
		t.Fatalf("reading the result: %v\nstdout %q\nstderr %q", err, r.stdout, r.stderr)
	}
	return res
}

// credentialedCheck is a check's request whose source reads the credential token
// (s3cr3t-value), and the directory where its script records what it read (stdin, env):
// the script says the token on stderr, and finds two versions.
func (w *world) credentialedCheck() (string, runspec.SessionRequest) {
	w.t.Helper()
	rec := w.recordingScript("check", `echo "token is $(cat `+w.root+`/rec/check.stdin | sed 's/.*uri":"\([^"]*\)".*/\1/')" >&2
echo '[{"v":"1"},{"v":"2"}]'`)
	spec := runspec.Spec{Mode: runspec.ModeCheck, PlanID: "c", Name: "repo", SuppliedCredentials: true,
		Build: runspec.Build{Name: "9"},
		Check: &runspec.Check{Type: "git", Source: map[string]any{"uri": "((token))"}, FromVersion: map[string]string{"v": "0"}}}
	context := `{"id":42,"team_id":1,"team":"main","pipeline_id":3,"pipeline":"app","job":"check-repo","external_url":"https://ci.example.com","check":true}`
	return rec, runspec.SessionRequest{Spec: spec, Context: json.RawMessage(context),
		Credentials: map[string]json.RawMessage{runspec.CredentialKey("token"): json.RawMessage(`"s3cr3t-value"`)}}
}

// TestSessionCheck: a check run in a check session sees what it sees as a step of its
// own (its build's environment, its source with the credentials the request carries),
// its log is redacted, every version it found is in its result, however few, and
// nothing of it is left in the session's directories.
func TestSessionCheck(t *testing.T) {
	w := newWorld(t)
	rec, req := w.credentialedCheck()
	s := w.startSession(req)
	r := s.wait(t)
	if r.exit != 0 {
		t.Fatalf("exit %d; want 0\nstderr %q", r.exit, r.stderr)
	}
	res := sessionResult(t, r)
	want := runspec.SessionResult{Outcome: runspec.Succeeded, Versions: []map[string]string{{"v": "1"}, {"v": "2"}}}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	if got := readFile(t, rec+"/check.stdin"); got != `{"source":{"uri":"s3cr3t-value"},"version":{"v":"0"}}` {
		t.Errorf("the check read %s", got)
	}
	if strings.Contains(r.stderr, "s3cr3t") || !strings.Contains(r.stderr, "token is ((redacted))") {
		t.Errorf("log %q; want the credential redacted", r.stderr)
	}
	if diff := cmp.Diff(checkBuildEnv, strings.Fields(readFile(t, rec+"/check.env"))); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
	if left := s.leftovers(t); len(left) != 0 {
		t.Errorf("the check left %v", left)
	}
}

// TestSessionCheckFails: a check script that fails ends the check failed, with no
// versions (a check's finish says only that it did not succeed).
func TestSessionCheckFails(t *testing.T) {
	w := newWorld(t)
	w.script("check", `echo '[{"v":"1"}]'; echo broken >&2; exit 3`)
	spec := runspec.Spec{Mode: runspec.ModeCheck, PlanID: "c", Name: "repo", Build: runspec.Build{Name: "9"},
		Check: &runspec.Check{Type: "git", Source: map[string]any{"uri": "x"}}}
	r := w.startSession(runspec.SessionRequest{Spec: spec}).wait(t)
	want := runspec.SessionResult{Outcome: runspec.Failed}
	if diff := cmp.Diff(want, sessionResult(t, r)); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	if r.exit != runspec.Failed.ExitCode() || !strings.Contains(r.stderr, "broken") {
		t.Errorf("exit %d, log %q; want %d and the script's line", r.exit, r.stderr, runspec.Failed.ExitCode())
	}
}

// TestSessionInterruptedWhenStdinCloses: the backend's hanging up (a check's timeout)
// interrupts the check's script at once: nothing of a check outlives it.
func TestSessionInterruptedWhenStdinCloses(t *testing.T) {
	w := newWorld(t)
	started := filepath.Join(w.root, "started")
	w.script("check", `touch `+started+`; exec sleep 60`)
	spec := runspec.Spec{Mode: runspec.ModeCheck, PlanID: "c", Name: "repo", Build: runspec.Build{Name: "9"},
		Check: &runspec.Check{Type: "git", Source: map[string]any{"uri": "x"}}}
	s := w.startSession(runspec.SessionRequest{Spec: spec})
	waitFile(t, started)
	s.stdin.Close()
	r := s.wait(t)
	if r.took > 20*time.Second {
		t.Errorf("the runner took %s to end after its stdin closed", r.took)
	}
	res := sessionResult(t, r)
	if res.Outcome != runspec.Aborted || res.Error != "interrupted" {
		t.Errorf("result %+v; want aborted, interrupted", res)
	}
	if left := s.leftovers(t); len(left) != 0 {
		t.Errorf("the check left %v", left)
	}
}

// TestSessionRefusesBadRequests: a check session runs checks, from a request it can
// read, and says so otherwise, with no result.
func TestSessionRefusesBadRequests(t *testing.T) {
	for _, tt := range []struct {
		name string
		req  runspec.SessionRequest
		want string
	}{
		{name: "a task", req: runspec.SessionRequest{Spec: runspec.Spec{Mode: runspec.ModeTask, PlanID: "t", Task: &runspec.Task{}}}, want: `was asked to run a "task" step`},
		{name: "too long", req: runspec.SessionRequest{
			Spec: runspec.Spec{Mode: runspec.ModeCheck, PlanID: "c", Name: "repo", Check: &runspec.Check{Type: "git", Source: map[string]any{"x": strings.Repeat("x", 4<<20)}}}},
			want: "reading the check's request: more than 4194304 bytes"},
		{name: "a key that is a path", req: runspec.SessionRequest{
			Spec:        runspec.Spec{Mode: runspec.ModeCheck, PlanID: "c", Name: "repo", Check: &runspec.Check{Type: "git"}},
			Credentials: map[string]json.RawMessage{"../x": json.RawMessage(`"v"`)}}, want: `credential key "../x"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			s := w.startSession(tt.req)
			r := s.wait(t)
			if r.exit != runspec.Errored.ExitCode() || !strings.Contains(r.stderr, tt.want) || r.stdout != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d, nothing, and %q", r.exit, r.stdout, r.stderr, runspec.Errored.ExitCode(), tt.want)
			}
			if left := s.leftovers(t); len(left) != 0 {
				t.Errorf("the check left %v", left)
			}
		})
	}
}
