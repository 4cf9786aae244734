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
	sum := sha256.Sum256([]byte("unit"))
	wd := filepath.Join(w.tmpBuild, hex.EncodeToString(sum[:4]))
	if err := os.MkdirAll(filepath.Join(wd, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
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
