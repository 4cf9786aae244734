package runner_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/concourse-tekton/concourse-tekton/runner/state"
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// sleeper is a task that says it started (a file), then sleeps; on SIGTERM it says so.
func (w *world) sleeper(planID string, seconds string, layers ...runspec.Layer) runspec.Spec {
	started := filepath.Join(w.root, "started-"+runspec.Escape(planID))
	spec := w.taskSpec(planID, "t-"+planID, shConfig(`trap 'echo got TERM; exit 143' TERM; touch `+started+`; echo running; i=0; while [ $i -lt `+seconds+`0 ]; do sleep 0.1; i=$((i+1)); done; echo done`, nil))
	spec.Context = layers
	return spec
}

func (w *world) startedFile(planID string) string {
	return filepath.Join(w.root, "started-"+runspec.Escape(planID))
}

func TestTimeoutIsAFailure(t *testing.T) {
	w := newWorld(t)
	spec := w.sleeper("1", "30", runspec.Layer{Kind: runspec.LayerTimeout, ID: "1", Duration: "500ms"})
	r := w.run(spec)
	w.checkRun(r, "1", runspec.Failed)
	if !strings.Contains(r.stdout, "got TERM") || r.failure != "timeout exceeded" {
		t.Errorf("stdout %q error %q", r.stdout, r.failure)
	}
	if r.took > 5*time.Second {
		t.Errorf("took %v", r.took)
	}
}

func TestTimeoutSpansInvocations(t *testing.T) {
	w := newWorld(t)
	layer := runspec.Layer{Kind: runspec.LayerTimeout, ID: "outer", Duration: "2s"}
	first := w.taskSpec("1", "a", shConfig("sleep 1.2", nil))
	first.Context = []runspec.Layer{layer}
	w.checkRun(w.run(first), "1", runspec.Succeeded)

	start := time.Now()
	r := w.run(w.sleeper("2", "30", layer))
	w.checkRun(r, "2", runspec.Failed)
	if took := time.Since(start); took > 1800*time.Millisecond {
		t.Errorf("the second step ran %v: the deadline did not carry over", took)
	}
	if r.failure != "timeout exceeded" {
		t.Errorf("error = %q", r.failure)
	}

	r = w.run(w.sleeper("3", "30", layer))
	w.checkRun(r, "3", runspec.Failed)
	if _, err := os.Stat(w.startedFile("3")); err == nil {
		t.Error("a step under an expired deadline ran")
	}
}

func TestBadTimeoutErrors(t *testing.T) {
	w := newWorld(t)
	r := w.run(w.sleeper("1", "1", runspec.Layer{Kind: runspec.LayerTimeout, ID: "1", Duration: "((t))"}))
	w.checkRun(r, "1", runspec.Errored)
}

func abortArgs(w *world) []string {
	return []string{"abort", "--volume=" + w.volume}
}

func TestAbortWhileRunning(t *testing.T) {
	for _, tt := range []struct {
		name     string
		script   string
		wantTERM bool
	}{
		{"process exits on SIGTERM", "", true},
		{"process ignores SIGTERM and is killed", `trap '' TERM; touch STARTED; while :; do sleep 0.1; done`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			spec := w.sleeper("1", "30")
			if tt.script != "" {
				spec.Task.Config = shConfig(strings.ReplaceAll(tt.script, "STARTED", w.startedFile("1")), nil)
			}
			r := w.start(spec, nil)
			waitFile(t, w.startedFile("1"))
			if a := w.startArgs(abortArgs(w), nil).wait(t); a.exit != 0 {
				t.Fatalf("abort: %+v", a)
			}
			got := r.wait(t)
			w.checkRun(got, "1", runspec.Aborted)
			if strings.Contains(got.stdout, "got TERM") != tt.wantTERM || got.failure != "interrupted" {
				t.Errorf("stdout %q error %q", got.stdout, got.failure)
			}
			if got.took > 10*time.Second {
				t.Errorf("took %v", got.took)
			}
		})
	}
}

func TestAfterAbort(t *testing.T) {
	w := newWorld(t)
	w.startArgs(abortArgs(w), nil).wait(t)
	r := w.run(w.sleeper("1", "1"))
	w.checkRun(r, "1", runspec.Aborted)
	if _, err := os.Stat(w.startedFile("1")); err == nil {
		t.Error("a step ran after the abort")
	}
	// An ensure hook's step that starts after the abort runs detached, as in Concourse.
	hook := w.sleeper("2", "0", runspec.Layer{Kind: runspec.LayerDetach, ID: "h"})
	w.checkRun(w.run(hook), "2", runspec.Succeeded)
	// A later step of the same hook too, and a hook under a timeout that expired.
	late := w.sleeper("3", "0", runspec.Layer{Kind: runspec.LayerTimeout, ID: "x", Duration: "1ns"}, runspec.Layer{Kind: runspec.LayerDetach, ID: "h"})
	w.checkRun(w.run(late), "3", runspec.Succeeded)
}

