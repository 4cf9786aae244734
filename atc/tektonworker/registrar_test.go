package tektonworker

import (
	"context"
	"errors"
	"testing"
	"time"

	"code.cloudfoundry.org/lager/v3/lagertest"
	"github.com/concourse/concourse/atc"
	"github.com/concourse/concourse/atc/db"
	"github.com/concourse/concourse/atc/db/dbfakes"
	"github.com/google/go-cmp/cmp"

	"github.com/concourse-tekton/concourse-tekton/tektonrun"
)

// checker answers the reports it is given, one per check, then the last again, and
// records whether each check asked for the permissions.
type checker struct {
	reports []tektonrun.CheckReport
	asked   []bool
}

func (c *checker) CheckWith(_ context.Context, o tektonrun.CheckOptions) tektonrun.CheckReport {
	c.asked = append(c.asked, !o.AssumeGranted)
	r := c.reports[0]
	if len(c.reports) > 1 {
		c.reports = c.reports[1:]
	}
	return r
}

var (
	ok          = tektonrun.CheckReport{Target: "lab/ci", Reachable: true, TektonInstalled: true, Granted: true}
	unreachable = tektonrun.CheckReport{Target: "lab/ci", Err: errors.New("dial tcp 127.0.0.1:6443: connection refused")}
)

