package runner_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/concourse-tekton/concourse-tekton/runspec"
)

func (w *world) recordOutcome(planID string, o runspec.Outcome) {
	w.t.Helper()
	write(w.t, filepath.Join(w.volume, runspec.StateDir, runspec.OutcomesDir), map[string]string{runspec.Escape(planID): string(o) + "\n"})
}

func TestJoinAndVerdict(t *testing.T) {
	leaf := func(id string) runspec.Node { return runspec.Node{ID: id, Kind: runspec.KindLeaf} }
	// ensure(on_failure(do[get, task], notify), cleanup)
	do := runspec.Node{ID: "d", Kind: runspec.KindDo, Steps: []runspec.Node{leaf("1/get"), leaf("2")}}
	onFailure := runspec.Node{ID: "f", Kind: runspec.KindOnFailure, Step: &do, Hook: &runspec.Node{ID: "n", Kind: runspec.KindLeaf}}
	root := runspec.Node{ID: "root", Kind: runspec.KindEnsure, Step: &onFailure, Hook: &runspec.Node{ID: "c", Kind: runspec.KindLeaf}}
	tests := []struct {
		name     string
		outcomes map[string]runspec.Outcome
		wantJoin runspec.Outcome
		want     runspec.Outcome
	}{
		{"succeeded", map[string]runspec.Outcome{"1/get": runspec.Succeeded, "2": runspec.Succeeded, "c": runspec.Succeeded}, runspec.Succeeded, runspec.Succeeded},
		{"failed, hook ran", map[string]runspec.Outcome{"1/get": runspec.Succeeded, "2": runspec.Failed, "n": runspec.Succeeded, "c": runspec.Succeeded}, runspec.Failed, runspec.Failed},
		{"a pod that died with no outcome", map[string]runspec.Outcome{"1/get": runspec.Succeeded, "c": runspec.Succeeded}, runspec.Errored, runspec.Errored},
		{"aborted", map[string]runspec.Outcome{"1/get": runspec.Aborted, "c": runspec.Succeeded}, runspec.Aborted, runspec.Aborted},
		{"the ensure hook fails a success", map[string]runspec.Outcome{"1/get": runspec.Succeeded, "2": runspec.Succeeded, "c": runspec.Failed}, runspec.Succeeded, runspec.Failed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			for id, o := range tt.outcomes {
				w.recordOutcome(id, o)
			}
			join := w.spec(runspec.ModeJoin, "f", "")
			join.Join = &runspec.Join{Tree: onFailure}
			w.checkJoin(w.run(join), "f", tt.wantJoin)
			verdict := w.spec(runspec.ModeVerdict, "verdict", "")
			verdict.Verdict = &runspec.Verdict{Tree: root}
			// A one-off build's verdict keeps the state it recorded; a job build's
			// cleans the volume (cleanup_test.go).
			verdict.Build.JobName = ""
			r := w.run(verdict)
			w.checkRun(r, "verdict", tt.want)
			if !strings.Contains(r.stderr, "build "+string(tt.want)) {
				t.Errorf("stderr = %q", r.stderr)
			}
		})
	}
}

func TestJoinRunsAfterAbort(t *testing.T) {
	w := newWorld(t)
	w.startArgs(abortArgs(w), nil).wait(t)
	w.recordOutcome("1", runspec.Succeeded)
	join := w.spec(runspec.ModeJoin, "j", "")
	join.Join = &runspec.Join{Tree: runspec.Node{ID: "1", Kind: runspec.KindLeaf}}
	w.checkJoin(w.run(join), "j", runspec.Succeeded)
}

func TestInstall(t *testing.T) {
	w := newWorld(t)
	dest := filepath.Join(w.root, "shared", "bin", "concourse-runner")
	if r := w.startArgs([]string{"install", dest}, nil).wait(t); r.exit != 0 {
		t.Fatalf("install: %+v", r)
	}
	info, err := os.Stat(dest)
	if err != nil {
		t.Fatal(err)
	}
	orig, _ := os.Stat(binary)
	if info.Size() != orig.Size() || info.Mode().Perm() != 0o755 {
		t.Errorf("installed %v %v, want the runner's size %d, mode 0755", info.Size(), info.Mode(), orig.Size())
	}
}

