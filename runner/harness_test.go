package runner_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/concourse-tekton/concourse-tekton/internal/syncbuf"
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// binary is the runner, built once for the package's tests.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "concourse-runner-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "concourse-runner")
	build := exec.Command("go", "build", "-o", binary, "../cmd/concourse-runner")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the runner: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// world is one build's worth of directories: the build volume, the results directory, and
// the stand-ins for /tmp/build, /opt/resource and the mounted credentials.
type world struct {
	t                                        *testing.T
	root, volume, tmpBuild, resources, creds string
	// rootfs stands for the container's root file system (the runner's --x-rootfs).
	rootfs string
	// taskVars stands for the task vars Secret's mount (supplied credentials).
	taskVars string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	root := t.TempDir()
	w := &world{
		t:         t,
		root:      root,
		volume:    filepath.Join(root, "volume"),
		tmpBuild:  filepath.Join(root, "tmp-build"),
		resources: filepath.Join(root, "opt-resource"),
		creds:     filepath.Join(root, "creds"),
		taskVars:  filepath.Join(root, "task-vars"),
		rootfs:    filepath.Join(root, "rootfs"),
	}
	for _, d := range []string{w.volume, w.tmpBuild, w.resources, w.creds, w.taskVars, w.rootfs} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// spec is a spec for a step of this world's build; results go to results/<plan>.
func (w *world) spec(mode runspec.Mode, planID, name string) runspec.Spec {
	return runspec.Spec{
		Mode:   mode,
		PlanID: planID,
		Name:   name,
		Build:  runspec.Build{ID: 42, Name: "7", TeamName: "main", TeamID: 1, PipelineName: "app", PipelineID: 3, JobName: "unit", JobID: 5, ExternalURL: "https://ci.example.com"},
		Paths:  runspec.Paths{Volume: w.volume, Results: w.resultsDir(planID), Creds: w.creds, TaskVars: w.taskVars},
	}
}

func (w *world) resultsDir(planID string) string {
	return filepath.Join(w.root, "results", runspec.Escape(planID))
}

// result reads a Tekton result a step wrote ("" when it wrote none).
func (w *world) result(planID, name string) string {
	data, err := os.ReadFile(filepath.Join(w.resultsDir(planID), name))
	if err != nil {
		return ""
	}
	return string(data)
}

// run is one finished runner process.
type run struct {
	exit int
	// stdout is what the step wrote on stdout after its start mark (runspec.StartMark),
	// if it wrote one: announced.
	stdout, stderr string
	announced      bool
	// failure is the step's error result: why it did not finish.
	failure string
	took    time.Duration
}

// said is everything the step said: its log, then its error result as a line.
func (r run) said() string {
	if r.failure == "" {
		return r.stderr
	}
	return r.stderr + r.failure + "\n"
}

// running is a runner process under way.
type running struct {
	cmd            *exec.Cmd
	stdout, stderr *syncbuf.Buffer
	start          time.Time
	done           chan struct{}
	// results is the step's results directory, when the test knows it.
	results string
}

func (w *world) args(spec runspec.Spec) []string {
	w.t.Helper()
	args, err := spec.Args()
	if err != nil {
		w.t.Fatal(err)
	}
	return append(args, "--x-tmp-build="+w.tmpBuild, "--x-resource-dir="+w.resources, "--x-rootfs="+w.rootfs, "--x-grace=3s", "--x-poll=20ms")
}

// start starts the runner on spec, with env as its environment when it is not nil.
func (w *world) start(spec runspec.Spec, env []string) *running {
	w.t.Helper()
	r := w.startArgs(w.args(spec), env)
	r.results = spec.Paths.Results
	return r
}

func (w *world) startArgs(args []string, env []string) *running {
	w.t.Helper()
	r := &running{cmd: exec.Command(binary, args...), stdout: &syncbuf.Buffer{}, stderr: &syncbuf.Buffer{}, done: make(chan struct{})}
	r.cmd.Stdout, r.cmd.Stderr = r.stdout, r.stderr
	r.cmd.Env = env
	r.start = time.Now()
	if err := r.cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	go func() {
		r.cmd.Wait()
		close(r.done)
	}()
	w.t.Cleanup(func() {
		select {
		case <-r.done:
		default:
			r.cmd.Process.Kill()
			<-r.done
		}
	})
	return r
}

// wait waits (at most 30 s) for the runner to end.
func (r *running) wait(t *testing.T) run {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(30 * time.Second):
		r.cmd.Process.Kill()
		t.Fatalf("the runner did not end in 30s; stdout %q stderr %q", r.stdout.String(), r.stderr.String())
	}
	out := run{exit: r.cmd.ProcessState.ExitCode(), stdout: r.stdout.String(), stderr: r.stderr.String(), took: time.Since(r.start)}
	// The mark follows what the runner says before the process starts (a task's warnings).
	if before, after, found := strings.Cut(out.stdout, runspec.StartMark); found {
		out.stdout, out.announced = before+after, true
	}
	if r.results != "" {
		data, _ := os.ReadFile(filepath.Join(r.results, "error"))
		out.failure = string(data)
	}
	return out
}

