package tektonengine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"code.cloudfoundry.org/lager/v3/lagerctx"
	"code.cloudfoundry.org/lager/v3/lagertest"
	"github.com/concourse/concourse/atc"
	"github.com/concourse/concourse/atc/db"
	"github.com/concourse/concourse/atc/db/dbfakes"
	"github.com/concourse/concourse/atc/db/lock/lockfakes"
	"github.com/concourse/concourse/atc/engine"
	"github.com/concourse/concourse/atc/engine/enginefakes"
	atcevent "github.com/concourse/concourse/atc/event"
	"github.com/concourse/concourse/atc/exec"
	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/event"
	"github.com/concourse-tekton/concourse-tekton/tektonrun"
	"github.com/concourse-tekton/concourse-tekton/tektonrun/buildevents"
	"github.com/concourse-tekton/concourse-tekton/translate"
)

// fakeRuns starts fakeRuns, and records what it was asked.
type fakeRuns struct {
	run *fakeRun
	err error
	// forPlan, when set, is the run of a plan, if it has one of its own (else run).
	forPlan func(id atc.PlanID) *fakeRun

	mu     sync.Mutex
	refs   []BuildRef
	plans  []atc.Plan
	starts int
}

var _ Runs = (*fakeRuns)(nil)

func (f *fakeRuns) Start(ctx context.Context, plan []byte, ref BuildRef) (Run, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var p atc.Plan
	if err := json.Unmarshal(plan, &p); err != nil {
		return nil, err
	}
	f.refs, f.plans = append(f.refs, ref), append(f.plans, p)
	f.starts++
	if f.err != nil {
		return nil, f.err
	}
	if f.forPlan != nil {
		if run := f.forPlan(p.ID); run != nil {
			return run, nil
		}
	}
	return f.run, nil
}

// fakeRun plays a run's events. With untilAbort it then waits, as a sleeping task does,
// until it is aborted, plays onAbort (its hooks) and ends aborted.
type fakeRun struct {
	attached bool
	warnings []string
	events   []event.Event
	// taskRuns are the TaskRuns of the steps, by plan ID: a step's selected-worker
	// event carries its TaskRun's name.
	taskRuns   map[string]string
	untilAbort bool
	onAbort    []event.Event
	status     event.BuildStatus
	err        error

	// waiting is closed when the run waits to be aborted.
	waiting chan struct{}
	aborted chan struct{}

	mu sync.Mutex
	// abortCtxErr is the error of the context Abort was called with: nil, since the run
	// must be aborted with a live context although the build's was cancelled.
	abortCalls  int
	abortCtxErr error

	// version is what a check found; deleted counts Delete's calls.
	version map[string]string
	deleted int

	// worker is the run's; outputs the content of the outputs its steps made, by name.
	worker  string
	outputs map[string]string
	// caches are the task caches its tasks used, by step; cachesErr fails TaskCaches.
	caches    map[string][]string
	cachesErr error
}

// handedOver stands, among a fake run's events, for a set_pipeline step's pipeline,
// which the run hands over as an event's Pipeline, in place of a Concourse event.
type handedOver struct{ buildevents.PipelineToSet }

func (handedOver) EventType() event.EventType  { return "test:pipeline-to-set" }
func (handedOver) Version() event.EventVersion { return "1.0" }

func newRun(status event.BuildStatus, events ...event.Event) *fakeRun {
	return &fakeRun{status: status, events: events, waiting: make(chan struct{}), aborted: make(chan struct{})}
}

var _ Run = (*fakeRun)(nil)

func (r *fakeRun) Name() string       { return "ci/app-unit-1" }
func (r *fakeRun) Attached() bool     { return r.attached }
func (r *fakeRun) Warnings() []string { return r.warnings }

