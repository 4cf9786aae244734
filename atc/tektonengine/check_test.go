package tektonengine

import (
	"errors"
	"testing"
	"time"

	"github.com/concourse/concourse/atc"
	"github.com/concourse/concourse/atc/db"
	"github.com/concourse/concourse/atc/db/dbfakes"
	"github.com/concourse/concourse/atc/db/lock/lockfakes"
	"github.com/concourse/concourse/atc/engine/enginefakes"
	atcevent "github.com/concourse/concourse/atc/event"
	"github.com/google/go-cmp/cmp"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/event"
)

// checkPlan is lidar's check of resource "repo" (type mock, a base type).
var checkPlan = atc.Plan{ID: "5", Check: &atc.CheckPlan{
	Name: "repo", Type: "mock", Source: atc.Source{"initial_version": "a"},
	TypeImage: atc.TypeImage{BaseType: "mock"},
	Interval:  atc.CheckEvery{Interval: time.Minute},
	Resource:  "repo",
}}

// checkFixture is a check build (ID 9, of resource 4 of pipeline app) and the database
// around it: the resource config, its scope (latest version {"v": "1"}, never checked),
// the pipeline.
type checkFixture struct {
	build    *dbfakes.FakeBuild
	configs  *dbfakes.FakeResourceConfigFactory
	caches   *dbfakes.FakeResourceCacheFactory
	config   *dbfakes.FakeResourceConfig
	scope    *dbfakes.FakeResourceConfigScope
	pipeline *dbfakes.FakePipeline
	lock     *lockfakes.FakeLock
	limiter  *enginefakes.FakeRateLimiter
}

func newCheckFixture(plan atc.Plan) *checkFixture {
	f := &checkFixture{
		build:    jobBuild(plan),
		configs:  new(dbfakes.FakeResourceConfigFactory),
		caches:   new(dbfakes.FakeResourceCacheFactory),
		config:   new(dbfakes.FakeResourceConfig),
		scope:    new(dbfakes.FakeResourceConfigScope),
		pipeline: new(dbfakes.FakePipeline),
		lock:     new(lockfakes.FakeLock),
		limiter:  new(enginefakes.FakeRateLimiter),
	}
	f.build.IDReturns(9)
	f.build.NameReturns(db.CheckBuildName)
	f.build.JobIDReturns(0)
	f.build.JobNameReturns("")
	f.build.ResourceIDReturns(4)
	f.build.PipelineReturns(f.pipeline, true, nil)
	f.pipeline.ResourceIDReturns(4, true, nil)
	f.configs.FindOrCreateResourceConfigReturns(f.config, nil)
	f.config.FindOrCreateScopeReturns(f.scope, nil)
	f.scope.IDReturns(11)
	f.scope.LastCheckReturns(db.LastCheck{}, nil)
	f.scope.AcquireResourceCheckingLockReturns(f.lock, true, nil)
	latest := new(dbfakes.FakeResourceConfigVersion)
	latest.VersionReturns(db.Version{"v": "1"})
	f.scope.LatestVersionReturns(latest, true, nil)
	f.scope.UpdateLastCheckStartTimeReturns(true, nil)
	f.scope.UpdateLastCheckEndTimeReturns(true, nil)
	return f
}

func (f *checkFixture) factory(runs Runs) *StepperFactory {
	return &StepperFactory{
		Runs:   runs,
		Checks: &CheckConfig{ResourceConfigFactory: f.configs, ResourceCacheFactory: f.caches, RateLimiter: f.limiter, DefaultTimeout: time.Hour},
		Now:    func() time.Time { return time.Unix(300, 0) },
	}
}

// checkEvents are a check's events as tektonrun maps them.
func checkEvents(end ...event.Event) []event.Event {
	return checkEventsAt("5", end...)
}

// checkEventsAt are checkEvents at the origin id.
func checkEventsAt(id concourse.PlanID, end ...event.Event) []event.Event {
	return append([]event.Event{
		event.InitializeCheck{Origin: event.Origin{ID: id}, Time: 101, Name: "repo"},
		event.SelectedWorker{Origin: event.Origin{ID: id}, Time: 101, WorkerName: "labnode"},
		event.Start{Origin: event.Origin{ID: id}, Time: 101},
		event.Log{Origin: event.Origin{ID: id, Source: event.OriginSourceStderr}, Time: 102, Payload: "checking\n"},
	}, end...)
}

