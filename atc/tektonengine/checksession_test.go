package tektonengine

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/concourse/concourse/atc"
	"github.com/concourse/concourse/atc/db"
	"github.com/concourse/concourse/atc/db/dbfakes"
	"github.com/google/go-cmp/cmp"

	"github.com/concourse-tekton/concourse-tekton/concourse/event"
	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/tektonrun"
	"github.com/concourse-tekton/concourse-tekton/tektonrun/buildevents"
)

// sessionRuns are fakeRuns whose checks run in check sessions (CheckSessions): ready says
// which session pods can take a check; each check's run gives result after its events.
type sessionRuns struct {
	*fakeRuns
	noSession bool
	// ready are the session pods that can take a check; a pod started is, unless
	// startsDead.
	ready      map[string]bool
	startsDead bool
	result     runspec.SessionResult
	events     []event.Event

	prepared, started, ran, deleted []string
	has                             []string
}

func (f *sessionRuns) PrepareCheck(ctx context.Context, planJSON []byte, ref BuildRef, has func(string) bool) (*WorkerCheck, error) {
	if f.noSession {
		return nil, fmt.Errorf("%w: a reason", tektonrun.ErrNoSession)
	}
	if has("tekton-ci") {
		f.has = append(f.has, "tekton-ci")
	}
	f.prepared = append(f.prepared, ref.Meta.Job)
	return &WorkerCheck{SessionCheck: fakeSessionCheck{f}, Worker: "tekton-ci"}, nil
}

type fakeSessionCheck struct{ f *sessionRuns }

func (c fakeSessionCheck) Hash() string { return "h1" }
func (c fakeSessionCheck) NewName() string {
	return fmt.Sprintf("app-check-repo-session-%d", len(c.f.started))
}
func (c fakeSessionCheck) Start(_ context.Context, name string) error {
	c.f.started = append(c.f.started, name)
	c.f.ready[name] = !c.f.startsDead
	return nil
}
func (c fakeSessionCheck) Delete(_ context.Context, name string) error {
	c.f.deleted = append(c.f.deleted, name)
	return nil
}
func (c fakeSessionCheck) Run(_ context.Context, name string, emit func(buildevents.Event) error) (runspec.SessionResult, error) {
	if !c.f.ready[name] {
		return runspec.SessionResult{}, fmt.Errorf("%w: %s", tektonrun.ErrSessionGone, name)
	}
	c.f.ran = append(c.f.ran, name)
	for _, e := range c.f.events {
		if err := emit(buildevents.Event{Event: e}); err != nil {
			return runspec.SessionResult{}, err
		}
	}
	return c.f.result, nil
}

// sessionFixture is a check of a resource whose config (21, of base type 3) has a check
// session on worker tekton-ci, whose container is recorded when earlier is.
func sessionFixture(t *testing.T, earlier string, runs *sessionRuns) (*checkFixture, *dbfakes.FakeWorker, *StepperFactory) {
	t.Helper()
	fx := newCheckFixture(checkPlan)
	fx.build.PipelineIDReturns(4)
	fx.build.PipelineNameReturns("app")
	fx.config.IDReturns(21)
	fx.config.OriginBaseResourceTypeReturns(&db.UsedBaseResourceType{ID: 3})
	workers := new(dbfakes.FakeWorkerFactory)
	worker := new(dbfakes.FakeWorker)
	workers.GetWorkerReturns(worker, true, nil)
	worker.NameReturns("tekton-ci")
	var created db.CreatedContainer
	if earlier != "" {
		c := new(dbfakes.FakeCreatedContainer)
		c.HandleReturns(earlier)
		c.DestroyingReturns(new(dbfakes.FakeDestroyingContainer), nil)
		created = c
	}
	worker.FindContainerStub = func(owner db.ContainerOwner) (db.CreatingContainer, db.CreatedContainer, error) {
		if fmt.Sprintf("%T", owner) == "db.resourceConfigCheckSessionContainerOwner" {
			return nil, created, nil
		}
		return nil, nil, nil
	}
	worker.CreateContainerReturns(new(dbfakes.FakeCreatingContainer), nil)
	f := fx.factory(runs)
	f.Containers = workers
	f.Checks.CheckContainers = true
	return fx, worker, f
}