func (r *fakeRun) Events(ctx context.Context, emit func(buildevents.Event) error) (event.BuildStatus, error) {
	play := func(evs []event.Event) error {
		for i, e := range evs {
			te := buildevents.Event{Key: buildevents.Key{Step: "unit", Part: buildevents.PartLog, N: i}, Event: e}
			if p, ok := e.(handedOver); ok {
				te.Event, te.Pipeline = nil, &p.PipelineToSet
			}
			if sw, ok := e.(event.SelectedWorker); ok {
				te.TaskRun = r.taskRuns[string(sw.Origin.ID)]
			}
			if err := emit(te); err != nil {
				return err
			}
		}
		return nil
	}
	if err := play(append([]event.Event{event.Status{Status: event.BuildStatusStarted, Time: 100}}, r.events...)); err != nil {
		return "", err
	}
	if r.err != nil {
		return "", r.err
	}
	status := r.status
	if r.untilAbort {
		close(r.waiting)
		select {
		case <-r.aborted:
		case <-ctx.Done():
			return "", ctx.Err()
		}
		if err := play(r.onAbort); err != nil {
			return "", err
		}
		status = event.BuildStatusAborted
	}
	if err := emit(buildevents.Event{Key: buildevents.Key{Part: buildevents.PartEnd}, Event: event.Status{Status: status, Time: 200}}); err != nil {
		return "", err
	}
	return status, nil
}

func (r *fakeRun) CheckedVersion(context.Context) (map[string]string, error) { return r.version, nil }

func (r *fakeRun) Worker() string { return r.worker }

func (r *fakeRun) TaskCaches(context.Context) (map[string][]string, error) {
	return r.caches, r.cachesErr
}

func (r *fakeRun) Outputs(_ context.Context, names []string, save func(string, io.Reader) error) error {
	for _, name := range names {
		if content, ok := r.outputs[name]; ok {
			if err := save(name, strings.NewReader(content)); err != nil {
				return err
			}
		}
	}
	return nil
}

func (r *fakeRun) Delete(context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.deleted++
	return nil
}

func (r *fakeRun) Abort(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.abortCalls++
	if r.abortCalls == 1 {
		r.abortCtxErr = ctx.Err()
		close(r.aborted)
	}
	return nil
}

// A one-task build's events, as tektonrun maps them, and as the ATC must save them.
var (
	unitConfig = event.TaskConfig{Platform: "linux", Image: "docker:///busybox", Run: event.TaskRunConfig{Path: "echo", Args: []string{"hello"}}}
	atcConfig  = atcevent.TaskConfig{Platform: "linux", Image: "docker:///busybox", Run: atcevent.TaskRunConfig{Path: "echo", Args: []string{"hello"}}}

	taskHead = []event.Event{
		event.InitializeTask{Time: 101, Origin: event.Origin{ID: "1"}, TaskConfig: unitConfig},
		event.SelectedWorker{Time: 101, Origin: event.Origin{ID: "1"}, WorkerName: "labnode"},
		event.StartTask{Time: 101, Origin: event.Origin{ID: "1"}, TaskConfig: unitConfig},
	}
	atcTaskHead = []atc.Event{
		atcevent.InitializeTask{Time: 101, Origin: atcevent.Origin{ID: "1"}, TaskConfig: atcConfig},
		atcevent.SelectedWorker{Time: 101, Origin: atcevent.Origin{ID: "1"}, WorkerName: "labnode"},
		atcevent.StartTask{Time: 101, Origin: atcevent.Origin{ID: "1"}, TaskConfig: atcConfig},
	}
)

func logLine(id, text string, at int64) event.Event {
	return event.Log{Time: at, Origin: event.Origin{ID: concourse.PlanID(id), Source: event.OriginSourceStdout}, Payload: text}
}

func atcLog(id, text string, at int64) atc.Event {
	return atcevent.Log{Time: at, Origin: atcevent.Origin{ID: atcevent.OriginID(id), Source: atcevent.OriginSourceStdout}, Payload: text}
}

func finishTask(status int, at int64) event.Event {
	return event.FinishTask{Time: at, ExitStatus: event.ExitStatus(status), Origin: event.Origin{ID: "1"}}
}

func atcFinishTask(status int, at int64) atc.Event {
	return atcevent.FinishTask{Time: at, ExitStatus: status, Origin: atcevent.Origin{ID: "1"}}
}

