package tektonengine

import (
	"testing"

	"github.com/concourse/concourse/atc"
	"github.com/concourse/concourse/atc/db"
	"github.com/concourse/concourse/atc/db/dbfakes"
	"github.com/google/go-cmp/cmp"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/event"
)

// TestContainersRecorded: each task, get and put of a job build has its container
// recorded on the worker it was given, once, when it is given it (selected-worker), as
// Concourse's engine records the containers it makes: the build's names and IDs, the
// step's name, type and attempt ("2" for a retry's second), its TaskRun's name as its
// handle, owned by the build's step, then created. A step with no TaskRun and a plan
// ID the plan does not have record none.
func TestContainersRecorded(t *testing.T) {
	task := func(id, name string) atc.Plan {
		return atc.Plan{ID: atc.PlanID(id), Task: &atc.TaskPlan{Name: name}}
	}
	plan := atc.Plan{ID: "1", Do: &atc.DoPlan{
		{ID: "2", Retry: &atc.RetryPlan{task("3", "count"), task("4", "count")}},
		{ID: "5", Get: &atc.GetPlan{Name: "repo", Type: "mock"}},
		{ID: "6", Put: &atc.PutPlan{Name: "out", Type: "mock"}},
		{ID: "7", LoadVar: &atc.LoadVarPlan{Name: "v", File: "repo/v"}},
	}}
	selected := func(id string) event.Event {
		return event.SelectedWorker{Origin: event.Origin{ID: concourse.PlanID(id)}, Time: 100, WorkerName: "tekton-ci"}
	}
	run := newRun(event.BuildStatusSucceeded, selected("3"), selected("3"), selected("4"), selected("5"), selected("6"), selected("7"), selected("9"))
	run.taskRuns = map[string]string{"3": "app-unit-3-task-count", "4": "app-unit-3-task-count-2", "5": "app-unit-3-get-repo", "6": "app-unit-3-put-out", "9": "app-unit-3-other"}
	build := jobBuild(plan)
	build.TeamIDReturns(5)
	build.PipelineIDReturns(4)
	build.PipelineInstanceVarsReturns(atc.InstanceVars{"branch": "main"})

	workers := new(dbfakes.FakeWorkerFactory)
	worker := new(dbfakes.FakeWorker)
	workers.GetWorkerReturns(worker, true, nil)
	creating := new(dbfakes.FakeCreatingContainer)
	worker.CreateContainerReturns(creating, nil)

	runEngine(t, build, &StepperFactory{Runs: &fakeRuns{run: run}, Containers: workers}, nil)

	if n := workers.GetWorkerArgsForCall(0); n != "tekton-ci" {
		t.Errorf("worker %q, want tekton-ci", n)
	}
	type recorded struct {
		Handle  string
		PlanID  atc.PlanID
		TeamID  int
		Type    db.ContainerType
		Step    string
		Attempt string
	}
	var got []recorded
	for i := range worker.CreateContainerCallCount() {
		owner, meta := worker.CreateContainerArgsForCall(i)
		o, ok := owner.(handleOwner)
		if !ok {
			t.Fatalf("owner %T, want a handleOwner", owner)
		}
		cols, err := o.Create(nil, "tekton-ci")
		if err != nil {
			t.Fatal(err)
		}
		if meta.BuildID != 7 || meta.BuildName != "3" || meta.JobID != 2 || meta.JobName != "unit" || meta.PipelineID != 4 || meta.PipelineName != "app" || meta.PipelineInstanceVars != `{"branch":"main"}` {
			t.Errorf("metadata %+v; want build 7 (#3) of app/unit", meta)
		}
		if cols["build_id"] != 7 {
			t.Errorf("owner's columns %v; want build 7's step", cols)
		}
		got = append(got, recorded{Handle: cols["handle"].(string), PlanID: cols["plan_id"].(atc.PlanID), TeamID: cols["team_id"].(int), Type: meta.Type, Step: meta.StepName, Attempt: meta.Attempt})
	}
	want := []recorded{
		{"app-unit-3-task-count", "3", 5, db.ContainerTypeTask, "count", "1"},
		{"app-unit-3-task-count-2", "4", 5, db.ContainerTypeTask, "count", "2"},
		{"app-unit-3-get-repo", "5", 5, db.ContainerTypeGet, "repo", ""},
		{"app-unit-3-put-out", "6", 5, db.ContainerTypePut, "out", ""},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("containers recorded (-want +got):\n%s", diff)
	}
	if n := creating.CreatedCallCount(); n != len(want) {
		t.Errorf("%d containers marked created, want %d", n, len(want))
	}
	for i := range worker.FindContainerCallCount() {
		if q, _, _ := worker.FindContainerArgsForCall(i).Find(nil); q["handle"] != want[i].Handle {
			t.Errorf("looked container %d up by %v, want its handle %s", i, q, want[i].Handle)
		}
	}
}

// TestContainersAlreadyRecorded: a web node that attaches to a running build records
// only the containers it does not find (by handle); one created already is left alone,
// one left creating is marked created.
func TestContainersAlreadyRecorded(t *testing.T) {
	plan := atc.Plan{ID: "1", Do: &atc.DoPlan{
		{ID: "3", Task: &atc.TaskPlan{Name: "a"}},
		{ID: "4", Task: &atc.TaskPlan{Name: "b"}},
	}}
	selected := func(id string) event.Event {
		return event.SelectedWorker{Origin: event.Origin{ID: concourse.PlanID(id)}, Time: 100, WorkerName: "tekton-ci"}
	}
	run := newRun(event.BuildStatusSucceeded, selected("3"), selected("4"))
	run.taskRuns = map[string]string{"3": "tr-a", "4": "tr-b"}
	workers := new(dbfakes.FakeWorkerFactory)
	worker := new(dbfakes.FakeWorker)
	workers.GetWorkerReturns(worker, true, nil)
	creating := new(dbfakes.FakeCreatingContainer)
	worker.FindContainerReturnsOnCall(0, nil, new(dbfakes.FakeCreatedContainer), nil)
	worker.FindContainerReturnsOnCall(1, creating, nil, nil)

	runEngine(t, jobBuild(plan), &StepperFactory{Runs: &fakeRuns{run: run}, Containers: workers}, nil)

	if n := worker.CreateContainerCallCount(); n != 0 {
		t.Errorf("%d containers created, want none", n)
	}
	if n := creating.CreatedCallCount(); n != 1 {
		t.Errorf("%d containers marked created, want the one left creating", n)
	}
}
