package tektonworker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"code.cloudfoundry.org/lager/v3"
	"github.com/concourse/concourse"
	"github.com/concourse/concourse/atc"
	"github.com/concourse/concourse/atc/db"

	"github.com/concourse-tekton/concourse-tekton/tektonrun"
)

// Workers saves workers: the ATC's db.WorkerFactory.
type Workers interface {
	// SaveWorker saves the worker, all of it, for ttl.
	SaveWorker(atc.Worker, time.Duration) (db.Worker, error)
	// HeartbeatWorker keeps a saved worker for ttl more, running unless an operator
	// landed or retired it; db.ErrWorkerNotPresent when it was pruned.
	HeartbeatWorker(atc.Worker, time.Duration) (db.Worker, error)
}

var _ Workers = db.WorkerFactory(nil)

// Checker checks a target: *tektonrun.Target.
type Checker interface {
	CheckWith(context.Context, tektonrun.CheckOptions) tektonrun.CheckReport
}

var _ Checker = (*tektonrun.Target)(nil)

// DefaultInterval is how often the target is checked and the worker heartbeated.
const DefaultInterval = 30 * time.Second

// PermissionsEvery is how often a heartbeat asks again for the permissions it found all
// granted (a few dozen access reviews each time); the rest of the target is checked at
// every beat, and permissions, too, while any is missing or could not be asked.
const PermissionsEvery = 5 * time.Minute

// Worker is the worker a target is shown as, named name: its base resource types are those of
// resourceImages (type to image), each at the version of its image, so that a new image
// is a new version of the type for the ATC's caches.
func Worker(name string, resourceImages map[string]string) atc.Worker {
	w := atc.Worker{
		Name: name,
		// Workers' addresses are unique in the database, the empty one too: a target's
		// is its name's, which no one dials (its builds go through its stepper).
		GardenAddr: "tekton:" + name,
		Platform:   "linux",
		Version:    concourse.WorkerVersion,
	}
	for _, typ := range slices.Sorted(maps.Keys(resourceImages)) {
		img := resourceImages[typ]
		w.ResourceTypes = append(w.ResourceTypes, atc.WorkerResourceType{Type: typ, Image: img, Version: img})
	}
	return w
}

// Teams finds the team whose worker a team's target is: the ATC's db.TeamFactory.
type Teams interface {
	FindTeam(name string) (db.Team, bool, error)
}

var _ Teams = db.TeamFactory(nil)

// ErrNoTeam is a beat's error when the worker's team does not exist (yet): the worker is
// not saved, neither as the team's nor as every team's, and the next beat tries again.
var ErrNoTeam = errors.New("the worker's team does not exist")

// Registrar keeps a target's worker in the ATC's database.
type Registrar struct {
	Workers Workers
	// Teams saves a team's worker (Worker.Team), as the TSA saves a worker registered
	// with --team: the team's own, used by its builds alone.
	Teams  Teams
	Target Checker
	// Worker is what is saved (see Worker); its State is the registrar's.
	Worker atc.Worker
	// Interval between checks (zero: DefaultInterval). The worker is kept for two.
	Interval time.Duration
	Logger   lager.Logger

	// Lander lands the target when an operator lands its worker (fly land-worker), so
	// that no starter of builds starts one there (nil: the target is not told).
	Lander interface{ Land(context.Context) error }
	// Counter counts the target's pods and volumes, which the worker shows as its
	// containers and volumes (fly workers) while it is reachable (nil: none shown).
	Counter interface {
		Usage(context.Context) (tektonrun.Usage, error)
	}

	// running says the worker was last saved running; state, the state other than
	// running it was last saved with.
	running bool
	state   tektonrun.TargetState
	// granted is when every permission was last found granted (zero: not at the last
	// check that asked).
	granted time.Time
	clock   func() time.Time // nil: time.Now (tests set it)
}

func (r *Registrar) now() time.Time {
	if r.clock != nil {
		return r.clock()
	}
	return time.Now()
}

func (r *Registrar) interval() time.Duration {
	if r.Interval > 0 {
		return r.Interval
	}
	return DefaultInterval
}

// registerTries is how many times Run tries to register the worker, registerRetry apart,
// before it fails.
var registerTries, registerRetry = 10, time.Second

// Run saves the worker and keeps it up to date until ctx ends. Since it then stops
// heartbeating, the worker stalls once its time runs out, as a worker that stopped does.
// It fails only when the worker cannot be saved at first, registerTries times: the
// database refused it.
func (r *Registrar) Run(ctx context.Context) error {
	r.Worker.StartTime = time.Now().Unix()
	// Registering can fail for a moment: workers saved at once race on the database's
	// base resource types (a foreign key violation), as Concourse's workers' beacons
	// do, which register again.
	for try := 1; ; try++ {
		err := r.Beat(ctx)
		if err == nil {
			break
		}
		if errors.Is(err, ErrNoTeam) {
			// Made later (fly set-team): saved then, at a beat.
			r.Logger.Info("waiting-for-team", lager.Data{"worker": r.Worker.Name, "team": r.Worker.Team})
			break
		}
		if try == registerTries {
			return fmt.Errorf("registering worker %s: %w", r.Worker.Name, err)
		}
		r.Logger.Error("failed-to-register", err, lager.Data{"try": try})
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(registerRetry):
		}
	}
	t := time.NewTicker(r.interval())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if err := r.Beat(ctx); errors.Is(err, ErrNoTeam) {
				r.Logger.Debug("waiting-for-team", lager.Data{"worker": r.Worker.Name, "team": r.Worker.Team})
			} else if err != nil {
				r.Logger.Error("failed-to-save-worker", err)
			}
		}
	}
}