func TestHookThatStartedAttachedIsAborted(t *testing.T) {
	w := newWorld(t)
	hook := runspec.Layer{Kind: runspec.LayerDetach, ID: "h"}
	w.checkRun(w.run(w.sleeper("1", "0", hook)), "1", runspec.Succeeded)
	w.startArgs(abortArgs(w), nil).wait(t)
	w.checkRun(w.run(w.sleeper("2", "0", hook)), "2", runspec.Aborted)
}

// TestSignalErrors: a runner signalled while its build is not aborted had its pod stopped
// by someone else (deleted, evicted): the step errors, saying so, as a step whose container
// goes from under it does in Concourse. Signalled once the build is aborted, it is
// interrupted.
func TestSignalErrors(t *testing.T) {
	for _, tt := range []struct {
		name    string
		aborted bool
		want    runspec.Outcome
		failure string
	}{
		{"pod stopped", false, runspec.Errored, "the step's pod was stopped before the step ended"},
		{"pod stopped after the build was aborted", true, runspec.Aborted, "interrupted"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			// The step does not watch for the abort marker (no layer asks it to), so the
			// signal alone ends it.
			spec := w.sleeper("1", "30")
			r := w.start(spec, nil)
			waitFile(t, w.startedFile("1"))
			if tt.aborted {
				if err := state.New(w.volume).Abort(time.Now()); err != nil {
					t.Fatal(err)
				}
			}
			if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			got := r.wait(t)
			w.checkRun(got, "1", tt.want)
			if !strings.Contains(got.stdout, "got TERM") || !strings.HasPrefix(got.failure, tt.failure) {
				t.Errorf("stdout %q error %q, want the process signalled and an error %q...", got.stdout, got.failure, tt.failure)
			}
		})
	}
}

func TestFailFast(t *testing.T) {
	w := newWorld(t)
	group := "p"
	layer := func(child string) runspec.Layer {
		return runspec.Layer{Kind: runspec.LayerFailFast, ID: group, Child: &runspec.Node{ID: child, Kind: runspec.KindLeaf}}
	}
	long := w.start(w.sleeper("a", "30", layer("a")), nil)
	waitFile(t, w.startedFile("a"))

	failing := w.taskSpec("b", "b", shConfig("exit 1", nil))
	failing.Context = []runspec.Layer{layer("b")}
	w.checkRun(w.run(failing), "b", runspec.Failed)

	got := long.wait(t)
	w.checkRun(got, "a", runspec.Aborted)
	if !strings.Contains(got.stdout, "got TERM") || got.failure != "interrupted" {
		t.Errorf("stdout %q error %q", got.stdout, got.failure)
	}
	late := w.run(w.sleeper("c", "0", layer("c")))
	w.checkRun(late, "c", runspec.NeverRan)
	if _, err := os.Stat(w.startedFile("c")); err == nil {
		t.Error("a step that had not started when its group fired ran")
	}
	if !got.announced || late.announced || late.stdout != "" {
		t.Errorf("announced its start: the started step %v, the step that never ran %v (stdout %q)", got.announced, late.announced, late.stdout)
	}
}

// TestStartAnnounced: a step that may end without having started (one of a fail-fast
// group, a task) writes runspec.StartMark when it starts, before any output of its own;
// one that cannot does not, nor one that never started.
func TestStartAnnounced(t *testing.T) {
	w := newWorld(t)
	w.recordingScript("in", `echo '{"version":{"ref":"abc"}}'`)
	layer := func(child string) runspec.Layer {
		return runspec.Layer{Kind: runspec.LayerFailFast, ID: "p", Child: &runspec.Node{ID: child, Kind: runspec.KindLeaf}}
	}
	get := func(planID string, layers ...runspec.Layer) runspec.Spec {
		spec := w.spec(runspec.ModeGet, planID, "repo-"+planID)
		// Versions of their own: no step finds another's cache.
		spec.Get = &runspec.Get{Type: "git", Version: map[string]string{"ref": planID}}
		spec.Context = layers
		return spec
	}
	alone := w.run(get("a"))
	w.checkRun(alone, "a", runspec.Succeeded)
	member := w.run(get("b", layer("b")))
	w.checkRun(member, "b", runspec.Succeeded)
	if alone.announced || !member.announced || member.stdout != "" || member.stderr != "in is working\n" {
		t.Errorf("announced: alone %v, in a fail-fast group %v (stdout %q, stderr %q)", alone.announced, member.announced, member.stdout, member.stderr)
	}
	failing := w.taskSpec("c", "c", shConfig("exit 1", nil))
	failing.Context = []runspec.Layer{layer("c")}
	if r := w.run(failing); !r.announced {
		t.Error("a task that ran did not announce its start")
	}
	late := w.run(get("d", layer("d")))
	w.checkRun(late, "d", runspec.NeverRan)
	if late.announced || late.stdout != "" {
		t.Errorf("a step that never ran announced its start (stdout %q)", late.stdout)
	}
}