func sessionCheckEvents() []event.Event {
	o := event.Origin{ID: "5"}
	return []event.Event{
		event.InitializeCheck{Origin: o, Time: 101, Name: "repo"},
		event.SelectedWorker{Origin: o, Time: 101, WorkerName: "labnode"},
		event.Start{Origin: o, Time: 101},
		event.Log{Origin: event.Origin{ID: "5", Source: event.OriginSourceStderr}, Time: 102, Payload: "checking\n"},
		event.Finish{Origin: o, Time: 103, Succeeded: true},
	}
}

// TestCheckInSession: a check of a resource runs in its check session's container when
// the session has one that can take it: no run is started, no container started or
// recorded, every version found is saved in order, and the check's events are saved
// but the delegate's own, its worker the worker's name.
func TestCheckInSession(t *testing.T) {
	runs := &sessionRuns{fakeRuns: &fakeRuns{}, ready: map[string]bool{"app-check-repo-session-a": true},
		result: runspec.SessionResult{Outcome: runspec.Succeeded, Versions: []map[string]string{{"v": "2"}, {"v": "3"}}}, events: sessionCheckEvents()}
	fx, worker, f := sessionFixture(t, "app-check-repo-session-a", runs)
	runEngine(t, fx.build, f, nil)
	if got := finished(fx.build); got != db.BuildStatusSucceeded {
		t.Fatalf("status %q; want succeeded", got)
	}
	if runs.starts != 0 || len(runs.started) != 0 || worker.CreateContainerCallCount() != 0 {
		t.Errorf("%d runs, %d session pods started, %d containers recorded; want none", runs.starts, len(runs.started), worker.CreateContainerCallCount())
	}
	if diff := cmp.Diff([]string{"app-check-repo-session-a"}, runs.ran); diff != "" {
		t.Errorf("checks ran in (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"tekton-ci"}, runs.has); diff != "" {
		t.Errorf("the worker with the session's container was not told (-want +got):\n%s", diff)
	}
	if _, versions := fx.scope.SaveVersionsArgsForCall(0); !cmp.Equal(versions, []atc.Version{{"v": "2"}, {"v": "3"}}) {
		t.Errorf("saved versions %v; want both, in order", versions)
	}
	want := []string{"initialize-check", "selected-worker:tekton-ci", "start", "log:checking\n", "finish:ok"}
	if diff := cmp.Diff(want, eventTypes(savedEventsOf(fx.build))); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestCheckSessionReplaced: a session whose container's pod can take no check (it died,
// its node went away, the type's image changed, or it went just before the check) gets
// a new one: the record and the pod of the old go, the new is started, recorded as the
// session's, and runs the check, whose events are as in any session.
func TestCheckSessionReplaced(t *testing.T) {
	runs := &sessionRuns{fakeRuns: &fakeRuns{}, ready: map[string]bool{},
		result: runspec.SessionResult{Outcome: runspec.Succeeded, Versions: []map[string]string{{"v": "2"}}}, events: sessionCheckEvents()}
	fx, worker, f := sessionFixture(t, "app-check-repo-session-old", runs)
	runEngine(t, fx.build, f, nil)
	if got := finished(fx.build); got != db.BuildStatusSucceeded {
		t.Fatalf("status %q; want succeeded", got)
	}
	if diff := cmp.Diff([]string{"app-check-repo-session-old"}, runs.deleted); diff != "" {
		t.Errorf("deleted (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"app-check-repo-session-0"}, runs.started); diff != "" {
		t.Errorf("started (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"app-check-repo-session-0"}, runs.ran); diff != "" {
		t.Errorf("ran in (-want +got):\n%s", diff)
	}
	if worker.CreateContainerCallCount() != 1 {
		t.Fatalf("%d containers recorded; want the new one", worker.CreateContainerCallCount())
	}
	owner, meta := worker.CreateContainerArgsForCall(0)
	o := owner.(handleOwner)
	if got := fmt.Sprintf("%T", o.ContainerOwner); got != "db.resourceConfigCheckSessionContainerOwner" || o.handle != "app-check-repo-session-0" {
		t.Errorf("owner %s, handle %s; want the session's, the new pod", got, o.handle)
	}
	if meta.Type != db.ContainerTypeCheck || meta.StepName != "repo" || meta.PipelineName != "app" {
		t.Errorf("metadata %+v; want the check of repo of pipeline app", meta)
	}
	want := []string{"initialize-check", "selected-worker:tekton-ci", "start", "log:checking\n", "finish:ok"}
	if diff := cmp.Diff(want, eventTypes(savedEventsOf(fx.build))); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestCheckSessionNewOneGoneToo: a new session pod that can take no check either
// errors the check, with no third: the next check tries again.
func TestCheckSessionNewOneGoneToo(t *testing.T) {
	runs := &sessionRuns{fakeRuns: &fakeRuns{}, ready: map[string]bool{}, startsDead: true, events: sessionCheckEvents()}
	fx, _, f := sessionFixture(t, "s", runs)
	runEngine(t, fx.build, f, nil)
	if got := finished(fx.build); got != db.BuildStatusErrored {
		t.Fatalf("status %q; want errored", got)
	}
	if !cmp.Equal(runs.started, []string{"app-check-repo-session-0"}) || len(runs.ran) != 0 {
		t.Errorf("started %v, ran in %v; want one new pod, no check run", runs.started, runs.ran)
	}
}

// TestCheckInSessionFails: a check whose script failed, or whose runner ended with an
// error, ends as it does as a run of its own: not succeeded, or errored with the
// message, nothing saved.
func TestCheckInSessionFails(t *testing.T) {
	for _, tt := range []struct {
		name   string
		result runspec.SessionResult
		want   db.BuildStatus
	}{
		{name: "failed", result: runspec.SessionResult{Outcome: runspec.Failed}, want: db.BuildStatusFailed},
		{name: "errored", result: runspec.SessionResult{Outcome: runspec.Errored, Error: "no such repo"}, want: db.BuildStatusErrored},
	} {
		t.Run(tt.name, func(t *testing.T) {
			evs := sessionCheckEvents()[:4]
			if tt.result.Error != "" {
				evs = append(evs, event.Error{Origin: event.Origin{ID: "5"}, Time: 103, Message: tt.result.Error})
			}
			runs := &sessionRuns{fakeRuns: &fakeRuns{}, ready: map[string]bool{"s": true}, result: tt.result, events: evs}
			fx, _, f := sessionFixture(t, "s", runs)
			runEngine(t, fx.build, f, nil)
			if got := finished(fx.build); got != tt.want {
				t.Fatalf("status %q; want %s", got, tt.want)
			}
			if n := fx.scope.SaveVersionsCallCount(); n != 0 {
				t.Errorf("versions saved %d times; want never", n)
			}
			if want := "error:run check: " + tt.result.Error; tt.result.Error != "" && !slices.Contains(eventTypes(savedEventsOf(fx.build)), want) {
				t.Errorf("events %v; want %s", eventTypes(savedEventsOf(fx.build)), want)
			}
		})
	}
}

// TestCheckWithoutSession: a check that cannot run in a session, with check containers
// off, or on a worker the database does not have yet, runs as a build of its own.
func TestCheckWithoutSession(t *testing.T) {
	for _, tt := range []struct {
		name         string
		noSession    bool
		off          bool
		unregistered bool
	}{{name: "no session", noSession: true}, {name: "check containers off", off: true}, {name: "worker not registered", unregistered: true}} {
		t.Run(tt.name, func(t *testing.T) {
			run := newRun(event.BuildStatusSucceeded, checkEvents(event.Finish{Origin: event.Origin{ID: "5"}, Time: 103, Succeeded: true})...)
			run.version = map[string]string{"v": "2"}
			runs := &sessionRuns{fakeRuns: &fakeRuns{run: run}, noSession: tt.noSession, ready: map[string]bool{}}
			fx, _, f := sessionFixture(t, "", runs)
			f.Checks.CheckContainers = !tt.off
			if tt.unregistered {
				f.Containers.(*dbfakes.FakeWorkerFactory).GetWorkerReturns(nil, false, nil)
			}
			runEngine(t, fx.build, f, nil)
			if got := finished(fx.build); got != db.BuildStatusSucceeded {
				t.Fatalf("status %q; want succeeded", got)
			}
			if runs.starts != 1 || len(runs.ran) != 0 {
				t.Errorf("%d runs started, %d checks in sessions; want one run", runs.starts, len(runs.ran))
			}
		})
	}
}