func TestWorker(t *testing.T) {
	got := Worker("tekton-ci", map[string]string{"registry-image": "concourse/registry-image-resource", "git": "e2e.invalid/git-resource:v1"})
	want := atc.Worker{
		Name:       "tekton-ci",
		GardenAddr: "tekton:tekton-ci",
		Platform:   "linux",
		Version:    "2.5",
		ResourceTypes: []atc.WorkerResourceType{
			{Type: "git", Image: "e2e.invalid/git-resource:v1", Version: "e2e.invalid/git-resource:v1"},
			{Type: "registry-image", Image: "concourse/registry-image-resource", Version: "concourse/registry-image-resource"},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// call is one call to the worker factory: what and with which state.
type call struct {
	Method string
	State  string
	TTL    time.Duration
}

func calls(f *dbfakes.FakeWorkerFactory, order []string) []call {
	var out []call
	var s, h int
	for _, m := range order {
		switch m {
		case "save":
			w, ttl := f.SaveWorkerArgsForCall(s)
			s++
			out = append(out, call{"save", w.State, ttl})
		case "heartbeat":
			w, ttl := f.HeartbeatWorkerArgsForCall(h)
			h++
			out = append(out, call{"heartbeat", w.State, ttl})
		}
	}
	return out
}

// recordingWorkers is a worker factory that records its calls' kinds in order, and
// answers heartbeats with heartbeat.
func recordingWorkers(order *[]string, heartbeat func() (db.Worker, error)) *dbfakes.FakeWorkerFactory {
	workers := new(dbfakes.FakeWorkerFactory)
	workers.SaveWorkerStub = func(atc.Worker, time.Duration) (db.Worker, error) {
		*order = append(*order, "save")
		return new(dbfakes.FakeWorker), nil
	}
	workers.HeartbeatWorkerStub = func(atc.Worker, time.Duration) (db.Worker, error) {
		*order = append(*order, "heartbeat")
		return heartbeat()
	}
	return workers
}

func TestBeat(t *testing.T) {
	var order []string
	workers := recordingWorkers(&order, func() (db.Worker, error) {
		if len(order) == 6 {
			return nil, db.ErrWorkerNotPresent
		}
		return new(dbfakes.FakeWorker), nil
	})
	r := &Registrar{
		Workers:  workers,
		Target:   &checker{reports: []tektonrun.CheckReport{ok, ok, unreachable, unreachable, ok, ok}},
		Worker:   Worker("tekton-ci", map[string]string{"mock": "e2e.invalid/mock-resource:v1"}),
		Interval: 10 * time.Second,
		Logger:   lagertest.NewTestLogger("worker"),
	}
	for range 6 {
		if err := r.Beat(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	ttl := 20 * time.Second
	want := []call{
		{"save", "running", ttl}, // registered
		{"heartbeat", "", ttl},   // still fine
		{"save", "stalled", ttl}, // the cluster went away
		{"save", "stalled", ttl}, // still away
		{"save", "running", ttl}, // back
		{"heartbeat", "", ttl},   // pruned meanwhile (fly prune-worker):
		{"save", "running", ttl}, // saved again
	}
	if diff := cmp.Diff(want, calls(workers, order)); diff != "" {
		t.Errorf("calls to the worker factory (-want +got):\n%s", diff)
	}
	w, _ := workers.SaveWorkerArgsForCall(0)
	if w.Name != "tekton-ci" || len(w.ResourceTypes) != 1 {
		t.Errorf("saved %+v; want the worker given, with its resource types", w)
	}
}

func TestRun(t *testing.T) {
	t.Run("until the web node stops", func(t *testing.T) {
		workers := new(dbfakes.FakeWorkerFactory)
		r := &Registrar{Workers: workers, Target: &checker{reports: []tektonrun.CheckReport{ok}}, Worker: Worker("w", nil),
			Interval: 10 * time.Millisecond, Logger: lagertest.NewTestLogger("worker")}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- r.Run(ctx) }()
		deadline := time.Now().Add(10 * time.Second)
		for workers.HeartbeatWorkerCallCount() < 2 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if workers.HeartbeatWorkerCallCount() < 2 {
			t.Errorf("%d heartbeats; want them every interval", workers.HeartbeatWorkerCallCount())
		}
		if w, _ := workers.SaveWorkerArgsForCall(0); w.StartTime == 0 {
			t.Error("saved with no start time")
		}
	})
	registerRetry = time.Millisecond
	t.Run("a worker the database refuses", func(t *testing.T) {
		workers := new(dbfakes.FakeWorkerFactory)
		workers.SaveWorkerReturns(nil, errors.New("worker already exists and is either global or owned by another team"))
		r := &Registrar{Workers: workers, Target: &checker{reports: []tektonrun.CheckReport{ok}}, Worker: Worker("w", nil), Logger: lagertest.NewTestLogger("worker")}
		if err := r.Run(context.Background()); err == nil || workers.SaveWorkerCallCount() != registerTries {
			t.Errorf("Run: %v after %d tries; want it to fail after %d", err, workers.SaveWorkerCallCount(), registerTries)
		}
	})
	t.Run("a worker the database refuses for a moment", func(t *testing.T) {
		// Workers registered at once race on the base resource types.
		workers := new(dbfakes.FakeWorkerFactory)
		workers.SaveWorkerReturnsOnCall(0, nil, errors.New(`insert or update on table "worker_base_resource_types" violates foreign key constraint`))
		r := &Registrar{Workers: workers, Target: &checker{reports: []tektonrun.CheckReport{ok}}, Worker: Worker("w", nil), Logger: lagertest.NewTestLogger("worker"), Interval: time.Hour}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- r.Run(ctx) }()
		for workers.SaveWorkerCallCount() < 2 {
			time.Sleep(time.Millisecond)
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v, want it registered at the second try", err)
		}
	})
}

func TestProblems(t *testing.T) {
	tests := []struct {
		name   string
		report tektonrun.CheckReport
		want   string
	}{
		{"unreachable", unreachable, "the API server does not answer; dial tcp 127.0.0.1:6443: connection refused"},
		{"no Tekton", tektonrun.CheckReport{Reachable: true}, "Tekton (tekton.dev/v1 pipelineruns) is not installed"},
		{"permissions", tektonrun.CheckReport{Reachable: true, TektonInstalled: true, Missing: []tektonrun.Permission{
			{Resource: "pods", Subresource: "exec", Verb: "create"}, {Group: "tekton.dev", Resource: "pipelineruns", Verb: "watch"}}},
			"not allowed to create pods/exec, watch pipelineruns.tekton.dev"},
		{"pod security", tektonrun.CheckReport{Reachable: true, TektonInstalled: true, PodSecurity: &tektonrun.PodSecurity{Level: "restricted",
			Rejected: []tektonrun.RejectedSteps{{Steps: "every step"}, {Steps: "privileged steps"}}}},
			`the namespace's Pod Security level "restricted" rejects the build's pods`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.report.OK() {
				t.Fatal("the report is OK")
			}
			if got := Problems(tt.report); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

// lander counts the times it was told to land the target.
type lander struct{ lands int }

func (l *lander) Land(context.Context) error { l.lands++; return nil }

// TestBeatLanding: a target landed on the cluster is a landing (then landed) worker, and
// one running again is saved running; a worker an operator landed lands its target.
func TestBeatLanding(t *testing.T) {
	landing := ok
	landing.Status = &tektonrun.Status{State: tektonrun.StateLanding, Running: 1}
	landed := ok
	landed.Status = &tektonrun.Status{State: tektonrun.StateLanded}
	running := ok
	running.Status = &tektonrun.Status{State: tektonrun.StateRunning}

	var order []string
	workers := recordingWorkers(&order, func() (db.Worker, error) {
		w := new(dbfakes.FakeWorker)
		w.StateReturns(db.WorkerStateRunning)
		if len(order) == 6 {
			w.StateReturns(db.WorkerStateLanding) // fly land-worker
		}
		return w, nil
	})
	l := &lander{}
	r := &Registrar{
		Workers:  workers,
		Target:   &checker{reports: []tektonrun.CheckReport{running, landing, landed, running, running, running, running}},
		Worker:   Worker("tekton-ci", nil),
		Interval: 10 * time.Second,
		Logger:   lagertest.NewTestLogger("worker"),
		Lander:   l,
	}
	for range 7 {
		if err := r.Beat(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	ttl := 20 * time.Second
	want := []call{
		{"save", "running", ttl},
		{"save", "landing", ttl}, // concourse-tekton land, a build running
		{"save", "landed", ttl},  // it ended
		{"save", "running", ttl}, // land --undo
		{"heartbeat", "", ttl},
		{"heartbeat", "", ttl},   // fly land-worker: the target lands,
		{"save", "running", ttl}, // and land --undo before the next beat: running again
	}
	if diff := cmp.Diff(want, calls(workers, order)); diff != "" {
		t.Errorf("calls to the worker factory (-want +got):\n%s", diff)
	}
	if l.lands != 1 {
		t.Errorf("the target was landed %d times; want once, when the operator landed the worker", l.lands)
	}
}

// counter counts what it is given, or fails.
type counter struct {
	usage tektonrun.Usage
	err   error
}

func (c counter) Usage(context.Context) (tektonrun.Usage, error) { return c.usage, c.err }

// TestBeatCounts: the worker shows its target's pods and volumes as its containers and
// volumes (fly workers), on registering and on every heartbeat; none when they could not
// be counted, or the target is not reachable.
func TestBeatCounts(t *testing.T) {
	var order []string
	workers := recordingWorkers(&order, func() (db.Worker, error) { return new(dbfakes.FakeWorker), nil })
	r := &Registrar{
		Workers: workers, Target: &checker{reports: []tektonrun.CheckReport{ok, ok, ok, unreachable}}, Worker: Worker("tekton-ci", nil),
		Counter: counter{usage: tektonrun.Usage{Containers: 3, Volumes: 2}}, Logger: lagertest.NewTestLogger("worker"),
	}
	if err := r.Beat(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := r.Beat(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.Counter = counter{err: errors.New("forbidden")}
	if err := r.Beat(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.Counter = counter{usage: tektonrun.Usage{Containers: 9, Volumes: 9}}
	if err := r.Beat(context.Background()); err != nil {
		t.Fatal(err)
	}
	saved, _ := workers.SaveWorkerArgsForCall(0)
	beat, _ := workers.HeartbeatWorkerArgsForCall(0)
	failed, _ := workers.HeartbeatWorkerArgsForCall(1)
	stalled, _ := workers.SaveWorkerArgsForCall(1)
	got := [][2]int{{saved.ActiveContainers, saved.ActiveVolumes}, {beat.ActiveContainers, beat.ActiveVolumes},
		{failed.ActiveContainers, failed.ActiveVolumes}, {stalled.ActiveContainers, stalled.ActiveVolumes}}
	if want := [][2]int{{3, 2}, {3, 2}, {0, 0}, {0, 0}}; !cmp.Equal(want, got) {
		t.Errorf("containers and volumes saved %v, want %v", got, want)
	}
}

// TestBeatAsksPermissionsNowAndThen: a beat asks for the permissions when it has not
// found them all granted within PermissionsEvery (the first beat, then once that long
// has passed), and at every beat while one is missing, or the target does not answer.
func TestBeatAsksPermissionsNowAndThen(t *testing.T) {
	missing := ok
	missing.Granted, missing.Missing = false, []tektonrun.Permission{{Resource: "pods", Verb: "create"}}
	c := &checker{reports: []tektonrun.CheckReport{ok, ok, ok, ok, missing, missing, ok, ok, unreachable, ok, ok}}
	clock := time.Unix(0, 0)
	r := &Registrar{Workers: new(dbfakes.FakeWorkerFactory), Target: c, Worker: Worker("w", nil),
		Logger: lagertest.NewTestLogger("worker"), clock: func() time.Time { return clock }}
	for _, step := range []time.Duration{
		0,                                // the first beat asks
		time.Minute,                      // assumed
		PermissionsEvery - 2*time.Minute, // at 4 min: assumed
		2 * time.Minute,                  // at 6 min: asked again
		time.Minute,                      // assumed (the report says one is missing)
		time.Minute,                      // asked, since the last found one missing: still missing
		time.Minute,                      // asked: all granted again
		time.Minute,                      // assumed
		time.Minute,                      // assumed; the target does not answer
		time.Minute,                      // asked
		time.Minute,                      // assumed
	} {
		clock = clock.Add(step)
		if err := r.Beat(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	want := []bool{true, false, false, true, false, true, true, false, false, true, false}
	if diff := cmp.Diff(want, c.asked); diff != "" {
		t.Errorf("beats that asked for the permissions (-want +got):\n%s", diff)
	}
}

// TestBeatTeam: a team's worker is saved as the team's, as the TSA saves a worker
// registered with --team; while the team does not exist, it is not saved at all (not as
// every team's either), and Run waits for it rather than failing.
func TestBeatTeam(t *testing.T) {
	workers := new(dbfakes.FakeWorkerFactory)
	team := new(dbfakes.FakeTeam)
	team.SaveWorkerReturns(new(dbfakes.FakeWorker), nil)
	teams := new(dbfakes.FakeTeamFactory)
	teams.FindTeamReturns(nil, false, nil)
	w := Worker("tekton-a", nil)
	w.Team = "a"
	r := &Registrar{
		Workers:  workers,
		Teams:    teams,
		Target:   &checker{reports: []tektonrun.CheckReport{ok, ok, ok}},
		Worker:   w,
		Interval: 10 * time.Second,
		Logger:   lagertest.NewTestLogger("worker"),
	}
	if err := r.Beat(context.Background()); !errors.Is(err, ErrNoTeam) {
		t.Fatalf("no team a: %v; want ErrNoTeam", err)
	}
	if n := workers.SaveWorkerCallCount() + team.SaveWorkerCallCount(); n != 0 {
		t.Fatalf("saved %d times with no team a; want never", n)
	}
	teams.FindTeamReturns(team, true, nil)
	if err := r.Beat(context.Background()); err != nil {
		t.Fatal(err)
	}
	if name := teams.FindTeamArgsForCall(1); name != "a" || team.SaveWorkerCallCount() != 1 || workers.SaveWorkerCallCount() != 0 {
		t.Fatalf("saved for team %q: team's %d, every team's %d; want team a's once", name, team.SaveWorkerCallCount(), workers.SaveWorkerCallCount())
	}
	if saved, ttl := team.SaveWorkerArgsForCall(0); saved.Team != "a" || saved.State != "running" || ttl != 20*time.Second {
		t.Errorf("saved %+v for %s; want team a's worker, running, for two intervals", saved, ttl)
	}
	// Running: heartbeats, as every worker's.
	if err := r.Beat(context.Background()); err != nil || workers.HeartbeatWorkerCallCount() != 1 {
		t.Errorf("heartbeat: %v, %d; want one", err, workers.HeartbeatWorkerCallCount())
	}

	// Run waits for a team that is not there yet.
	teams.FindTeamReturns(nil, false, nil)
	r2 := &Registrar{Workers: workers, Teams: teams, Target: &checker{reports: []tektonrun.CheckReport{ok}}, Worker: w, Interval: time.Hour, Logger: lagertest.NewTestLogger("worker")}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r2.Run(ctx) }()
	time.Sleep(50 * time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run with no team: %v; want it to wait", err)
	}
}