// eventTypes are the types of the events saved, and the log's payloads.
func eventTypes(evs []atc.Event) []string {
	var out []string
	for _, e := range evs {
		s := string(e.EventType())
		switch ev := e.(type) {
		case atcevent.Log:
			s += ":" + ev.Payload
		case atcevent.Finish:
			if ev.Succeeded {
				s += ":ok"
			} else {
				s += ":failed"
			}
		case atcevent.Error:
			s += ":" + ev.Message
		case atcevent.SelectedWorker:
			s += ":" + ev.WorkerName
		}
		out = append(out, s)
	}
	return out
}

func TestCheckSavesVersion(t *testing.T) {
	fx := newCheckFixture(checkPlan)
	runs := checkSucceeds(t, fx, map[string]string{"v": "2"})
	run := runs.run
	// The run: the check from the latest version, named after the build.
	if len(runs.plans) != 1 {
		t.Fatalf("%d runs started; want 1", len(runs.plans))
	}
	if got := runs.plans[0].Check.FromVersion; !cmp.Equal(got, atc.Version{"v": "1"}) {
		t.Errorf("checked from %v; want the scope's latest version", got)
	}
	if ref := runs.refs[0]; ref.ID != 9 || ref.Meta.Job != "check-repo" || ref.Meta.Build != "9" || ref.Meta.Pipeline != "app" {
		t.Errorf("run for %+v; want job check-repo, build 9", ref)
	}
	if run.deleted != 1 {
		t.Errorf("run deleted %d times; want once", run.deleted)
	}
	// The database, as Concourse's check step leaves it.
	if typ, source, _ := fx.configs.FindOrCreateResourceConfigArgsForCall(0); typ != "mock" || source["initial_version"] != "a" {
		t.Errorf("resource config of %s %v", typ, source)
	}
	if name, scope := fx.pipeline.SetResourceConfigScopeForResourceArgsForCall(0); name != "repo" || scope != fx.scope {
		t.Errorf("resource %s pointed at %v; want repo at its scope", name, scope)
	}
	if fx.limiter.WaitCallCount() != 1 || fx.lock.ReleaseCallCount() != 1 {
		t.Errorf("rate limiter waited %d times, lock released %d times; want once each", fx.limiter.WaitCallCount(), fx.lock.ReleaseCallCount())
	}
	if fx.build.OnCheckBuildStartCallCount() != 1 || fx.scope.UpdateLastCheckStartTimeCallCount() != 1 {
		t.Errorf("build started %d times, check start time %d; want once each", fx.build.OnCheckBuildStartCallCount(), fx.scope.UpdateLastCheckStartTimeCallCount())
	}
	if id, _ := fx.scope.UpdateLastCheckStartTimeArgsForCall(0); id != 9 {
		t.Errorf("check start recorded for build %d; want 9", id)
	}
	if n := fx.scope.SaveVersionsCallCount(); n != 1 {
		t.Fatalf("SaveVersions called %d times; want once", n)
	}
	if _, versions := fx.scope.SaveVersionsArgsForCall(0); !cmp.Equal(versions, []atc.Version{{"v": "2"}}) {
		t.Errorf("saved versions %v; want [{v: 2}]", versions)
	}
	if fx.scope.UpdateLastCheckEndTimeCallCount() != 1 {
		t.Fatal("the check's end not recorded")
	}
	// The next check is due the plan's interval after this one.
	if ok, interval := fx.scope.UpdateLastCheckEndTimeArgsForCall(0); !ok || interval != time.Minute {
		t.Errorf("the check's end recorded as (%t, %s); want (true, 1m)", ok, interval)
	}
	want := []string{"initialize-check", "selected-worker:labnode", "start", "log:checking\n", "finish:ok"}
	if diff := cmp.Diff(want, eventTypes(savedEventsOf(fx.build))); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// A check whose type's image the node pulled shows that image's check and get inside its
// own events: the run's initialize-check and finish of the image's check are saved, the
// check's own are the delegate's.
func TestCheckShowsItsPulledImage(t *testing.T) {
	fx := newCheckFixture(checkPlan)
	ic, ig := event.Origin{ID: "5/image-check"}, event.Origin{ID: "5/image-get"}
	fetch := []event.Event{
		event.InitializeCheck{Origin: ic, Time: 101, Name: "my-type"},
		event.SelectedWorker{Origin: ic, Time: 101, WorkerName: "labnode"},
		event.Start{Origin: ic, Time: 101},
		event.Finish{Origin: ic, Time: 101, Succeeded: true},
		event.InitializeGet{Origin: ig, Time: 101},
		event.StartGet{Origin: ig, Time: 101},
		event.SelectedWorker{Origin: ig, Time: 101, WorkerName: "labnode"},
		event.FinishGet{Origin: ig, Time: 101, FetchedVersion: concourse.Version{"digest": "sha256:abc"}},
	}
	evs := checkEvents(event.Finish{Origin: event.Origin{ID: "5"}, Time: 103, Succeeded: true})
	evs = append(append(evs[:1:1], fetch...), evs[1:]...)
	runs := &fakeRuns{run: newRun(event.BuildStatusSucceeded, evs...)}
	runs.run.version = map[string]string{"v": "2"}
	runEngine(t, fx.build, fx.factory(runs), nil)
	if got := finished(fx.build); got != db.BuildStatusSucceeded {
		t.Fatalf("status %q; want succeeded", got)
	}
	want := []string{"initialize-check",
		"initialize-check", "selected-worker:labnode", "start", "finish:ok",
		"initialize-get", "start-get", "selected-worker:labnode", "finish-get",
		"selected-worker:labnode", "start", "log:checking\n", "finish:ok"}
	if diff := cmp.Diff(want, eventTypes(savedEventsOf(fx.build))); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestCheckFindsNothing(t *testing.T) {
	fx := newCheckFixture(checkPlan)
	fx.scope.LatestVersionReturns(nil, false, nil)
	runs := &fakeRuns{run: newRun(event.BuildStatusSucceeded, checkEvents(event.Finish{Origin: event.Origin{ID: "5"}, Time: 103, Succeeded: true})...)}
	runEngine(t, fx.build, fx.factory(runs), nil)
	if got := finished(fx.build); got != db.BuildStatusSucceeded {
		t.Fatalf("status %q; want succeeded", got)
	}
	if got := runs.plans[0].Check.FromVersion; got != nil {
		t.Errorf("checked from %v; want no version", got)
	}
	if _, versions := fx.scope.SaveVersionsArgsForCall(0); len(versions) != 0 {
		t.Errorf("saved versions %v; want none", versions)
	}
}

func TestCheckFails(t *testing.T) {
	tests := []struct {
		name   string
		run    *fakeRun
		status db.BuildStatus
		last   string
	}{
		{"script fails", newRun(event.BuildStatusFailed, checkEvents(event.Finish{Origin: event.Origin{ID: "5"}, Time: 103})...), db.BuildStatusFailed, "finish:failed"},
		{"step errors", newRun(event.BuildStatusErrored, checkEvents(event.Error{Origin: event.Origin{ID: "5"}, Time: 103, Message: "image pull failed"})...), db.BuildStatusErrored, "error:run check: image pull failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newCheckFixture(checkPlan)
			runEngine(t, fx.build, fx.factory(&fakeRuns{run: tt.run}), nil)
			if got := finished(fx.build); got != tt.status {
				t.Errorf("status %q; want %s", got, tt.status)
			}
			if fx.scope.SaveVersionsCallCount() != 0 {
				t.Error("versions saved")
			}
			if fx.scope.UpdateLastCheckEndTimeCallCount() != 1 || checkEndSucceeded(fx.scope) {
				t.Error("the check's end not recorded as failed")
			}
			evs := eventTypes(savedEventsOf(fx.build))
			if len(evs) == 0 || evs[len(evs)-1] != tt.last {
				t.Errorf("events %q; want them to end %q", evs, tt.last)
			}
			if tt.run.deleted != 1 {
				t.Errorf("run deleted %d times; want once", tt.run.deleted)
			}
		})
	}
}

func TestCheckNotDue(t *testing.T) {
	// Checked successfully a moment ago: lidar's check does not run, and says so.
	fx := newCheckFixture(checkPlan)
	fx.scope.LastCheckReturns(db.LastCheck{StartTime: time.Now(), EndTime: time.Now(), Succeeded: true}, nil)
	runs := &fakeRuns{run: newRun(event.BuildStatusSucceeded)}
	runEngine(t, fx.build, fx.factory(runs), nil)
	if got := finished(fx.build); got != db.BuildStatusSucceeded {
		t.Errorf("status %q; want succeeded", got)
	}
	if len(runs.plans) != 0 || fx.scope.SaveVersionsCallCount() != 0 || fx.build.OnCheckBuildStartCallCount() != 0 {
		t.Errorf("%d runs, %d saves, %d starts; want none", len(runs.plans), fx.scope.SaveVersionsCallCount(), fx.build.OnCheckBuildStartCallCount())
	}
}

func TestCheckErrors(t *testing.T) {
	t.Run("run cannot start", func(t *testing.T) {
		fx := newCheckFixture(checkPlan)
		runEngine(t, fx.build, fx.factory(&fakeRuns{err: errors.New("forbidden")}), nil)
		evs := eventTypes(savedEventsOf(fx.build))
		if finished(fx.build) != db.BuildStatusErrored || len(evs) == 0 || evs[len(evs)-1] != "error:run check: forbidden" {
			t.Errorf("status %q, events %q; want errored, saying why", finished(fx.build), evs)
		}
		if fx.scope.UpdateLastCheckEndTimeCallCount() != 1 || checkEndSucceeded(fx.scope) {
			t.Error("the check's end not recorded as failed")
		}
	})
	t.Run("no running worker matches", func(t *testing.T) {
		// As Concourse's check step: errored at once, saying which worker it lacks.
		fx := newCheckFixture(checkPlan)
		runEngine(t, fx.build, fx.factory(&fakeRuns{err: &NoWorkersError{PlanID: "5", Spec: "resource type 'git'"}}), nil)
		evs := eventTypes(savedEventsOf(fx.build))
		if finished(fx.build) != db.BuildStatusErrored || len(evs) == 0 || evs[len(evs)-1] != "error:run check: no workers satisfying: resource type 'git', version: '2.5'" {
			t.Errorf("status %q, events %q; want errored, saying why", finished(fx.build), evs)
		}
	})
}

// checkEndSucceeded is whether the scope's first recorded check end says succeeded.
func checkEndSucceeded(scope *dbfakes.FakeResourceConfigScope) bool {
	ok, _ := scope.UpdateLastCheckEndTimeArgsForCall(0)
	return ok
}

// A check's next one is due its check_every after it, else the web node's default for
// a resource (--resource-checking-interval) or for a resource type
// (--resource-type-checking-interval).
func TestCheckInterval(t *testing.T) {
	defer func(r, rt time.Duration) { atc.DefaultCheckInterval, atc.DefaultResourceTypeInterval = r, rt }(atc.DefaultCheckInterval, atc.DefaultResourceTypeInterval)
	atc.DefaultCheckInterval, atc.DefaultResourceTypeInterval = 2*time.Minute, 3*time.Minute
	for _, tt := range []struct {
		name string
		plan atc.CheckPlan
		want time.Duration
	}{
		{"check_every", atc.CheckPlan{Resource: "repo", Interval: atc.CheckEvery{Interval: 10 * time.Second}}, 10 * time.Second},
		{"a resource's default", atc.CheckPlan{Resource: "repo"}, 2 * time.Minute},
		{"a resource type's default", atc.CheckPlan{ResourceType: "custom"}, 3 * time.Minute},
	} {
		if got := checkInterval(tt.plan); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, got, tt.want)
		}
	}
}