// Beat checks the target and saves what it found: the worker running (a heartbeat, when
// it was saved running already), or stalled. The check's failures are logged.
func (r *Registrar) Beat(ctx context.Context) error {
	ttl := 2 * r.interval()
	assume := !r.granted.IsZero() && r.now().Sub(r.granted) < PermissionsEvery
	cctx, cancel := context.WithTimeout(ctx, r.interval())
	report := r.Target.CheckWith(cctx, tektonrun.CheckOptions{AssumeGranted: assume})
	cancel()
	switch {
	case !report.Granted:
		r.granted = time.Time{}
	case !assume:
		r.granted = r.now()
	}
	logger := r.Logger.WithData(lager.Data{"worker": r.Worker.Name, "target": report.Target})

	w := r.Worker
	if report.OK() && r.Counter != nil {
		cctx, cancel := context.WithTimeout(ctx, r.interval())
		u, err := r.Counter.Usage(cctx)
		cancel()
		if err != nil {
			logger.Error("failed-to-count-containers", err)
		}
		w.ActiveContainers, w.ActiveVolumes = u.Containers, u.Volumes
	}
	if !report.OK() {
		logger.Error("target-not-ready", errors.New(Problems(report)))
		w.State = string(db.WorkerStateStalled)
		r.running = false
		return r.save(w, ttl)
	}
	if st := report.Status; st != nil && st.State != tektonrun.StateRunning {
		// Landed or retired on the cluster (concourse-tekton land, retire): the worker
		// says so, and no build is scheduled on it.
		w.State = string(st.State)
		if r.running || r.state != st.State {
			logger.Info("not-running", lager.Data{"state": st.State, "since": st.Since, "builds": st.Running})
		}
		r.running, r.state = false, st.State
		return r.save(w, ttl)
	}
	r.state = ""
	if r.running {
		saved, err := r.Workers.HeartbeatWorker(w, ttl)
		if err == nil {
			if saved == nil || r.Lander == nil {
				return nil
			}
			if state := saved.State(); state == db.WorkerStateLanding || state == db.WorkerStateLanded {
				// Landed by an operator (fly land-worker): the target lands too.
				logger.Info("landed-by-operator", lager.Data{"state": state})
				if err := r.Lander.Land(ctx); err != nil {
					logger.Error("failed-to-land-target", err)
					return nil
				}
				// The target lands: a beat that finds it running again (land --undo)
				// saves the worker running, whatever the database says.
				r.running, r.state = false, tektonrun.StateLanding
			}
			return nil
		}
		if !errors.Is(err, db.ErrWorkerNotPresent) {
			return err
		}
		logger.Info("worker-pruned-saving-again")
	}
	w.State = string(db.WorkerStateRunning)
	if err := r.save(w, ttl); err != nil {
		return err
	}
	if !r.running {
		logger.Info("running", lager.Data{"server": report.ServerVersion})
	}
	r.running = true
	return nil
}

// save saves the worker, for ttl: its team's when it has one (ErrNoTeam when the team
// does not exist), every team's otherwise.
func (r *Registrar) save(w atc.Worker, ttl time.Duration) error {
	if w.Team == "" {
		_, err := r.Workers.SaveWorker(w, ttl)
		return err
	}
	if r.Teams == nil {
		return fmt.Errorf("worker %s is team %s's, and no team can be found", w.Name, w.Team)
	}
	team, found, err := r.Teams.FindTeam(w.Team)
	if err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("%w: %s", ErrNoTeam, w.Team)
	}
	_, err = team.SaveWorker(w, ttl)
	return err
}

// Problems says, in one line, why a target's check failed.
func Problems(r tektonrun.CheckReport) string {
	var out []string
	switch {
	case !r.Reachable:
		out = append(out, "the API server does not answer")
	case !r.TektonInstalled:
		out = append(out, "Tekton (tekton.dev/v1 pipelineruns) is not installed")
	}
	if len(r.Missing) > 0 {
		perms := make([]string, len(r.Missing))
		for i, p := range r.Missing {
			perms[i] = p.String()
		}
		out = append(out, "not allowed to "+strings.Join(perms, ", "))
	}
	if r.PodSecurity.Blocks() {
		out = append(out, fmt.Sprintf("the namespace's Pod Security level %q rejects the build's pods", r.PodSecurity.Level))
	}
	if r.Err != nil {
		out = append(out, r.Err.Error())
	}
	if len(out) == 0 {
		return "ok"
	}
	return strings.Join(out, "; ")
}
