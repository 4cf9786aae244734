package podexec

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// sessionPodWorld is a check session's pod as its runner serves it: the real runner on
// this machine (its serve mode, on a port of its own), its directories temporary ones,
// the pod an object of a fake API server at 127.0.0.1, and pods/exec the runner run
// here by a streamer that records each command.
type sessionPodWorld struct {
	t                          *testing.T
	runner, root, creds, check string
	server                     *exec.Cmd
	pods                       *Pods
	kube                       *fake.Clientset
	stream                     *localStreamer
}

// localStreamer runs a command exec'd into a session's container as the runner on this
// machine, with the world's directories.
type localStreamer struct {
	w     *sessionPodWorld
	mu    sync.Mutex
	modes []string
}

func (s *localStreamer) Stream(ctx context.Context, _, _, _ string, command []string, o remotecommand.StreamOptions) error {
	mode := command[1]
	s.mu.Lock()
	s.modes = append(s.modes, mode)
	s.mu.Unlock()
	cmd := exec.CommandContext(ctx, s.w.runner, append([]string{mode}, s.w.flags()...)...)
	cmd.Stdout, cmd.Stderr = o.Stdout, o.Stderr
	stdin, err := cmd.StdinPipe()
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		return err
	}
	if o.Stdin != nil {
		// As the API server's stream: stdin is copied until the command ends, not waited
		// for.
		go func() {
			io.Copy(stdin, o.Stdin)
			stdin.Close()
		}()
	} else {
		stdin.Close()
	}
	return cmd.Wait()
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.Load() {
		if bin, err := runnerBinary(); err == nil {
			os.RemoveAll(filepath.Dir(bin))
		}
	}
	os.Exit(code)
}

// built says whether a test built the runner.
var built atomic.Bool

// runnerBinary is the runner, built once for the package's tests that need it.
var runnerBinary = sync.OnceValues(func() (string, error) {
	built.Store(true)
	dir, err := os.MkdirTemp("", "podexec-runner-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "concourse-runner")
	build := exec.Command("go", "build", "-o", bin, "../../cmd/concourse-runner")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the runner: %v\n%s", err, out)
	}
	return bin, nil
})

func (s *localStreamer) calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.modes)
}

func (w *sessionPodWorld) flags() []string {
	return []string{"--x-session-root=" + w.root, "--x-session-creds=" + w.creds, "--x-resource-dir=" + w.check, "--x-grace=3s", "--x-poll=20ms"}
}

func newSessionPodWorld(t *testing.T) *sessionPodWorld {
	t.Helper()
	dir := t.TempDir()
	runner, err := runnerBinary()
	if err != nil {
		t.Fatal(err)
	}
	w := &sessionPodWorld{t: t, runner: runner, root: filepath.Join(dir, "checks"), creds: filepath.Join(dir, "creds"), check: filepath.Join(dir, "opt-resource")}
	for _, d := range []string{w.root, w.creds, w.check} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(w.check, "check"), []byte("#!/bin/sh\necho checked >&2\necho '[{\"v\":\"1\"}]'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p-check-repo-session-1", Namespace: "builds", UID: "u1", Labels: map[string]string{runspec.LabelCheckSession: "h1"}},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: runspec.SessionContainer,
			Ports: []corev1.ContainerPort{{ContainerPort: runspec.SessionPort}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "127.0.0.1", ContainerStatuses: []corev1.ContainerStatus{{
			Name: runspec.SessionContainer, ImageID: "reg/git@sha256:abc", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}},
	}
	w.kube = fake.NewClientset(pod)
	w.stream = &localStreamer{w: w}
	w.pods = &Pods{Namespace: "builds", Kube: w.kube, Stream: w.stream}
	w.server = exec.Command(w.runner, append([]string{"serve", "--timeout=2m", "--x-session-port=0"}, w.flags()...)...)
	if err := w.server.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.stop)
	return w
}

// stop ends the serving runner, as its pod's deletion does.
func (w *sessionPodWorld) stop() {
	if w.server.ProcessState != nil {
		return
	}
	w.server.Process.Signal(syscall.SIGTERM)
	w.server.Wait()
}