func TestFailFastWaitsForTheChildsHooks(t *testing.T) {
	w := newWorld(t)
	// The child is on_failure(b, n): it fails only once its hook has run.
	child := &runspec.Node{ID: "h", Kind: runspec.KindOnFailure, Step: &runspec.Node{ID: "b", Kind: runspec.KindLeaf}, Hook: &runspec.Node{ID: "n", Kind: runspec.KindLeaf}}
	layer := runspec.Layer{Kind: runspec.LayerFailFast, ID: "p", Child: child}
	failing := w.taskSpec("b", "b", shConfig("exit 1", nil))
	failing.Context = []runspec.Layer{layer}
	w.checkRun(w.run(failing), "b", runspec.Failed)
	if _, err := os.Stat(filepath.Join(w.volume, "state", "failfast", "p")); err == nil {
		t.Fatal("the group fired before the child's on_failure hook ran")
	}
	hook := w.taskSpec("n", "n", shConfig("true", nil))
	hook.Context = []runspec.Layer{layer}
	w.checkRun(w.run(hook), "n", runspec.Succeeded)
	if _, err := os.Stat(filepath.Join(w.volume, "state", "failfast", "p")); err != nil {
		t.Error("the group did not fire once the child ended failed")
	}
}

func TestTryDoesNotFireFailFast(t *testing.T) {
	w := newWorld(t)
	child := &runspec.Node{ID: "t", Kind: runspec.KindTry, Step: &runspec.Node{ID: "b", Kind: runspec.KindLeaf}}
	failing := w.taskSpec("b", "b", shConfig("exit 1", nil))
	failing.Context = []runspec.Layer{{Kind: runspec.LayerFailFast, ID: "p", Child: child}}
	w.checkRun(w.run(failing), "b", runspec.Failed)
	if _, err := os.Stat(filepath.Join(w.volume, "state", "failfast", "p")); err == nil {
		t.Error("a failure inside try fired the group")
	}
}

func TestOnErrorAndOnAbortHooksAreNeverAborted(t *testing.T) {
	w := newWorld(t)
	hook := runspec.Layer{Kind: runspec.LayerDetach, ID: "h", Always: true}
	r := w.start(w.sleeper("1", "1", hook), nil)
	waitFile(t, w.startedFile("1"))
	w.startArgs(abortArgs(w), nil).wait(t)
	got := r.wait(t)
	w.checkRun(got, "1", runspec.Succeeded)
	if !strings.Contains(got.stdout, "done") {
		t.Errorf("stdout %q", got.stdout)
	}
}

// TestInterruptedTaskKeepsOutputsAndCaches: Concourse registers a task's outputs and
// caches once its process is done, also when a timeout or an abort stopped it
// (atc/exec/task_step.go), so a hook can read what the task wrote until then.
func TestInterruptedTaskKeepsOutputsAndCaches(t *testing.T) {
	for _, tt := range []struct {
		name        string
		layers      []runspec.Layer
		abort       bool
		want        runspec.Outcome
		wantFailure string
	}{
		{name: "timeout", layers: []runspec.Layer{{Kind: runspec.LayerTimeout, ID: "1", Duration: "1s"}}, want: runspec.Failed, wantFailure: "timeout exceeded"},
		{name: "abort", abort: true, want: runspec.Aborted, wantFailure: "interrupted"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			spec := w.taskSpec("1", "t", shConfig(`echo partial > out/f; echo cached > cache/c; touch `+w.startedFile("1")+`; sleep 30`, map[string]any{
				"outputs": []any{map[string]any{"name": "out"}},
				"caches":  []any{map[string]any{"path": "cache"}},
			}))
			spec.Task.OutputMapping = map[string]string{"out": "partial"}
			spec.Context = tt.layers
			r := w.start(spec, nil)
			if tt.abort {
				waitFile(t, w.startedFile("1"))
				w.startArgs(abortArgs(w), nil).wait(t)
			}
			got := r.wait(t)
			w.checkRun(got, "1", tt.want)
			if got.failure != tt.wantFailure {
				t.Errorf("error = %q, want %q", got.failure, tt.wantFailure)
			}
			dir := w.artifactDir(nil, "partial")
			if dir == "" {
				t.Fatal("the output was not registered")
			}
			if data, _ := os.ReadFile(filepath.Join(dir, "f")); string(data) != "partial\n" {
				t.Errorf("output file = %q, want %q", data, "partial\n")
			}
			if data, _ := os.ReadFile(filepath.Join(w.volume, runspec.CachePath("t", "cache"), "c")); string(data) != "cached\n" {
				t.Errorf("saved cache file = %q, want %q", data, "cached\n")
			}
			if s := w.result("1", "exit-status"); s != "" {
				t.Errorf("exit-status = %q, want none: the process did not exit by itself", s)
			}
		})
	}
}
