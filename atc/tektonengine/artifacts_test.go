package tektonengine

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/concourse/concourse/atc"
	"github.com/concourse/concourse/atc/db"
	"github.com/concourse/concourse/atc/db/dbfakes"
	atcevent "github.com/concourse/concourse/atc/event"

	"github.com/concourse-tekton/concourse-tekton/concourse/event"
	"github.com/concourse-tekton/concourse-tekton/translate"
)

// fakeArtifacts keeps artifacts in memory.
type fakeArtifacts struct {
	inputs  map[int]string
	saveErr error

	mu    sync.Mutex
	saved []savedArtifact
}

type savedArtifact struct {
	build        int
	worker, name string
	content      string
}

func (f *fakeArtifacts) Open(_ context.Context, build db.Build, id int) (io.ReadCloser, error) {
	content, ok := f.inputs[id]
	if !ok {
		return nil, ArtifactVolumeNotFoundError{Artifact: "unknown"}
	}
	return io.NopCloser(strings.NewReader(content)), nil
}

func (f *fakeArtifacts) Save(_ context.Context, build db.Build, worker, name string, tar io.Reader) error {
	content, err := io.ReadAll(tar)
	if err != nil {
		return err
	}
	if f.saveErr != nil {
		return f.saveErr
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.saved = append(f.saved, savedArtifact{build: build.ID(), worker: worker, name: name, content: string(content)})
	return nil
}

// executePlan is fly execute's plan: the uploaded inputs, the task, and, whatever the
// task did, its outputs (-o), here one the task makes and one it does not.
var executePlan = atc.Plan{ID: "root", Ensure: &atc.EnsurePlan{
	Step: atc.Plan{ID: "do", Do: &atc.DoPlan{
		{ID: "inputs", InParallel: &atc.InParallelPlan{Steps: []atc.Plan{{ID: "in", ArtifactInput: &atc.ArtifactInputPlan{ArtifactID: 5, Name: "src"}}}}},
		taskPlan,
	}},
	Next: atc.Plan{ID: "outputs", InParallel: &atc.InParallelPlan{Steps: []atc.Plan{
		{ID: "out", ArtifactOutput: &atc.ArtifactOutputPlan{Name: "out"}},
		{ID: "none", ArtifactOutput: &atc.ArtifactOutputPlan{Name: "none"}},
	}}},
}}

// oneOffBuild is build 7 of fly execute: no pipeline, no job.
func oneOffBuild(plan atc.Plan) *dbfakes.FakeBuild {
	b := jobBuild(plan)
	b.NameReturns("7")
	b.PipelineNameReturns("")
	b.JobIDReturns(0)
	b.JobNameReturns("")
	return b
}

// TestOneOffArtifacts: a one-off build runs as one (tektonrun.OneOff), its inputs read
// from the ATC's artifacts (fly execute's uploads), and once it has ended, each output
// its task made is saved as an artifact of the build on its run's worker, for fly to
// download; one it did not make is left out, as Concourse leaves it.
func TestOneOffArtifacts(t *testing.T) {
	run := newRun(event.BuildStatusSucceeded, cat(taskHead, []event.Event{finishTask(0, 103)})...)
	run.worker, run.outputs = "tekton-ci", map[string]string{"out": "a tar of out"}
	runs := &fakeRuns{run: run}
	artifacts := &fakeArtifacts{inputs: map[int]string{5: "a tar of src"}}
	build := oneOffBuild(executePlan)
	runEngine(t, build, &StepperFactory{Runs: runs, Artifacts: artifacts}, nil)

	if got := finished(build); got != db.BuildStatusSucceeded {
		t.Fatalf("status %q, want succeeded; events %v", got, savedEventsOf(build))
	}
	ref := runs.refs[0]
	if !ref.OneOff || ref.Uploads == nil {
		t.Fatalf("ref %+v; want a one-off build, with its uploads", ref)
	}
	rc, err := ref.Uploads(context.Background(), translate.ArtifactInput{PlanID: "in", ArtifactID: 5, Name: "src", Dir: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if content, _ := io.ReadAll(rc); string(content) != "a tar of src" {
		t.Errorf("input src reads %q; want artifact 5's content", content)
	}
	if want := []savedArtifact{{build: 7, worker: "tekton-ci", name: "out", content: "a tar of out"}}; !slices.Equal(artifacts.saved, want) {
		t.Errorf("saved %+v; want %+v", artifacts.saved, want)
	}

	// A job build is none: it has no artifacts.
	jobRuns := &fakeRuns{run: newRun(event.BuildStatusSucceeded, cat(taskHead, []event.Event{finishTask(0, 103)})...)}
	runEngine(t, jobBuild(taskPlan), &StepperFactory{Runs: jobRuns, Artifacts: artifacts}, nil)
	if ref := jobRuns.refs[0]; ref.OneOff || ref.Uploads != nil {
		t.Errorf("job build's ref %+v; want no one-off build, no uploads", ref)
	}
}

// TestOneOffOutputsUnsaved: an output that cannot be saved errors the build, saying so
// on its step, as Concourse's artifact output step errors it; so does every output when
// the web node keeps no artifacts.
func TestOneOffOutputsUnsaved(t *testing.T) {
	tests := []struct {
		name      string
		artifacts Artifacts
		want      string
	}{
		{"save fails", &fakeArtifacts{saveErr: errors.New("disk full")}, "saving output out: disk full"},
		{"no artifacts kept", nil, "this web node keeps no artifacts: fly execute cannot download the build's outputs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := newRun(event.BuildStatusSucceeded, cat(taskHead, []event.Event{finishTask(0, 103)})...)
			run.worker, run.outputs = "tekton-ci", map[string]string{"out": "a tar of out"}
			build := oneOffBuild(executePlan)
			f := &StepperFactory{Runs: &fakeRuns{run: run}}
			if tt.artifacts != nil {
				f.Artifacts = tt.artifacts
			}
			runEngine(t, build, f, nil)
			if got := finished(build); got != db.BuildStatusErrored {
				t.Errorf("status %q, want errored", got)
			}
			var found bool
			for _, e := range savedEventsOf(build) {
				if ev, ok := e.(atcevent.Error); ok && ev.Origin.ID == "out" && ev.Message == tt.want {
					found = true
				}
			}
			if !found {
				t.Errorf("no error event of step out saying %q in %v", tt.want, savedEventsOf(build))
			}
		})
	}
}
