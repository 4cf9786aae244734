package tektonengine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"code.cloudfoundry.org/clock"
	"code.cloudfoundry.org/lager/v3"
	"code.cloudfoundry.org/lager/v3/lagerctx"
	"github.com/concourse/concourse/atc"
	"github.com/concourse/concourse/atc/creds"
	"github.com/concourse/concourse/atc/db"
	"github.com/concourse/concourse/atc/engine"
	"github.com/concourse/concourse/atc/exec"
	"github.com/concourse/concourse/atc/metric"
	"github.com/concourse/concourse/atc/policy"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/event"
	"github.com/concourse-tekton/concourse-tekton/tektonrun"
	"github.com/concourse-tekton/concourse-tekton/tektonrun/buildevents"
)

// CheckConfig is what check builds (lidar's, fly check-resource's) need of the ATC to
// run on the cluster: they save the versions they find through its database, as
// Concourse's check step does.
type CheckConfig struct {
	ResourceConfigFactory db.ResourceConfigFactory
	// ResourceCacheFactory makes the resource cache of a custom type's image, which the
	// config of a resource of that type is created by (nil: checks of such resources
	// error).
	ResourceCacheFactory db.ResourceCacheFactory
	RateLimiter          engine.RateLimiter
	PolicyChecker        policy.Checker
	// DefaultTimeout is the check's timeout when its plan has none
	// (--global-resource-check-timeout).
	DefaultTimeout time.Duration
	// Clock is the check delegate's (nil: the real one).
	Clock clock.Clock
	// KeepRuns keeps a check's PipelineRun when it has ended (by default it is deleted:
	// a resource is checked every minute).
	KeepRuns bool
	// CheckContainers runs the checks of resources in their check sessions' containers
	// (runInSession), where they can: a pod per resource config that serves its checks
	// for as long as Concourse keeps the session, rather than a PipelineRun per check.
	CheckContainers bool
}

// checkStep runs a check build's plan, a check of a resource (type, prototype), as
// exec.CheckStep does, but with the check itself run as a one-step run on the cluster:
// the same delegate (engine.NewCheckDelegate) finds the resource config's scope, points
// the resource at it, decides whether to run and takes the checking lock, records the
// start and end of the check; the versions found are saved, in order, with the scope's
// SaveVersions. The run gives every version the check script printed (from its results,
// or, when they are more than Tekton's results carry, from the frame its runner wrote in
// its log: see runspec.CheckedVersions).
//
// A check of a resource of a custom type fetches the type's image first, as Concourse's
// FetchImage does (fetchTypeImage): the type's check runs, and the resource config is
// created by the resource cache of the type's image at the version it found.
type checkStep struct {
	factory *StepperFactory
	config  *CheckConfig
	build   db.Build
	plan    atc.Plan
}

var _ exec.Step = (*checkStep)(nil)

// Run runs the check; an error is saved as the build's error event, as exec.LogError does
// around Concourse's check step.
func (s *checkStep) Run(ctx context.Context, state exec.RunState) (bool, error) {
	logger := lagerctx.FromContext(ctx).Session("tekton-check", lager.Data{"step-name": s.plan.Check.Name})
	ctx = lagerctx.NewContext(ctx, logger)
	clk := s.config.Clock
	if clk == nil {
		clk = clock.NewClock()
	}
	delegate := engine.NewCheckDelegate(s.build, s.plan, state, clk, s.config.RateLimiter, s.config.PolicyChecker)
	ok, err := s.run(ctx, logger, state, delegate)
	if err != nil {
		message := err.Error()
		switch {
		case errors.Is(err, context.Canceled):
			message = exec.AbortedLogMessage
		case errors.Is(err, context.DeadlineExceeded):
			message = exec.TimeoutLogMessage
		}
		logger.Info("errored", lager.Data{"error": err.Error()})
		delegate.Errored(logger, message)
	}
	return ok, err
}

