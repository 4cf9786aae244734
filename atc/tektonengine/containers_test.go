package tektonengine

import (
	"context"
	"fmt"
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

// deletingRuns are fakeRuns that delete check runs, as a Pool does.
type deletingRuns struct {
	*fakeRuns
	deleted []string
}

func (r *deletingRuns) DeleteCheckRun(_ context.Context, worker, taskRun string) error {
	r.deleted = append(r.deleted, worker+"/"+taskRun)
	return nil
}

// TestCheckContainerRecorded: a check of a resource has its container recorded as
// Concourse's check step owns it, by the check session of the resource's config (fly
// intercept --check finds it so), with the check build's names and the check's step;
// the earlier check's container of that session goes (one session has one container),
// and the run is kept for the container's sake (the worker deletes it with the
// container).
func TestCheckContainerRecorded(t *testing.T) {
	fx := newCheckFixture(checkPlan)
	fx.build.PipelineIDReturns(4)
	fx.build.PipelineNameReturns("app")
	fx.config.IDReturns(21)
	fx.config.OriginBaseResourceTypeReturns(&db.UsedBaseResourceType{ID: 3})
	run := newRun(event.BuildStatusSucceeded, checkEvents(event.Finish{Origin: event.Origin{ID: "5"}, Time: 103, Succeeded: true})...)
	run.version = map[string]string{"v": "2"}
	run.taskRuns = map[string]string{"5": "app-check-repo-9-check-repo"}

	workers := new(dbfakes.FakeWorkerFactory)
	worker := new(dbfakes.FakeWorker)
	workers.GetWorkerReturns(worker, true, nil)
	earlier := new(dbfakes.FakeCreatedContainer)
	earlier.HandleReturns("app-check-repo-8-check-repo")
	worker.FindContainerStub = func(owner db.ContainerOwner) (db.CreatingContainer, db.CreatedContainer, error) {
		if fmt.Sprintf("%T", owner) == "db.resourceConfigCheckSessionContainerOwner" {
			return nil, earlier, nil
		}
		return nil, nil, nil
	}
	destroying := new(dbfakes.FakeDestroyingContainer)
	earlier.DestroyingReturns(destroying, nil)
	worker.NameReturns("tekton-ci")
	worker.CreateContainerReturns(new(dbfakes.FakeCreatingContainer), nil)
	runs := &deletingRuns{fakeRuns: &fakeRuns{run: run}}
	f := fx.factory(runs)
	f.Containers = workers
	runEngine(t, fx.build, f, nil)

	if got := finished(fx.build); got != db.BuildStatusSucceeded {
		t.Fatalf("status %q; want succeeded", got)
	}
	if worker.CreateContainerCallCount() != 1 {
		t.Fatalf("%d containers recorded; want the check's", worker.CreateContainerCallCount())
	}
	owner, meta := worker.CreateContainerArgsForCall(0)
	o := owner.(handleOwner)
	if got := fmt.Sprintf("%T", o.ContainerOwner); got != "db.resourceConfigCheckSessionContainerOwner" || o.handle != "app-check-repo-9-check-repo" {
		t.Errorf("owner %s, handle %s; want the resource config's check session, the check's TaskRun", got, o.handle)
	}
	if meta.Type != db.ContainerTypeCheck || meta.StepName != "repo" || meta.BuildID != 9 || meta.PipelineID != 4 || meta.PipelineName != "app" {
		t.Errorf("metadata %+v; want the check of repo in build 9 of pipeline app", meta)
	}
	// The session's earlier container goes: its run, then its record.
	if earlier.DestroyingCallCount() != 1 || destroying.DestroyCallCount() != 1 {
		t.Errorf("the earlier check's container was not destroyed")
	}
	if want := []string{"tekton-ci/app-check-repo-8-check-repo"}; !cmp.Equal(runs.deleted, want) {
		t.Errorf("check runs deleted %v; want the earlier check's, %v", runs.deleted, want)
	}
	if run.deleted != 0 {
		t.Errorf("run deleted %d times; want it kept for its container", run.deleted)
	}
}
