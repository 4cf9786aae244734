package runner_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"crypto/sha256"
	"encoding/hex"

	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// TestIntercept runs a command in a task's session, as intercept does in its container:
// the task's working directory (run.dir within it), its params with the build's vars
// resolved, and nothing written to the build's state.
func TestIntercept(t *testing.T) {
	w := newWorld(t)
	write(t, w.creds, map[string]string{"greeting/value": "hello from a secret"})
	spec := w.taskSpec("4", "unit", shConfig("exit 1", map[string]any{
		"params": map[string]any{"GREETING": "((greeting))", "PLAIN": "p"},
		"run":    map[string]any{"path": "/bin/sh", "dir": "src"},
	}))
	wd := workDirOf(w, "unit")
	if err := os.MkdirAll(filepath.Join(wd, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	markStarted(t, wd)
	args := append(w.args(spec), "--", "sh", "-c", `pwd; echo "$GREETING/$PLAIN"`)
	args[0] = string(runspec.ModeIntercept)
	r := w.startArgs(args, []string{"PATH=/usr/bin:/bin"}).wait(t)
	if r.exit != 0 {
		t.Fatalf("exit %d, stderr %q", r.exit, r.stderr)
	}
	want := filepath.Join(wd, "src") + "\nhello from a secret/p\n"
	if r.stdout != want {
		t.Errorf("stdout = %q, want %q", r.stdout, want)
	}
	if entries, _ := os.ReadDir(filepath.Join(w.volume, runspec.StateDir)); len(entries) != 0 {
		t.Errorf("intercept wrote to the build's state: %v", entries)
	}
}

// workDirOf is the working directory of the task named name in w.
func workDirOf(w *world, name string) string {
	sum := sha256.Sum256([]byte(name))
	return filepath.Join(w.tmpBuild, hex.EncodeToString(sum[:4]))
}

// markStarted says, as a task's runner does, that the process of the task whose working
// directory is wd has started: a session of the running step waits for it.
func markStarted(t *testing.T, wd string) {
	t.Helper()
	write(t, filepath.Dir(wd), map[string]string{"." + filepath.Base(wd) + ".started": ""})
}

// TestInterceptWaitsForTheProcess starts a session of a running task where its process
// runs, with its inputs staged, however early it comes: its container runs while the
// runner still stages them. A session that does not wait finds no working directory.
func TestInterceptWaitsForTheProcess(t *testing.T) {
	w := newWorld(t)
	w.artifact("repo", map[string]string{"f": "staged"})
	stop := filepath.Join(t.TempDir(), "stop")
	spec := w.taskSpec("4", "running", shConfig("while [ ! -e "+stop+" ]; do sleep 0.05; done", map[string]any{
		"inputs": []any{map[string]any{"name": "repo"}},
		"run":    map[string]any{"path": "/bin/sh", "args": []any{"-c", "while [ ! -e " + stop + " ]; do sleep 0.05; done"}, "dir": "repo"},
	}))
	checkEarlySession(t, w, spec, "pwd; cat f", stop, filepath.Join(workDirOf(w, "running"), "repo")+"\nstaged")
}

// checkEarlySession starts a session running sh -c cmd in the step of spec before the
// step's runner, so that it must wait for the step's process, then lets the step end
// (it waits for the file stop), and wants the session to have printed want, and both to
// exit 0.
func checkEarlySession(t *testing.T, w *world, spec runspec.Spec, cmd, stop, want string) {
	t.Helper()
	args := append(w.args(spec), "--", "sh", "-c", cmd)
	args[0] = string(runspec.ModeIntercept)
	session := w.startArgs(args, []string{"PATH=/usr/bin:/bin"})
	step := w.start(spec, []string{"PATH=/usr/bin:/bin"})
	r := session.wait(t)
	write(t, filepath.Dir(stop), map[string]string{filepath.Base(stop): ""})
	if r.exit != 0 || r.stdout != want {
		t.Errorf("session: exit %d, stdout %q, want %q (stderr %q)", r.exit, r.stdout, want, r.stderr)
	}
	if r := step.wait(t); r.exit != 0 {
		t.Errorf("%s: exit %d (stderr %q)", spec.Mode, r.exit, r.stderr)
	}
}

// TestInterceptWaitsForTheResourceScript: a session of a running put that comes before
// the step's runner waits until the put's directory holds its inputs, and starts there.
func TestInterceptWaitsForTheResourceScript(t *testing.T) {
	w := newWorld(t)
	w.artifact("repo", map[string]string{"f": "staged"})
	stop := filepath.Join(t.TempDir(), "stop")
	w.script("out", "while [ ! -e "+stop+" ]; do sleep 0.05; done\necho '{\"version\":{\"v\":\"1\"}}'\n")
	put := w.spec(runspec.ModePut, "p", "out")
	put.Put = &runspec.Put{Type: "mock", Inputs: runspec.InputsList, InputNames: []string{"repo"}}
	checkEarlySession(t, w, put, "pwd; cat repo/f", stop, filepath.Join(w.tmpBuild, "put")+"\nstaged")
}

// TestInterceptFallsBack starts the shell where it can when the step's config cannot be
// worked out (its file is gone with the volume), saying why.
func TestInterceptFallsBack(t *testing.T) {
	w := newWorld(t)
	spec := w.spec(runspec.ModeTask, "4", "unit")
	spec.Task = &runspec.Task{File: "gone/task.yml"}
	args := append(w.args(spec), "--", "pwd")
	args[0] = string(runspec.ModeIntercept)
	r := w.startArgs(args, []string{"PATH=/usr/bin:/bin"}).wait(t)
	if r.exit != 0 || strings.TrimSpace(r.stdout) != w.tmpBuild || !strings.Contains(r.stderr, "note: ") {
		t.Errorf("exit %d, stdout %q, stderr %q; want pwd in %s and a note", r.exit, r.stdout, r.stderr, w.tmpBuild)
	}
}

// TestInterceptStages makes the working directory of a task that has ended again: its
// input and the output it registered, as private copies.
func TestInterceptStages(t *testing.T) {
	w := newWorld(t)
	w.artifact("src", map[string]string{"in.txt": "input"})
	out := w.artifact("built", map[string]string{"out.txt": "output"})
	spec := w.taskSpec("4", "unit", shConfig("exit 1", map[string]any{
		"inputs":  []any{map[string]any{"name": "src"}},
		"outputs": []any{map[string]any{"name": "out"}, map[string]any{"name": "never"}},
	}))
	spec.Task.OutputMapping = map[string]string{"out": "built"}
	args := append(w.args(spec), "--stage", "--", "sh", "-c", "cat src/in.txt out/out.txt; ls never && echo > out/out.txt")
	args[0] = string(runspec.ModeIntercept)
	r := w.startArgs(args, []string{"PATH=/usr/bin:/bin"}).wait(t)
	if r.exit != 0 || r.stdout != "inputoutput" {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.exit, r.stdout, r.stderr)
	}
	if got, _ := os.ReadFile(filepath.Join(out, "out.txt")); string(got) != "output" {
		t.Errorf("the session wrote through to the build's artifact: %q", got)
	}
}

// TestInterceptStagesPreserved: a session in an ended step of a job build that failed
// finds the volume as the step left it, although the build's verdict moved it under
// preserved/; a session of another build (the next, on a clone) does not take it for
// its own.
func TestInterceptStagesPreserved(t *testing.T) {
	w := newWorld(t)
	w.artifact("src", map[string]string{"in.txt": "input"})
	spec := w.taskSpec("4", "unit", shConfig("exit 1", map[string]any{"inputs": []any{map[string]any{"name": "src"}}}))
	w.recordOutcome("4", runspec.Failed)
	verdict := w.spec(runspec.ModeVerdict, "verdict", "")
	verdict.Verdict = &runspec.Verdict{Tree: runspec.Node{ID: "4", Kind: runspec.KindLeaf}}
	if r := w.run(verdict); r.exit != 1 || r.failure != "" {
		t.Fatalf("verdict: exit %d, error %q; want the build failed", r.exit, r.failure)
	}
	if _, err := os.Stat(filepath.Join(w.volume, runspec.PreservedDir)); err != nil {
		t.Fatalf("the verdict preserved nothing: %v", err)
	}
	session := func(build string) run {
		spec.Build.Name = build
		args := append(w.args(spec), "--stage", "--", "sh", "-c", "cat src/in.txt")
		args[0] = string(runspec.ModeIntercept)
		return w.startArgs(args, []string{"PATH=/usr/bin:/bin"}).wait(t)
	}
	if r := session(spec.Build.Name); r.exit != 0 || r.stdout != "input" {
		t.Errorf("build 7: exit %d, stdout %q, stderr %q; want its input", r.exit, r.stdout, r.stderr)
	}
	if r := session("8"); r.exit == 0 || r.stdout != "" {
		t.Errorf("build 8: exit %d, stdout %q; want no input of build 7's", r.exit, r.stdout)
	}
}

// TestInterceptLookup says whether a command is there to run without running it, as
// fly intercept needs to know before it falls back from bash to sh.
func TestInterceptLookup(t *testing.T) {
	w := newWorld(t)
	spec := w.taskSpec("4", "unit", shConfig("exit 1", nil))
	for _, tc := range []struct {
		command string
		exit    int
	}{{"sh", 0}, {"no-such-shell", 127}, {"/bin/sh", 0}, {"/no/such/shell", 127}, {"/bin", 127}} {
		args := append(w.args(spec), "--lookup", "--", tc.command, "-c", "touch ran")
		args[0] = string(runspec.ModeIntercept)
		r := w.startArgs(args, []string{"PATH=/usr/bin:/bin"}).wait(t)
		if r.exit != tc.exit {
			t.Errorf("%s: exit %d, want %d (stdout %q, stderr %q)", tc.command, r.exit, tc.exit, r.stdout, r.stderr)
		}
		if tc.exit != 0 && !strings.Contains(r.stdout, strings.TrimPrefix(tc.command, "/no/such/")) {
			t.Errorf("%s: stdout %q does not name it", tc.command, r.stdout)
		}
		if _, err := os.Stat(filepath.Join(w.tmpBuild, "ran")); err == nil {
			t.Fatalf("%s: the lookup ran the command", tc.command)
		}
	}
}

// TestInterceptEnvAndDir runs the command where it is asked to, with the variables it
// is given over the session's own.
func TestInterceptEnvAndDir(t *testing.T) {
	w := newWorld(t)
	spec := w.taskSpec("4", "unit", shConfig("exit 1", nil))
	markStarted(t, workDirOf(w, "unit"))
	dir := t.TempDir()
	args := append(w.args(spec), "--env=TERM=dumb", "--env=PATH=/bin:/usr/bin", "--dir="+dir, "--", "sh", "-c", `pwd; echo "$TERM $PATH"`)
	args[0] = string(runspec.ModeIntercept)
	r := w.startArgs(args, []string{"PATH=/usr/bin:/bin", "TERM=xterm"}).wait(t)
	if want := dir + "\ndumb /bin:/usr/bin\n"; r.exit != 0 || r.stdout != want {
		t.Errorf("exit %d, stdout %q, want %q (stderr %q)", r.exit, r.stdout, want, r.stderr)
	}
	args = append(w.args(spec), "--env=TERM", "--", "true")
	args[0] = string(runspec.ModeIntercept)
	if r := w.startArgs(args, nil).wait(t); r.exit != 2 {
		t.Errorf("--env=TERM: exit %d, want 2 (usage)", r.exit)
	}
}

// TestInterceptStagesResourceDirs makes a put's directory again with its inputs only, and
// a get's with what it fetched, as Concourse's containers had them.
func TestInterceptStagesResourceDirs(t *testing.T) {
	w := newWorld(t)
	w.artifact("specified", map[string]string{"f": "s"})
	w.artifact("other", map[string]string{"f": "o"})
	w.artifact("repo", map[string]string{"fetched": "v1"})
	put := w.spec(runspec.ModePut, "p", "out")
	put.Put = &runspec.Put{Type: "mock", Inputs: runspec.InputsList, InputNames: []string{"specified"}}
	get := w.spec(runspec.ModeGet, "g", "repo")
	get.Get = &runspec.Get{Type: "mock"}
	for _, tc := range []struct {
		spec runspec.Spec
		want string
	}{{put, filepath.Join(w.tmpBuild, "put") + "\nspecified\n"}, {get, filepath.Join(w.tmpBuild, "get") + "\nfetched\n"}} {
		args := append(w.args(tc.spec), "--stage", "--", "sh", "-c", "pwd; ls")
		args[0] = string(runspec.ModeIntercept)
		r := w.startArgs(args, []string{"PATH=/usr/bin:/bin"}).wait(t)
		if r.exit != 0 || r.stdout != tc.want {
			t.Errorf("%s: exit %d, stdout %q, want %q (stderr %q)", tc.spec.Mode, r.exit, r.stdout, tc.want, r.stderr)
		}
	}
}

// TestInterceptRestoresContainerFiles: a task and a get that failed as root, and a task
// that timed out, kept what they changed in their container's file system outside their
// working directories; a session in the pod made again (where those files are gone)
// finds them. A step that succeeded kept nothing.
func TestInterceptRestoresContainerFiles(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a step's container files are kept when it runs as root")
	}
	w := newWorld(t)
	leftAt := filepath.Join(w.rootfs, "tmp", "left")
	task := w.taskSpec("6", "broken", shConfig("mkdir -p "+filepath.Dir(leftAt)+" && echo by the task > "+leftAt+" && exit 1", nil))
	w.script("in", "mkdir -p "+filepath.Dir(leftAt)+" && echo by the get > "+leftAt+".get\nexit 1\n")
	get := w.spec(runspec.ModeGet, "7", "repo")
	get.Get = &runspec.Get{Type: "mock", Version: map[string]string{"v": "1"}}
	fine := w.taskSpec("8", "fine", shConfig("echo fine > "+leftAt+".fine", nil))
	hung := w.taskSpec("9", "hung", shConfig("mkdir -p "+filepath.Dir(leftAt)+" && echo before the timeout > "+leftAt+".hung && sleep 30", nil))
	hung.Context = []runspec.Layer{{Kind: runspec.LayerTimeout, ID: "9", Duration: "500ms"}}
	for _, step := range []struct {
		spec runspec.Spec
		exit int
	}{{task, 1}, {get, 1}, {fine, 0}, {hung, 1}} {
		if r := w.run(step.spec); r.exit != step.exit {
			t.Fatalf("step %s: exit %d, want %d (stderr %q)", step.spec.PlanID, r.exit, step.exit, r.stderr)
		}
	}
	if err := os.RemoveAll(filepath.Join(w.rootfs, "tmp")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		spec runspec.Spec
		file string
		want string
	}{{task, leftAt, "by the task\n"}, {get, leftAt + ".get", "by the get\n"}, {fine, leftAt + ".fine", ""}, {hung, leftAt + ".hung", "before the timeout\n"}} {
		args := append(w.args(tc.spec), "--stage", "--", "sh", "-c", "cat "+tc.file+" 2>/dev/null; true")
		args[0] = string(runspec.ModeIntercept)
		r := w.startArgs(args, []string{"PATH=/usr/bin:/bin"}).wait(t)
		if r.exit != 0 || r.stdout != tc.want {
			t.Errorf("step %s: exit %d, stdout %q, want %q (stderr %q)", tc.spec.PlanID, r.exit, r.stdout, tc.want, r.stderr)
		}
		if err := os.RemoveAll(filepath.Join(w.rootfs, "tmp")); err != nil {
			t.Fatal(err)
		}
	}
}