// run is exec.CheckStep.run with runCheck on the cluster.
func (s *checkStep) run(ctx context.Context, logger lager.Logger, state exec.RunState, delegate exec.CheckDelegate) (bool, error) {
	plan := s.plan.Check
	delegate.Initializing(logger)

	source, err := creds.NewSource(state, plan.Source).Evaluate()
	if err != nil {
		return false, fmt.Errorf("resource config creds evaluation: %w", err)
	}
	imageVersion, imageCache, err := s.fetchTypeImage(ctx, state, plan.TypeImage)
	if err != nil {
		return false, err
	}
	// The check's run pulls the image at the version the cache has.
	s.plan = pinTypeImage(s.plan, imageVersion)
	resourceConfig, err := s.config.ResourceConfigFactory.FindOrCreateResourceConfig(plan.Type, source, imageCache)
	if err != nil {
		return false, fmt.Errorf("create resource config: %w", err)
	}
	scope, err := delegate.FindOrCreateScope(resourceConfig)
	if err != nil {
		return false, fmt.Errorf("create resource config scope: %w", err)
	}
	if err := delegate.PointToCheckedConfig(scope); err != nil {
		return false, fmt.Errorf("update resource config scope: %w", err)
	}
	lock, run, err := delegate.WaitToRun(ctx, scope)
	if err != nil {
		return false, fmt.Errorf("wait: %w", err)
	}
	logger.Debug("after-wait-to-run", lager.Data{"run": run, "scope": scope.ID()})

	if !run {
		latest, found, err := scope.LatestVersion()
		if err != nil {
			return false, fmt.Errorf("get latest version: %w", err)
		}
		if found {
			state.StoreResult(s.plan.ID, atc.Version(latest.Version()))
		}
		delegate.Finished(logger, true)
		return true, nil
	}
	defer func() {
		if err := lock.Release(); err != nil {
			logger.Error("failed-to-release-lock", err)
		}
	}()

	interval := checkInterval(*plan)

	fromVersion := plan.FromVersion
	if fromVersion == nil {
		latest, found, err := scope.LatestVersion()
		if err != nil {
			return false, fmt.Errorf("get latest version: %w", err)
		}
		if found {
			fromVersion = atc.Version(latest.Version())
		}
	}

	metric.Metrics.ChecksStarted.Inc()
	// For a check build of its own, this starts the build in the database (an in-memory
	// build of lidar's gets its ID): the run is named after it.
	if _, buildID, err := delegate.UpdateScopeLastCheckStartTime(scope, !plan.IsResourceCheck()); err != nil {
		return false, fmt.Errorf("update check start time: %w", err)
	} else if buildID != 0 {
		logger = logger.WithData(lager.Data{"build": buildID})
		ctx = lagerctx.NewContext(ctx, logger)
	}

	versions, succeeded, runErr := s.runCheck(ctx, logger, state, fromVersion, resourceConfig)
	if runErr != nil || !succeeded {
		metric.Metrics.ChecksFinishedWithError.Inc()
		if _, err := delegate.UpdateScopeLastCheckEndTime(scope, false, interval); err != nil {
			return false, fmt.Errorf("update check end time: %w", err)
		}
		if errors.Is(runErr, context.DeadlineExceeded) {
			delegate.Errored(logger, exec.TimeoutLogMessage)
			return false, nil
		}
		if runErr == nil {
			delegate.Finished(logger, false)
			return false, nil
		}
		return false, fmt.Errorf("run check: %w", runErr)
	}

	metric.Metrics.ChecksFinishedWithSuccess.Inc()
	if err := scope.SaveVersions(db.NewSpanContext(ctx), versions); err != nil {
		return false, fmt.Errorf("save versions: %w", err)
	}
	if len(versions) > 0 {
		state.StoreResult(s.plan.ID, versions[len(versions)-1])
	}
	if _, err := delegate.UpdateScopeLastCheckEndTime(scope, true, interval); err != nil {
		return false, fmt.Errorf("update check end time: %w", err)
	}
	delegate.Finished(logger, true)
	return true, nil
}