// checkIn runs a check in the session pod, opened afresh as each check opens it.
func (w *sessionPodWorld) checkIn(t *testing.T) (direct bool, log string, res runspec.SessionResult) {
	t.Helper()
	conn, err := w.pods.OpenSession(t.Context(), "p-check-repo-session-1", "h1")
	if err != nil || conn == nil {
		t.Fatalf("opening the session: %v, %v", conn, err)
	}
	if conn.Pod.Spec.NodeName != "node-1" || len(conn.Pod.Status.ContainerStatuses) != 1 {
		t.Errorf("the session's pod for its events: %+v", conn.Pod)
	}
	req, _ := json.Marshal(runspec.SessionRequest{Spec: runspec.Spec{Mode: runspec.ModeCheck, PlanID: "c", Name: "repo", Build: runspec.Build{Name: "9"},
		Check: &runspec.Check{Type: "git", Source: map[string]any{"uri": "x"}}}})
	var buf bytes.Buffer
	res, err = conn.Check(t.Context(), "reg/git", req, &buf)
	if err != nil {
		t.Fatalf("the check: %v (log %q)", err, buf.String())
	}
	return conn.Direct(), buf.String(), res
}

// gets counts the API requests for the session's pod.
func (w *sessionPodWorld) gets() int {
	n := 0
	for _, a := range w.kube.Actions() {
		if a.GetVerb() == "get" && a.GetResource().Resource == "pods" {
			n++
		}
	}
	return n
}

// TestOpenSessionOverTheNetwork: a session pod whose runner serves checks is looked up
// and its key read (an exec) for its first check only; every check goes over the
// network, with its log and result as an exec'd check's.
func TestOpenSessionOverTheNetwork(t *testing.T) {
	w := newSessionPodWorld(t)
	for i := range 3 {
		direct, log, res := w.checkIn(t)
		if !direct || res.Outcome != runspec.Succeeded || len(res.Versions) != 1 || !strings.Contains(log, "checked") {
			t.Errorf("check %d: direct %v, %+v, log %q; want over the network, succeeded with a version", i, direct, res, log)
		}
	}
	if got := w.stream.calls(); !slices.Equal(got, []string{string(runspec.ModeSessionKey)}) {
		t.Errorf("execs %v; want the key read once", got)
	}
	if n := w.gets(); n != 1 {
		t.Errorf("the pod was read %d times; want once", n)
	}
}

// TestOpenSessionFallsBackToExec: a session whose runner cannot be reached (it stopped
// while its pod still says it runs) is looked up again, and its check runs exec'd into
// the pod; with ExecChecks every check is exec'd, the pod read for each.
func TestOpenSessionFallsBackToExec(t *testing.T) {
	w := newSessionPodWorld(t)
	if direct, _, _ := w.checkIn(t); !direct {
		t.Fatal("the first check did not go over the network")
	}
	w.stop()
	direct, log, res := w.checkIn(t)
	if direct || res.Outcome != runspec.Succeeded || !strings.Contains(log, "checked") {
		t.Errorf("after the runner stopped: direct %v, %+v, log %q; want exec'd, succeeded", direct, res, log)
	}
	want := []string{string(runspec.ModeSessionKey), string(runspec.ModeSessionKey), string(runspec.ModeSession)}
	if got := w.stream.calls(); !slices.Equal(got, want) {
		t.Errorf("execs %v; want %v", got, want)
	}

	w2 := newSessionPodWorld(t)
	w2.pods.ExecChecks = true
	for range 2 {
		if direct, _, res := w2.checkIn(t); direct || res.Outcome != runspec.Succeeded {
			t.Errorf("with ExecChecks: direct %v, %+v; want exec'd, succeeded", direct, res)
		}
	}
	if got, n := w2.stream.calls(), w2.gets(); len(got) != 2 || n != 2 {
		t.Errorf("with ExecChecks: execs %v, pod read %d times; want a check each, and a read each", got, n)
	}
}

// TestOpenSessionGone: a session pod that is gone, or of another hash, takes no check
// (nil: a new one is made), and is forgotten.
func TestOpenSessionGone(t *testing.T) {
	w := newSessionPodWorld(t)
	w.checkIn(t)
	if conn, err := w.pods.OpenSession(t.Context(), "p-check-repo-session-1", "h2"); conn != nil || err != nil {
		t.Errorf("a session of another hash: %v, %v; want none", conn, err)
	}
	w.stop()
	if err := w.kube.CoreV1().Pods("builds").Delete(context.Background(), "p-check-repo-session-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if conn, err := w.pods.OpenSession(ctx, "p-check-repo-session-1", "h1"); conn != nil || err != nil {
		t.Errorf("a session whose pod is gone: %v, %v; want none", conn, err)
	}
	if w.pods.sessions.get("p-check-repo-session-1") != nil {
		t.Error("the gone session is still remembered")
	}
}