// run runs the runner on spec to its end.
func (w *world) run(spec runspec.Spec) run {
	w.t.Helper()
	return w.start(spec, nil).wait(w.t)
}

// write writes files (path → content; a trailing "#x" on a path makes it executable).
func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		mode := os.FileMode(0o644)
		if n, ok := strings.CutSuffix(name, "#x"); ok {
			name, mode = n, 0o755
		}
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
}

// artifact makes an artifact with files, registered under name in the root scope.
func (w *world) artifact(name string, files map[string]string) string {
	w.t.Helper()
	volPath := runspec.ArtifactPath("fixture", name)
	write(w.t, filepath.Join(w.volume, volPath), files)
	w.register(nil, name, volPath)
	return filepath.Join(w.volume, volPath)
}

func (w *world) register(scope []string, name, volPath string) {
	w.t.Helper()
	dir := filepath.Join(w.volume, runspec.StateDir, runspec.ScopesDir, runspec.Escape(innermost(scope)), "artifacts")
	write(w.t, dir, map[string]string{runspec.Escape(name): volPath})
}

func innermost(scope []string) string {
	if len(scope) == 0 {
		return ""
	}
	return scope[len(scope)-1]
}

// artifactDir is where a registered artifact is, or "".
func (w *world) artifactDir(scope []string, name string) string {
	w.t.Helper()
	for _, s := range append([]string{innermost(scope)}, "") {
		data, err := os.ReadFile(filepath.Join(w.volume, runspec.StateDir, runspec.ScopesDir, runspec.Escape(s), "artifacts", runspec.Escape(name)))
		if err == nil {
			return filepath.Join(w.volume, string(data))
		}
	}
	return ""
}

// outcome reads the outcome a step recorded in the state directory.
func (w *world) outcome(planID string) string {
	data, _ := os.ReadFile(filepath.Join(w.volume, runspec.StateDir, runspec.OutcomesDir, runspec.Escape(planID)))
	return strings.TrimSpace(string(data))
}

// script writes a resource script.
func (w *world) script(name, body string) {
	w.t.Helper()
	write(w.t, w.resources, map[string]string{name + "#x": "#!/bin/sh\n" + body})
}

// secret writes a mounted Secret: a directory of key files.
func (w *world) secret(dir string, keys map[string]string) {
	w.t.Helper()
	write(w.t, filepath.Join(w.creds, dir), keys)
}

// checkRun compares a run's exit code, outcome result and recorded outcome.
func (w *world) checkRun(r run, planID string, want runspec.Outcome) {
	w.t.Helper()
	if r.exit != want.ExitCode() || w.result(planID, "outcome") != string(want) || w.outcome(planID) != string(want) {
		w.t.Errorf("exit %d, result %q, recorded %q; want %s (exit %d)\nstdout:\n%s\nstderr:\n%s",
			r.exit, w.result(planID, "outcome"), w.outcome(planID), want, want.ExitCode(), r.stdout, r.stderr)
	}
}

// checkJoin is checkRun for a join: it exits 0 whatever the outcome it computed, which
// its result and the state carry.
func (w *world) checkJoin(r run, planID string, want runspec.Outcome) {
	w.t.Helper()
	if r.exit != 0 || w.result(planID, "outcome") != string(want) || w.outcome(planID) != string(want) {
		w.t.Errorf("exit %d, result %q, recorded %q; want %s (exit 0)\nstdout:\n%s\nstderr:\n%s",
			r.exit, w.result(planID, "outcome"), w.outcome(planID), want, r.stdout, r.stderr)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// waitFile polls (at most 10 s) for a file to exist.
func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear in 10s", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