// runCheck runs the check from fromVersion in its check session's container
// (runInSession) or else as a run of its own, saves its events but the
// ones the delegate saves (the check's own initialize-check and finish, its error), and returns the versions it
// found and whether the script succeeded; an error says it could not run (a timeout:
// context.DeadlineExceeded).
func (s *checkStep) runCheck(ctx context.Context, logger lager.Logger, state exec.RunState, fromVersion atc.Version, config db.ResourceConfig) ([]atc.Version, bool, error) {
	plan := s.plan
	check := *plan.Check
	check.FromVersion = fromVersion
	plan.Check = &check

	ctx, cancel, err := exec.MaybeTimeout(ctx, check.Timeout, s.config.DefaultTimeout)
	if err != nil {
		return nil, false, err
	}
	defer cancel()

	planJSON, err := json.Marshal(plan)
	if err != nil {
		return nil, false, fmt.Errorf("encoding the check plan: %w", err)
	}
	// A check of a custom type's image inside lidar's check of a resource runs before the
	// build has the ID that names the run: Concourse gives it one when a check step
	// selects a worker (BeforeSelectWorker), and so does this.
	if s.build.ID() == 0 {
		if err := s.build.OnCheckBuildStart(); err != nil {
			return nil, false, fmt.Errorf("starting the check build: %w", err)
		}
	}
	ref := CheckRef(s.build, check).WithCredentials(state)
	if versions, ok, err, ran := s.runInSession(ctx, logger, plan, planJSON, ref, config); ran {
		return versions, ok, err
	}
	runCtx := context.WithoutCancel(ctx)
	bs := &buildStep{factory: s.factory, build: s.build, plan: plan}
	run, err := s.factory.Runs.Start(runCtx, planJSON, ref)
	if err != nil {
		return nil, false, err
	}
	logger = logger.WithData(lager.Data{"run": run.Name()})
	logger.Info("following")
	// With its container recorded, the run stays for fly intercept --check until the
	// container goes (tektonworker's Reporter deletes it then); else it goes now.
	if !s.config.KeepRuns && s.factory.Containers == nil {
		defer func() {
			if err := run.Delete(runCtx); err != nil {
				logger.Error("failed-to-delete-run", err)
			}
		}()
	}
	containers := newCheckContainers(s.factory.Containers, s.build, plan, config, s.factory.Runs)

	followCtx, stop := context.WithCancel(runCtx)
	defer stop()
	go bs.abortOnCancel(ctx, followCtx, run, logger)

	var failure string
	status, err := run.Events(followCtx, func(e buildevents.Event) error {
		containers.record(logger, e)
		return s.saveCheckEvent(plan.ID, e.Event, &failure)
	})
	if err != nil {
		return nil, false, err
	}
	logger.Info("ended", lager.Data{"status": status})
	if ctx.Err() != nil {
		return nil, false, ctx.Err()
	}
	switch {
	case failure != "":
		return nil, false, errors.New(failure)
	case status == event.BuildStatusFailed:
		return nil, false, nil
	case status != event.BuildStatusSucceeded:
		return nil, false, fmt.Errorf("the check's run %s ended %s", run.Name(), status)
	}
	versions, err := checkedVersions(runCtx, run)
	if err != nil {
		return nil, false, err
	}
	return versions, true, nil
}

// saveCheckEvent saves an event of the check of plan id as the build's, but the
// delegate's own (the check's initialize-check and finish) and the build's status; an
// error is not saved but kept in failure, which the check errors with.
func (s *checkStep) saveCheckEvent(id atc.PlanID, e event.Event, failure *string) error {
	switch ev := e.(type) {
	case event.Status:
		return nil
	case event.InitializeCheck:
		// The delegate saves the check's own; the check of its type's image is the run's.
		if ev.Origin.ID == concourse.PlanID(id) {
			return nil
		}
	case event.Finish:
		if ev.Origin.ID == concourse.PlanID(id) {
			return nil
		}
	case event.Error:
		*failure = ev.Message
		return nil
	}
	ae, err := atcEvent(e)
	if err != nil {
		return err
	}
	return s.build.SaveEvent(ae)
}

// CheckRef is what a check build's run is started for: the pipeline's "check-<name>"
// job (the checked resource, type or prototype), the build's ID its name.
func CheckRef(b db.Build, check atc.CheckPlan) BuildRef {
	meta := tektonrun.BuildMeta{Team: b.TeamName(), Pipeline: b.PipelineName(), Job: "check-" + check.Name, Build: fmt.Sprint(b.ID()), InstanceVars: b.PipelineInstanceVars()}
	withIDs(&meta, b)
	meta.Check = true
	return BuildRef{Meta: meta, ID: b.ID(), Started: b.StartTime()}
}

// errorStep is a step that errors at once, saying why.
type errorStep struct {
	build db.Build
	plan  atc.Plan
	err   error
	now   func() time.Time
}

func (s errorStep) Run(ctx context.Context, _ exec.RunState) (bool, error) {
	bs := &buildStep{build: s.build, plan: s.plan, factory: &StepperFactory{Now: s.now}}
	bs.saveError(lagerctx.FromContext(ctx), s.plan.ID, s.err.Error())
	return false, s.err
}

// checkInterval is how long after a check ends the scope's next one is due: the plan's
// check_every, else the web node's default for a resource or for a resource type, as
// Concourse's check step records it.
func checkInterval(plan atc.CheckPlan) time.Duration {
	if plan.Interval.Interval != 0 {
		return plan.Interval.Interval
	}
	if plan.IsResourceCheck() {
		return atc.DefaultCheckInterval
	}
	return atc.DefaultResourceTypeInterval
}
