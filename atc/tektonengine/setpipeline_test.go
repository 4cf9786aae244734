package tektonengine

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"code.cloudfoundry.org/clock/fakeclock"
	"github.com/concourse/concourse/atc"
	"github.com/concourse/concourse/atc/db"
	"github.com/concourse/concourse/atc/db/dbfakes"
	atcevent "github.com/concourse/concourse/atc/event"
	"github.com/google/go-cmp/cmp"

	"github.com/concourse-tekton/concourse-tekton/concourse/event"
	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/tektonrun/buildevents"
)

// A job whose step 2 sets pipeline child, and whose step 3 runs after it.
var setPipelinePlan = atc.Plan{ID: "1", Do: &atc.DoPlan{
	{ID: "2", SetPipeline: &atc.SetPipelinePlan{Name: "child", File: "ci/child.yml"}},
	{ID: "3", Task: taskPlan.Task},
}}

const childConfig = `{"jobs":[{"name":"hello","plan":[{"task":"say","config":{"platform":"linux","run":{"path":"echo"}}}]}]}`

func childAtcConfig(t *testing.T) atc.Config {
	t.Helper()
	var c atc.Config
	if err := atc.UnmarshalConfig([]byte(childConfig), &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// setPipelineRun is the run of setPipelinePlan as tektonrun gives it: step 2's head, its
// pipeline, its finish, then step 3.
func setPipelineRun(p runspec.PipelineToSet) *fakeRun {
	origin := event.Origin{ID: "2"}
	return newRun(event.BuildStatusSucceeded,
		event.Initialize{Origin: origin, Time: 101},
		event.Start{Origin: origin, Time: 101},
		handedOver{buildevents.PipelineToSet{Origin: origin, Time: 102, PipelineToSet: p}},
		event.Finish{Origin: origin, Time: 103, Succeeded: true},
		logLine("3", "after\n", 104),
	)
}

// setPipelineWorld is the ATC's database for setPipelinePlan's build (7, of job 2 of team
// main, ID 1): team main, another team "other" (ID 5), and the parent build as the
// build factory finds it.
type setPipelineWorld struct {
	build, parent *dbfakes.FakeBuild
	main, other   *dbfakes.FakeTeam
	teams         *dbfakes.FakeTeamFactory
	builds        *dbfakes.FakeBuildFactory
	saved         *dbfakes.FakePipeline
}

func newSetPipelineWorld() *setPipelineWorld {
	w := &setPipelineWorld{build: jobBuild(setPipelinePlan), parent: new(dbfakes.FakeBuild), main: new(dbfakes.FakeTeam), other: new(dbfakes.FakeTeam),
		teams: new(dbfakes.FakeTeamFactory), builds: new(dbfakes.FakeBuildFactory), saved: new(dbfakes.FakePipeline)}
	w.build.TeamIDReturns(1)
	w.main.IDReturns(1)
	w.main.NameReturns("main")
	w.main.AdminReturns(true)
	w.other.IDReturns(5)
	w.other.NameReturns("other")
	w.teams.GetByIDReturns(w.main)
	w.teams.FindTeamCalls(func(name string) (db.Team, bool, error) {
		switch name {
		case "main":
			return w.main, true, nil
		case "other":
			return w.other, true, nil
		}
		return nil, false, nil
	})
	w.builds.BuildReturns(w.parent, true, nil)
	w.saved.NameReturns("child")
	w.parent.SavePipelineReturns(w.saved, true, nil)
	return w
}

func (w *setPipelineWorld) run(t *testing.T, run *fakeRun) {
	t.Helper()
	runEngine(t, w.build, &StepperFactory{Runs: &fakeRuns{run: run}, SetPipelines: &SetPipelineConfig{
		TeamFactory: w.teams, BuildFactory: w.builds, Clock: fakeclock.NewFakeClock(time.Unix(1000, 0)),
	}}, nil)
}

// stepEvents are the saved events of step 2, logs as "stdout: text" or "stderr: text"
// (stdout's without the diff's lines), others by type.
func stepEvents(b *dbfakes.FakeBuild) []string {
	var out []string
	for _, e := range savedEventsOf(b) {
		switch ev := e.(type) {
		case atcevent.Log:
			if ev.Origin.ID != "2" {
				continue
			}
			if ev.Origin.Source == atcevent.OriginSourceStdout && !strings.HasPrefix(ev.Payload, "setting pipeline: ") && ev.Payload != "no changes to apply.\n" && ev.Payload != "done\n" {
				continue
			}
			out = append(out, string(ev.Origin.Source)+": "+ev.Payload)
		case atcevent.SetPipelineChanged:
			out = append(out, "set-pipeline-changed "+map[bool]string{true: "true", false: "false"}[ev.Changed])
		case atcevent.Error:
			out = append(out, "error: "+ev.Message)
		case atcevent.Finish:
			out = append(out, "finish "+map[bool]string{true: "true", false: "false"}[ev.Succeeded])
		case atcevent.Initialize, atcevent.Start:
			out = append(out, string(e.EventType()))
		}
	}
	return out
}

func TestSetPipelineSavesIt(t *testing.T) {
	w := newSetPipelineWorld()
	w.run(t, setPipelineRun(runspec.PipelineToSet{Pipeline: "child", Config: json.RawMessage(childConfig)}))

	if got := finished(w.build); got != db.BuildStatusSucceeded {
		t.Errorf("status %q, want succeeded", got)
	}
	if n := w.parent.SavePipelineCallCount(); n != 1 {
		t.Fatalf("SavePipeline called %d times, want once", n)
	}
	if id := w.builds.BuildArgsForCall(0); id != 7 {
		t.Errorf("the parent build is build %d, want 7", id)
	}
	ref, teamID, config, from, paused := w.parent.SavePipelineArgsForCall(0)
	if ref.Name != "child" || ref.InstanceVars != nil || teamID != 1 || from != 0 || paused {
		t.Errorf("SavePipeline(%v, %d, …, %d, %v), want (child, 1, …, 0, false)", ref, teamID, from, paused)
	}
	if diff := cmp.Diff(childAtcConfig(t), config); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
	if ref := w.main.PipelineArgsForCall(0); ref.Name != "child" {
		t.Errorf("looked up pipeline %v", ref)
	}
	want := []string{"initialize", "start", "stdout: setting pipeline: child\n", "set-pipeline-changed true", "stdout: done\n", "finish true"}
	if diff := cmp.Diff(want, stepEvents(w.build)); diff != "" {
		t.Errorf("step events (-want +got):\n%s", diff)
	}
	var diffShown bool
	for _, e := range savedEventsOf(w.build) {
		if l, ok := e.(atcevent.Log); ok && strings.Contains(l.Payload, "job hello has been added") {
			diffShown = true
		}
	}
	if !diffShown {
		t.Error("the diff was not shown")
	}
}

func TestSetPipelineNoChanges(t *testing.T) {
	w := newSetPipelineWorld()
	existing := new(dbfakes.FakePipeline)
	existing.ConfigReturns(childAtcConfig(t), nil)
	existing.ConfigVersionReturns(4)
	w.main.PipelineReturns(existing, true, nil)
	w.run(t, setPipelineRun(runspec.PipelineToSet{Pipeline: "child", Config: json.RawMessage(childConfig)}))

	if got := finished(w.build); got != db.BuildStatusSucceeded {
		t.Errorf("status %q, want succeeded", got)
	}
	if n := w.parent.SavePipelineCallCount(); n != 0 {
		t.Errorf("SavePipeline called %d times, want never", n)
	}
	if n := existing.SetParentIDsCallCount(); n != 1 {
		t.Fatalf("SetParentIDs called %d times, want once", n)
	}
	if job, build := existing.SetParentIDsArgsForCall(0); job != 2 || build != 7 {
		t.Errorf("SetParentIDs(%d, %d), want (2, 7)", job, build)
	}
	want := []string{"initialize", "start", "stdout: no changes to apply.\n", "set-pipeline-changed false", "finish true"}
	if diff := cmp.Diff(want, stepEvents(w.build)); diff != "" {
		t.Errorf("step events (-want +got):\n%s", diff)
	}
}

func TestSetPipelineOfAnotherTeam(t *testing.T) {
	tests := []struct {
		name       string
		buildTeam  string
		admin      bool
		team       string
		want       db.BuildStatus
		wantEvents []string
		wantTeamID int
	}{
		{"from main", "main", true, "other", db.BuildStatusSucceeded,
			[]string{"initialize", "start", "stdout: setting pipeline: child\n", "set-pipeline-changed true", "stdout: done\n", "finish true"}, 5},
		{"not permitted", "other", false, "main", db.BuildStatusErrored,
			[]string{"initialize", "start", "error: only main team can set another team's pipeline"}, 0},
		{"no such team", "main", true, "nobody", db.BuildStatusErrored,
			[]string{"initialize", "start", "error: team nobody not found"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newSetPipelineWorld()
			w.build.TeamNameReturns(tt.buildTeam)
			run := setPipelineRun(runspec.PipelineToSet{Team: tt.team, Pipeline: "child", Config: json.RawMessage(childConfig)})
			w.run(t, run)
			if got := finished(w.build); got != tt.want {
				t.Errorf("status %q, want %s", got, tt.want)
			}
			if diff := cmp.Diff(tt.wantEvents, stepEvents(w.build)); diff != "" {
				t.Errorf("step events (-want +got):\n%s", diff)
			}
			if tt.wantTeamID == 0 {
				if w.parent.SavePipelineCallCount() != 0 {
					t.Error("the pipeline was saved")
				}
				if run.abortCalls != 1 {
					t.Errorf("the run was aborted %d times, want once: the steps after it must not go on", run.abortCalls)
				}
				for _, e := range savedEventsOf(w.build) {
					if l, ok := e.(atcevent.Log); ok && l.Origin.ID == "3" {
						t.Error("the run's events after the step were saved")
					}
				}
				return
			}
			if _, teamID, _, _, _ := w.parent.SavePipelineArgsForCall(0); teamID != tt.wantTeamID {
				t.Errorf("saved in team %d, want %d", teamID, tt.wantTeamID)
			}
		})
	}
}

func TestSetPipelineInvalidForConcourse(t *testing.T) {
	w := newSetPipelineWorld()
	run := setPipelineRun(runspec.PipelineToSet{Pipeline: "child", Config: json.RawMessage(`{"jobs":[{"name":"j","plan":[{"get":"nowhere"}]}]}`)})
	w.run(t, run)
	if got := finished(w.build); got != db.BuildStatusFailed {
		t.Errorf("status %q, want failed", got)
	}
	got := stepEvents(w.build)
	if len(got) != 5 || got[2] != "stderr: invalid pipeline:\n" || !strings.Contains(got[3], "nowhere") || got[4] != "finish false" {
		t.Errorf("step events %q: want invalid pipeline:, the error, finish false", got)
	}
	if w.parent.SavePipelineCallCount() != 0 || run.abortCalls != 1 {
		t.Errorf("saved %d times, run aborted %d times; want never, once", w.parent.SavePipelineCallCount(), run.abortCalls)
	}
}

func TestSetPipelineSetByNewerBuild(t *testing.T) {
	w := newSetPipelineWorld()
	w.parent.SavePipelineReturns(nil, false, db.ErrSetByNewerBuild)
	w.run(t, setPipelineRun(runspec.PipelineToSet{Pipeline: "child", Config: json.RawMessage(childConfig)}))
	if got := finished(w.build); got != db.BuildStatusSucceeded {
		t.Errorf("status %q, want succeeded", got)
	}
	want := []string{"initialize", "start", "stdout: setting pipeline: child\n", "set-pipeline-changed true",
		"stderr: \x1b[1;33mWARNING: the pipeline was not saved because it was already saved by a newer build\x1b[0m\n", "finish true"}
	if diff := cmp.Diff(want, stepEvents(w.build)); diff != "" {
		t.Errorf("step events (-want +got):\n%s", diff)
	}
}

func TestSetPipelineErrors(t *testing.T) {
	tests := []struct {
		name    string
		p       runspec.PipelineToSet
		frame   string
		config  bool
		saveErr error
		want    string
	}{
		{name: "unreadable frame", frame: "a set-pipeline frame of version \"2\"", config: true, want: "a set-pipeline frame of version \"2\""},
		{name: "no ATC teams", p: runspec.PipelineToSet{Pipeline: "child", Config: json.RawMessage(childConfig)}, want: "set_pipeline steps need the ATC's teams and builds"},
		{name: "save fails", p: runspec.PipelineToSet{Pipeline: "child", Config: json.RawMessage(childConfig)}, config: true, saveErr: errors.New("disk full"), want: "disk full"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newSetPipelineWorld()
			w.parent.SavePipelineReturns(nil, false, tt.saveErr)
			run := setPipelineRun(tt.p)
			run.events[2] = handedOver{buildevents.PipelineToSet{Origin: event.Origin{ID: "2"}, Time: 102, PipelineToSet: tt.p, Error: tt.frame}}
			f := &StepperFactory{Runs: &fakeRuns{run: run}}
			if tt.config {
				f.SetPipelines = &SetPipelineConfig{TeamFactory: w.teams, BuildFactory: w.builds}
			}
			runEngine(t, w.build, f, nil)
			if got := finished(w.build); got != db.BuildStatusErrored {
				t.Errorf("status %q, want errored", got)
			}
			got := stepEvents(w.build)
			if last := got[len(got)-1]; !strings.HasPrefix(last, "error: ") || !strings.Contains(last, tt.want) {
				t.Errorf("step events %q: want an error with %q last", got, tt.want)
			}
		})
	}
}

func TestSetPipelineNotAgainAfterAttach(t *testing.T) {
	w := newSetPipelineWorld()
	run := setPipelineRun(runspec.PipelineToSet{Pipeline: "child", Config: json.RawMessage(childConfig)})
	run.attached = true
	w.build.EventsReturns(newEventSource(t,
		atcevent.Initialize{Origin: atcevent.Origin{ID: "2"}, Time: 101},
		atcevent.Start{Origin: atcevent.Origin{ID: "2"}, Time: 101},
		atcevent.SetPipelineChanged{Origin: atcevent.Origin{ID: "2"}, Changed: true},
	), nil)
	runEngine(t, w.build, &StepperFactory{Runs: &fakeRuns{run: run}, Settle: 100 * time.Millisecond,
		SetPipelines: &SetPipelineConfig{TeamFactory: w.teams, BuildFactory: w.builds}}, nil)
	if got := finished(w.build); got != db.BuildStatusSucceeded {
		t.Errorf("status %q, want succeeded", got)
	}
	if n := w.parent.SavePipelineCallCount() + w.teams.GetByIDCallCount(); n != 0 {
		t.Error("the pipeline was set again by the web node that attached")
	}
}