func cat[T any](parts ...[]T) []T {
	var out []T
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

var taskPlan = atc.Plan{ID: "1", Task: &atc.TaskPlan{Name: "unit", Config: &atc.TaskConfig{
	Platform: "linux", RootfsURI: "docker:///busybox", Run: atc.TaskRunConfig{Path: "echo", Args: []string{"hello"}}}}}

// jobBuild is build 7 ("3" of job unit of pipeline app of team main), started, with the
// plan, as the database gives it to the engine.
func jobBuild(plan atc.Plan) *dbfakes.FakeBuild {
	b := new(dbfakes.FakeBuild)
	b.IDReturns(7)
	b.NameReturns("3")
	b.TeamNameReturns("main")
	b.PipelineNameReturns("app")
	b.JobIDReturns(2)
	b.JobNameReturns("unit")
	b.SchemaReturns("exec.v2")
	b.PrivatePlanReturns(plan)
	b.StartTimeReturns(time.Unix(100, 0))
	b.RunStateIDReturns("build:7")
	b.AcquireTrackingLockReturns(new(lockfakes.FakeLock), true, nil)
	b.ReloadReturns(true, nil)
	b.IsRunningReturns(true)
	return b
}

// runEngine runs the build through Concourse's own engine, which calls the stepper with
// the build's plan and records the status from what the step returned. abort, when not
// nil, is called (in its own goroutine) to abort the build: it sends on the channel the
// engine listens to.
func runEngine(t *testing.T, build *dbfakes.FakeBuild, f engine.StepperFactory, abort func(notify chan<- struct{})) {
	t.Helper()
	notify := make(chan struct{}, 1)
	notifier := new(dbfakes.FakeNotifier)
	notifier.NotifyReturns(notify)
	build.AbortNotifierReturns(notifier, nil)
	if abort != nil {
		go abort(notify)
	}
	ctx := lagerctx.NewContext(context.Background(), lagertest.NewTestLogger("engine"))
	done := make(chan struct{})
	go func() {
		defer close(done)
		engine.NewBuild(build, f, nil, nil, make(chan bool), new(sync.Map), new(sync.WaitGroup)).Run(ctx)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the build did not end in 30 s")
	}
}

func savedEventsOf(b *dbfakes.FakeBuild) []atc.Event {
	var out []atc.Event
	for i := range b.SaveEventCallCount() {
		out = append(out, b.SaveEventArgsForCall(i))
	}
	return out
}

// finished is the status the engine recorded, or "" when it left the build running.
func finished(b *dbfakes.FakeBuild) db.BuildStatus {
	if b.FinishCallCount() == 0 {
		return ""
	}
	return b.FinishArgsForCall(b.FinishCallCount() - 1)
}

func TestBuildOutcomes(t *testing.T) {
	unsupported := &translate.UnsupportedError{PlanID: "1", Step: "unit", Reason: "no image"}
	tests := []struct {
		name      string
		run       *fakeRun
		startErr  error
		want      db.BuildStatus
		wantSaved []atc.Event
	}{
		{
			name:      "succeeded",
			run:       newRun(event.BuildStatusSucceeded, cat(taskHead, []event.Event{logLine("1", "hello\n", 102), finishTask(0, 103)})...),
			want:      db.BuildStatusSucceeded,
			wantSaved: cat(atcTaskHead, []atc.Event{atcLog("1", "hello\n", 102), atcFinishTask(0, 103)}),
		},
		{
			name:      "failed: a task exits 42",
			run:       newRun(event.BuildStatusFailed, cat(taskHead, []event.Event{finishTask(42, 103)})...),
			want:      db.BuildStatusFailed,
			wantSaved: cat(atcTaskHead, []atc.Event{atcFinishTask(42, 103)}),
		},
		{
			name: "errored: a step's error event, then the status",
			run: newRun(event.BuildStatusErrored, event.InitializeTask{Time: 101, Origin: event.Origin{ID: "1"}, TaskConfig: unitConfig},
				event.Error{Message: "image pull failed", Origin: event.Origin{ID: "1"}, Time: 150}),
			want: db.BuildStatusErrored,
			wantSaved: []atc.Event{atcTaskHead[0],
				atcevent.Error{Message: "image pull failed", Origin: atcevent.Origin{ID: "1"}, Time: 150}},
		},
		{
			name:      "aborted from the cluster",
			run:       newRun(event.BuildStatusAborted, cat(taskHead, []event.Event{event.Error{Message: "interrupted", Origin: event.Origin{ID: "1"}, Time: 110}})...),
			want:      db.BuildStatusAborted,
			wantSaved: cat(atcTaskHead, []atc.Event{atcevent.Error{Message: "interrupted", Origin: atcevent.Origin{ID: "1"}, Time: 110}}),
		},
		{
			name:      "the plan does not compile: its error on the step, errored",
			startErr:  unsupported,
			want:      db.BuildStatusErrored,
			wantSaved: []atc.Event{atcevent.Error{Message: unsupported.Error(), Origin: atcevent.Origin{ID: "1"}, Time: 1000}},
		},
		{
			name:      "the run cannot start: its error on the build's plan, errored",
			startErr:  errors.New("creating PipelineRun app-unit-3: forbidden"),
			want:      db.BuildStatusErrored,
			wantSaved: []atc.Event{atcevent.Error{Message: "creating PipelineRun app-unit-3: forbidden", Origin: atcevent.Origin{ID: "0"}, Time: 1000}},
		},
		{
			name:      "no running worker matches: Concourse's error on the step, errored",
			startErr:  &NoWorkersError{PlanID: "1", Spec: "platform 'linux', tag 'gpu'"},
			want:      db.BuildStatusErrored,
			wantSaved: []atc.Event{atcevent.Error{Message: "no workers satisfying: platform 'linux', tag 'gpu', version: '2.5'", Origin: atcevent.Origin{ID: "1"}, Time: 1000}},
		},
		{
			name:     "the cluster cannot be reached: left running, to be started again, nothing saved",
			startErr: fmt.Errorf("looking for build app-unit-3: %w", apierrors.NewServiceUnavailable("the apiserver restarts")),
			want:     "",
		},
		{
			name: "warnings as the build's log",
			run: func() *fakeRun {
				r := newRun(event.BuildStatusSucceeded)
				r.warnings = []string{"no task caches"}
				return r
			}(),
			want: db.BuildStatusSucceeded,
			wantSaved: []atc.Event{atcevent.Log{Time: 1000, Origin: atcevent.Origin{ID: "0", Source: atcevent.OriginSourceStderr},
				Payload: "warning: no task caches\n"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := atc.Plan{ID: "0", Do: &atc.DoPlan{taskPlan}}
			build := jobBuild(plan)
			runs := &fakeRuns{run: tt.run, err: tt.startErr}
			runEngine(t, build, &StepperFactory{Runs: runs, Now: func() time.Time { return time.Unix(1000, 0) }}, nil)

			if got := finished(build); got != tt.want {
				t.Errorf("status %q, want %q", got, tt.want)
			}
			if diff := cmp.Diff(tt.wantSaved, savedEventsOf(build)); diff != "" {
				t.Errorf("saved events (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]atc.Plan{plan}, runs.plans); diff != "" {
				t.Errorf("the run's plan (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBuildRef(t *testing.T) {
	job := jobBuild(taskPlan)
	instanced := jobBuild(taskPlan)
	instanced.TeamNameReturns("ops")
	instanced.PipelineInstanceVarsReturns(atc.InstanceVars{"branch": "main"})
	oneOff := new(dbfakes.FakeBuild)
	oneOff.IDReturns(12)
	oneOff.NameReturns("12")
	oneOff.TeamNameReturns("main")
	oneOff.StartTimeReturns(time.Unix(100, 0))
	oneOff.TeamIDReturns(1)
	creator := "alice"
	oneOff.CreatedByReturns(&creator)
	job.TeamIDReturns(1)
	job.PipelineIDReturns(5)
	instanced.TeamIDReturns(4)
	instanced.PipelineIDReturns(6)
	tests := []struct {
		name  string
		build db.Build
		want  BuildRef
	}{
		{"a job build: its name, and the IDs its steps see", job, BuildRef{Meta: tektonrun.BuildMeta{Team: "main", Pipeline: "app", Job: "unit", Build: "3",
			TeamID: 1, PipelineID: 5, JobID: 2, BuildID: 7}, ID: 7, Started: time.Unix(100, 0)}},
		{"a build of an instanced pipeline: its instance vars", instanced, BuildRef{Meta: tektonrun.BuildMeta{Team: "ops", Pipeline: "app", Job: "unit", Build: "3", InstanceVars: map[string]any{"branch": "main"},
			TeamID: 4, PipelineID: 6, JobID: 2, BuildID: 7}, ID: 7, Started: time.Unix(100, 0)}},
		{"a one-off build: its ID, and its creator", oneOff, BuildRef{Meta: tektonrun.BuildMeta{Team: "main", Build: "12", TeamID: 1, BuildID: 12, CreatedBy: "alice"},
			ID: 12, Started: time.Unix(100, 0), OneOff: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Ref(tt.build)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestCheckRef: a check build runs as its check's job, named by its ID, and its steps
// know it for a check build.
func TestCheckRef(t *testing.T) {
	b := new(dbfakes.FakeBuild)
	b.IDReturns(21)
	b.NameReturns(db.CheckBuildName)
	b.TeamNameReturns("main")
	b.TeamIDReturns(1)
	b.PipelineNameReturns("app")
	b.PipelineIDReturns(5)
	b.StartTimeReturns(time.Unix(100, 0))
	want := BuildRef{Meta: tektonrun.BuildMeta{Team: "main", Pipeline: "app", Job: "check-repo", Build: "21", TeamID: 1, PipelineID: 5, BuildID: 21, Check: true},
		ID: 21, Started: time.Unix(100, 0)}
	if diff := cmp.Diff(want, CheckRef(b, atc.CheckPlan{Name: "repo"})); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestAbort(t *testing.T) {
	run := newRun(event.BuildStatusSucceeded, cat(taskHead, []event.Event{logLine("1", "sleeping\n", 102)})...)
	run.untilAbort = true
	run.onAbort = []event.Event{
		event.Error{Message: "interrupted", Origin: event.Origin{ID: "1"}, Time: 110},
		event.InitializeTask{Time: 111, Origin: event.Origin{ID: "2"}, TaskConfig: unitConfig},
		event.Log{Time: 112, Origin: event.Origin{ID: "2", Source: event.OriginSourceStdout}, Payload: "on_abort ran\n"},
	}
	build := jobBuild(taskPlan)
	runEngine(t, build, &StepperFactory{Runs: &fakeRuns{run: run}}, func(notify chan<- struct{}) {
		<-run.waiting
		notify <- struct{}{} // fly abort-build
	})

	if got := finished(build); got != db.BuildStatusAborted {
		t.Errorf("status %q, want aborted", got)
	}
	if run.abortCalls != 1 || run.abortCtxErr != nil {
		t.Errorf("Abort called %d times, its context's error %v; want once, with a live context", run.abortCalls, run.abortCtxErr)
	}
	want := cat(atcTaskHead, []atc.Event{
		atcLog("1", "sleeping\n", 102),
		atcevent.Error{Message: "interrupted", Origin: atcevent.Origin{ID: "1"}, Time: 110},
		atcevent.InitializeTask{Time: 111, Origin: atcevent.Origin{ID: "2"}, TaskConfig: atcConfig},
		atcevent.Log{Time: 112, Origin: atcevent.Origin{ID: "2", Source: atcevent.OriginSourceStdout}, Payload: "on_abort ran\n"},
	})
	if diff := cmp.Diff(want, savedEventsOf(build)); diff != "" {
		t.Errorf("saved events: the hooks' after the abort (-want +got):\n%s", diff)
	}
}

// eventSource is a build's event source holding saved events: it delivers them, then
// waits for more as the ATC's does for a running build, until it is closed.
type eventSource struct {
	events []atcevent.Envelope
	closed chan struct{}
	once   sync.Once
}

var _ db.EventSource = (*eventSource)(nil)

func newEventSource(t *testing.T, saved ...atc.Event) *eventSource {
	t.Helper()
	s := &eventSource{closed: make(chan struct{})}
	for _, e := range saved {
		payload, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		data := json.RawMessage(payload)
		s.events = append(s.events, atcevent.Envelope{Data: &data, Event: e.EventType(), Version: e.Version()})
	}
	return s
}

func (s *eventSource) Next() (atcevent.Envelope, error) {
	if len(s.events) > 0 {
		e := s.events[0]
		s.events = s.events[1:]
		return e, nil
	}
	<-s.closed
	return atcevent.Envelope{}, db.ErrBuildEventStreamClosed
}

func (s *eventSource) Close() error {
	s.once.Do(func() { close(s.closed) })
	return nil
}

func TestAttachSavesOnlyNewEvents(t *testing.T) {
	// Two parallel tasks, 1 and 2. The web node that started the build saw 1's head, a
	// line of 2 (its pod is gone since: that line is not seen again) and a line of 1, then
	// it stopped. The web node that attaches sees the steps one after the other.
	one, two := event.Origin{ID: "1"}, event.Origin{ID: "2"}
	line := func(o event.Origin, text string, at int64) event.Event {
		return event.Log{Time: at, Origin: event.Origin{ID: o.ID, Source: event.OriginSourceStdout}, Payload: text}
	}
	replay := []event.Event{
		event.InitializeTask{Time: 101, Origin: one, TaskConfig: unitConfig},
		line(one, "same\n", 102), line(one, "same\n", 102), line(one, "new\n", 103),
		event.FinishTask{Time: 104, Origin: one},
		event.InitializeTask{Time: 101, Origin: two, TaskConfig: unitConfig},
		event.FinishTask{Time: 105, Origin: two},
	}
	saved := []atc.Event{
		atcevent.Status{Status: atc.StatusStarted, Time: 100},
		atcevent.InitializeTask{Time: 101, Origin: atcevent.Origin{ID: "1"}, TaskConfig: atcConfig},
		atcevent.WaitingForWorker{Time: 100, Origin: atcevent.Origin{ID: "2"}},
		atcevent.InitializeTask{Time: 101, Origin: atcevent.Origin{ID: "2"}, TaskConfig: atcConfig},
		atcevent.Log{Time: 102, Origin: atcevent.Origin{ID: "2", Source: atcevent.OriginSourceStdout}, Payload: "gone\n"},
		atcevent.Log{Time: 102, Origin: atcevent.Origin{ID: "1", Source: atcevent.OriginSourceStdout}, Payload: "same\n"},
	}
	run := newRun(event.BuildStatusSucceeded, replay...)
	run.attached = true
	build := jobBuild(atc.Plan{ID: "0", InParallel: &atc.InParallelPlan{Steps: []atc.Plan{taskPlan}}})
	build.EventsReturns(newEventSource(t, saved...), nil)
	runEngine(t, build, &StepperFactory{Runs: &fakeRuns{run: run}, Settle: 100 * time.Millisecond}, nil)

	if got := finished(build); got != db.BuildStatusSucceeded {
		t.Errorf("status %q, want succeeded", got)
	}
	if n := build.EventsCallCount(); n != 1 || build.EventsArgsForCall(0) != 0 {
		t.Errorf("read the saved events %d times; want once, from the first", n)
	}
	want := []atc.Event{
		// The second of two identical lines: the first was saved.
		atcevent.Log{Time: 102, Origin: atcevent.Origin{ID: "1", Source: atcevent.OriginSourceStdout}, Payload: "same\n"},
		atcevent.Log{Time: 103, Origin: atcevent.Origin{ID: "1", Source: atcevent.OriginSourceStdout}, Payload: "new\n"},
		atcevent.FinishTask{Time: 104, Origin: atcevent.Origin{ID: "1"}},
		atcevent.FinishTask{Time: 105, Origin: atcevent.Origin{ID: "2"}},
	}
	if diff := cmp.Diff(want, savedEventsOf(build)); diff != "" {
		t.Errorf("saved on attaching (-want +got):\n%s", diff)
	}
}

func TestFollowErrorLeavesBuildRunning(t *testing.T) {
	tests := []struct {
		name      string
		err       error
		want      db.BuildStatus
		wantSaved []atc.Event
	}{
		{
			name: "the cluster cannot be read: the engine runs the build again later",
			err:  errors.New("the server is currently unable to handle the request"),
			want: "",
		},
		{
			name:      "the run was deleted: errored, and why",
			err:       ErrRunGone,
			want:      db.BuildStatusErrored,
			wantSaved: []atc.Event{atcevent.Error{Message: ErrRunGone.Error(), Origin: atcevent.Origin{ID: "1"}, Time: 1000}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := newRun(event.BuildStatusSucceeded)
			run.err = tt.err
			build := jobBuild(taskPlan)
			runEngine(t, build, &StepperFactory{Runs: &fakeRuns{run: run}, Now: func() time.Time { return time.Unix(1000, 0) }}, nil)
			if got := finished(build); got != tt.want {
				t.Errorf("status %q, want %q", got, tt.want)
			}
			if diff := cmp.Diff(tt.wantSaved, savedEventsOf(build)); diff != "" {
				t.Errorf("saved events (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUnreadableEventErrors(t *testing.T) {
	// An event the ATC has no type for: the build errors, once, and its run is stopped.
	run := newRun(event.BuildStatusSucceeded, unknownEvent{})
	build := jobBuild(taskPlan)
	runEngine(t, build, &StepperFactory{Runs: &fakeRuns{run: run}, Now: func() time.Time { return time.Unix(1000, 0) }}, nil)
	if got := finished(build); got != db.BuildStatusErrored {
		t.Errorf("status %q, want errored", got)
	}
	want := []atc.Event{atcevent.Error{Message: "a mystery event, which the ATC does not know", Origin: atcevent.Origin{ID: "1"}, Time: 1000}}
	if diff := cmp.Diff(want, savedEventsOf(build)); diff != "" {
		t.Errorf("saved events (-want +got):\n%s", diff)
	}
	if run.abortCalls != 1 {
		t.Errorf("the run was aborted %d times, want once", run.abortCalls)
	}
}

type unknownEvent struct{}

func (unknownEvent) EventType() event.EventType  { return "mystery" }
func (unknownEvent) Version() event.EventVersion { return "1.0" }

func TestSaveErrorIsRetriable(t *testing.T) {
	build := jobBuild(taskPlan)
	build.SaveEventReturns(errors.New("connection refused"))
	step := &buildStep{factory: &StepperFactory{Runs: &fakeRuns{run: newRun(event.BuildStatusSucceeded, taskHead...)}}, build: build, plan: taskPlan}
	_, err := step.Run(context.Background(), nil)
	if !errors.As(err, &exec.Retriable{}) {
		t.Errorf("Run: %v; want a Retriable error, so the engine leaves the build running and attaches again", err)
	}
}

func TestCheckBuildsGoToFallback(t *testing.T) {
	fallback := new(enginefakes.FakeStepperFactory)
	f := &StepperFactory{Runs: &fakeRuns{}, Fallback: fallback}
	check := new(dbfakes.FakeBuild)
	check.NameReturns(db.CheckBuildName)
	check.ResourceIDReturns(3)
	if _, err := f.StepperForBuild(check); err != nil {
		t.Fatal(err)
	}
	if fallback.StepperForBuildCallCount() != 1 {
		t.Error("a check build was not given to the fallback")
	}
	if _, err := f.StepperForBuild(jobBuild(taskPlan)); err != nil {
		t.Fatal(err)
	}
	if fallback.StepperForBuildCallCount() != 1 {
		t.Error("a job build was given to the fallback")
	}
}

func TestSchema(t *testing.T) {
	b := jobBuild(taskPlan)
	b.SchemaReturns("exec.v1")
	if _, err := (&StepperFactory{Runs: &fakeRuns{}}).StepperForBuild(b); err == nil {
		t.Error("a build of schema exec.v1 accepted")
	}
}