// TestModeOnCommandLine: the step Task's command line says `step` and the spec the mode
// (every other test runs so); the mode may also be said, when it is the spec's.
func TestModeOnCommandLine(t *testing.T) {
	w := newWorld(t)
	spec := w.taskSpec("1", "t", shConfig("echo ran", nil))
	args := w.args(spec)
	if args[0] != string(runspec.ModeStep) {
		t.Fatalf("the spec's command line is %q, want it to say %s", args, runspec.ModeStep)
	}
	args[0] = string(runspec.ModeTask)
	running := w.startArgs(args, nil)
	running.results = spec.Paths.Results
	w.checkRun(running.wait(t), "1", runspec.Succeeded)
}

func TestBadCommandLines(t *testing.T) {
	w := newWorld(t)
	task := w.taskSpec("1", "t", shConfig("true", nil))
	enc, err := task.Encode()
	if err != nil {
		t.Fatal(err)
	}
	results := mustJSON(t, w.resultsDir("1"))
	tests := []struct {
		name string
		args []string
		exit int
		want string
	}{
		{"no mode", nil, 2, "usage"},
		{"not JSON", []string{"task", "--spec={"}, 2, "decoding runner spec"},
		{"mode mismatch", []string{"get", "--spec=" + enc}, 2, "the command line says get but the spec says task"},
		{"step of no step", []string{"step", `--spec={"mode":"abort","plan_id":"1"}`}, 2, `unknown mode "abort"`},
		{"unknown flag", []string{"task", "--nope"}, 2, "flag provided but not defined"},
		{"extra args", []string{"task", "--spec=" + enc, "more"}, 2, "unexpected arguments"},
		{"install without a destination", []string{"install"}, 2, "usage"},
		{"wrong payload", []string{"get", `--spec={"mode":"get","plan_id":"1","task":{}}`}, 2, `needs a "get" payload`},
		{"null config", []string{"task", `--spec={"mode":"task","plan_id":"1","task":{"config":null},"paths":{"results":` + results + `}}`}, 2, "neither a config nor a file"},
		{"config not a map", []string{"task", `--spec={"mode":"task","plan_id":"1","task":{"config":[1]},"paths":{"results":` + results + `}}`}, 2, "must be a map"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.args
			if len(args) > 0 && strings.HasPrefix(args[0], "task") || len(args) > 0 && args[0] == "get" {
				args = append(args, "--x-tmp-build="+w.tmpBuild, "--x-rootfs="+w.rootfs)
			}
			running := w.startArgs(args, nil)
			running.results = w.resultsDir("1")
			r := running.wait(t)
			if r.exit != tt.exit || !strings.Contains(r.said(), tt.want) {
				t.Errorf("exit %d said %q; want exit %d and %q", r.exit, r.said(), tt.exit, tt.want)
			}
		})
	}
}

func TestMalformedStateFiles(t *testing.T) {
	w := newWorld(t)
	write(t, filepath.Join(w.volume, runspec.StateDir), map[string]string{
		"deadlines/1":             "yesterday",
		"scopes/%/vars/v":         "{",
		"scopes/%/artifacts/repo": "../../../../etc",
		"outcomes/x":              "maybe",
	})
	timeout := w.taskSpec("1", "t", shConfig("true", nil))
	timeout.Context = []runspec.Layer{{Kind: runspec.LayerTimeout, ID: "1", Duration: "1m"}}
	w.checkRun(w.run(timeout), "1", runspec.Errored)

	badVar := w.taskSpec("2", "t", shConfig("echo ((.:v))", nil))
	w.checkRun(w.run(badVar), "2", runspec.Errored)

	join := w.spec(runspec.ModeJoin, "j", "")
	join.Join = &runspec.Join{Tree: runspec.Node{ID: "x", Kind: runspec.KindLeaf}}
	w.checkJoin(w.run(join), "j", runspec.Errored)
}

// TestRunStep: a prototype's run step does what Concourse 7's does (exec.RunStep): says
// it is not implemented, pretends, and succeeds.
func TestRunStep(t *testing.T) {
	w := newWorld(t)
	spec := w.spec(runspec.ModeRun, "1", "some-message")
	spec.Run = &runspec.Run{Message: "some-message", Type: "some-prototype"}
	r := w.run(spec)
	w.checkRun(r, "1", runspec.Succeeded)
	want := "\x1b[1;33mthe run step is not yet implemented\x1b[0m\n\n\x1b[1;34mpretending to run some-message on prototype some-prototype...\x1b[0m\n"
	if r.stderr != want || r.stdout != "" {
		t.Errorf("stderr %q, stdout %q; want %q", r.stderr, r.stdout, want)
	}
}
