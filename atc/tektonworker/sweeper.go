package tektonworker

import (
	"context"
	"time"

	"code.cloudfoundry.org/lager/v3"

	"github.com/concourse-tekton/concourse-tekton/atc/tektonengine"
	"github.com/concourse-tekton/concourse-tekton/gc"
	"github.com/concourse-tekton/concourse-tekton/tektonrun"
)

// DefaultSweepInterval is how often the web node sweeps its namespace.
const DefaultSweepInterval = 10 * time.Minute

// ATCRules are how a namespace is swept under the web node, whose database keeps every
// build's events (and reaps them itself, by build_log_retention): of each job's builds
// the cluster keeps the newest (its pods while it failed and is to be intercepted, within
// failedGrace), the one whose volume holds the job's caches, and those running; one-off
// builds go once they have ended for oneOffGrace; pods go once their build ended, as
// Concourse's containers, but a check build's, which are its check's container while the
// ATC wants it (the worker's reporter deletes the run then).
func ATCRules(failedGrace, oneOffGrace time.Duration) gc.Rules {
	return gc.Rules{Defaults: gc.Defaults{MaxBuilds: 1}, FailedGrace: failedGrace, OneOffGrace: oneOffGrace, OneOffsEnd: true, KeepPodsOf: tektonengine.AnnotationCheck,
		ResourceCacheTTL: gc.DefaultResourceCacheTTL}
}

// Sweeper sweeps a target (gc.Sweep) at an interval while the web node runs, as
// Concourse's garbage collector runs in it. The first sweep is an interval after it
// starts, once the engine has taken back the builds that ran across a restart.
type Sweeper struct {
	Target  *tektonrun.Target
	Options gc.Options
	// Interval between sweeps (zero: DefaultSweepInterval); a sweep may take at most as
	// long.
	Interval time.Duration
	Logger   lager.Logger

	// sweep is gc.Sweep (tests replace it).
	sweep func(context.Context, *tektonrun.Target, gc.Options) (gc.Report, error)
}

func (s *Sweeper) interval() time.Duration {
	if s.Interval > 0 {
		return s.Interval
	}
	return DefaultSweepInterval
}

// Run sweeps until ctx ends. A failed sweep is logged, and the next one tries again.
func (s *Sweeper) Run(ctx context.Context) error {
	t := time.NewTicker(s.interval())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			s.Sweep(ctx)
		}
	}
}

// Sweep sweeps once, and logs what went and what failed.
func (s *Sweeper) Sweep(ctx context.Context) {
	sweep := s.sweep
	if sweep == nil {
		sweep = gc.Sweep
	}
	ctx, cancel := context.WithTimeout(ctx, s.interval())
	defer cancel()
	start := time.Now()
	r, err := sweep(ctx, s.Target, s.Options)
	for _, i := range r.Deleted {
		s.Logger.Debug("deleted", lager.Data{"kind": i.Kind, "name": i.Name, "build": i.Build, "reason": i.Reason})
	}
	for _, f := range r.Failed {
		s.Logger.Info("failed-to-delete", lager.Data{"kind": f.Kind, "name": f.Name, "build": f.Build, "error": f.Error})
	}
	if err != nil {
		s.Logger.Error("failed-to-sweep", err)
		return
	}
	s.Logger.Info("swept", lager.Data{"deleted": len(r.Deleted), "kept": len(r.Kept), "failed": len(r.Failed), "duration": time.Since(start).String()})
}
