package tektonengine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"code.cloudfoundry.org/lager/v3"
	"code.cloudfoundry.org/lager/v3/lagerctx"
	"github.com/concourse/concourse/atc"
	"github.com/concourse/concourse/atc/db"
	"github.com/concourse/concourse/atc/engine"
	atcevent "github.com/concourse/concourse/atc/event"
	"github.com/concourse/concourse/atc/exec"

	"github.com/concourse-tekton/concourse-tekton/concourse/event"
	"github.com/concourse-tekton/concourse-tekton/internal/transient"
	"github.com/concourse-tekton/concourse-tekton/tektonrun"
	"github.com/concourse-tekton/concourse-tekton/tektonrun/buildevents"
	"github.com/concourse-tekton/concourse-tekton/translate"
)

// schema is the build schema the ATC's planner writes, the only one the stepper reads
// (as Concourse's own).
const schema = "exec.v2"

// Defaults of StepperFactory's timings.
const (
	// DefaultSettle is how long the stepper waits for more of a build's saved events
	// when it attaches to a running build (see readSaved).
	DefaultSettle = 2 * time.Second
	// DefaultAbortRetry is how often an abort that failed is tried again while the run
	// goes on.
	DefaultAbortRetry = 5 * time.Second
)

// StepperFactory runs job and one-off builds on the cluster, each as one run of its
// whole plan (on one of several targets: Pool). Check builds run there too when Checks
// is set (a one-step run of the check, its version saved through the ATC's database as
// Concourse's check step saves it); else they go to Fallback.
type StepperFactory struct {
	// Runs starts the builds' runs.
	Runs Runs
	// Checks, when set, runs check builds on the cluster.
	Checks *CheckConfig
	// SetPipelines gives set_pipeline steps the ATC's teams and builds (nil: such a
	// step errors the build).
	SetPipelines *SetPipelineConfig
	// Fallback makes the steppers of check builds when Checks is nil: Concourse's own.
	Fallback engine.StepperFactory
	// Containers, when set, records the containers of job and one-off builds' steps on
	// their workers, so that fly intercept finds them (nil: none recorded).
	Containers ContainerWorkers
	// Artifacts, when set, keeps one-off builds' artifacts: the inputs fly execute
	// uploads, the outputs it downloads (nil: a build with either errors).
	Artifacts Artifacts
	// TaskCaches, when set, are the ATC's records of jobs' task caches, which job builds
	// honour and add to, so that fly clear-task-cache clears them (nil: a job's caches
	// are kept until its volumes go).
	TaskCaches TaskCaches
	// Settle and AbortRetry: see DefaultSettle and DefaultAbortRetry (zero: those).
	Settle     time.Duration
	AbortRetry time.Duration
	// Now is the clock of the error events the stepper saves itself (nil: time.Now).
	Now func() time.Time
}

var _ engine.StepperFactory = (*StepperFactory)(nil)

// StepperForBuild returns the stepper of a build. The engine calls it with the build's
// whole plan (state.Run(ctx, build.PrivatePlan())), and the step it returns runs all of
// it.
func (f *StepperFactory) StepperForBuild(build db.Build) (exec.Stepper, error) {
	if isCheck(build) && f.Checks != nil {
		if build.Schema() != schema {
			return nil, fmt.Errorf("build schema %q not supported (want %s)", build.Schema(), schema)
		}
		return func(plan atc.Plan) exec.Step {
			switch {
			case plan.Check == nil:
				return errorStep{build: build, plan: plan, now: f.Now, err: errors.New("a check build's plan is not a check")}
			}
			return &checkStep{factory: f, config: f.Checks, build: build, plan: plan}
		}, nil
	}
	if isCheck(build) {
		if f.Fallback == nil {
			return nil, errors.New("check builds need Concourse's own engine, and none was given")
		}
		return f.Fallback.StepperForBuild(build)
	}
	if build.Schema() != schema {
		return nil, fmt.Errorf("build schema %q not supported (want %s)", build.Schema(), schema)
	}
	return func(plan atc.Plan) exec.Step {
		return &buildStep{factory: f, build: build, plan: plan}
	}, nil
}

// isCheck tells a check build: lidar's, or fly check-resource's.
func isCheck(b db.Build) bool {
	return b.Name() == db.CheckBuildName || b.ResourceID() != 0 || b.ResourceTypeID() != 0
}

// Ref is what a build's run is started for: its names and its identity in the ATC.
func Ref(b db.Build) BuildRef {
	meta := tektonrun.BuildMeta{Team: b.TeamName(), Pipeline: b.PipelineName(), Job: b.JobName(), Build: b.Name(), InstanceVars: b.PipelineInstanceVars()}
	withIDs(&meta, b)
	if b.JobID() == 0 {
		// A one-off build's name is its ID anyway; say so, whatever it is called.
		meta.Build = strconv.Itoa(b.ID())
	}
	return BuildRef{Meta: meta, ID: b.ID(), Started: b.StartTime(), OneOff: b.JobID() == 0}
}

// withIDs gives meta the build's IDs and creator, which its steps see as Concourse's do
// (BUILD_ID, BUILD_TEAM_ID, BUILD_PIPELINE_ID, BUILD_JOB_ID, BUILD_CREATED_BY).
func withIDs(meta *tektonrun.BuildMeta, b db.Build) {
	meta.BuildID, meta.TeamID, meta.PipelineID, meta.JobID = int64(b.ID()), int64(b.TeamID()), int64(b.PipelineID()), int64(b.JobID())
	if c := b.CreatedBy(); c != nil {
		meta.CreatedBy = *c
	}
}

// buildStep runs one build's plan as one run.
type buildStep struct {
	factory *StepperFactory
	build   db.Build
	plan    atc.Plan
}

var _ exec.Step = (*buildStep)(nil)

// Run runs the build and returns how it ended, as the engine reads it: (true, nil)
// succeeded, (false, nil) failed, context.Canceled aborted, any other error errored, an
// exec.Retriable the build's tracking lost (the engine leaves the build running and runs
// it again later, which attaches to its run). When ctx is cancelled (the build was
// aborted), Run aborts the run and keeps saving its events until it has ended, so that
// the on_abort and ensure hooks show.
func (s *buildStep) Run(ctx context.Context, state exec.RunState) (bool, error) {
	logger := lagerctx.FromContext(ctx).Session("tekton")
	// The run outlives an abort: everything but noticing it uses this context.
	runCtx := context.WithoutCancel(ctx)

	planJSON, err := json.Marshal(s.plan)
	if err != nil {
		return false, fmt.Errorf("encoding the build plan: %w", err)
	}
	ref := Ref(s.build).WithCredentials(state)
	ref.TaskCaches = s.taskCacheRecords(runCtx, logger)
	if ref.OneOff {
		ref.Uploads = s.artifactSource()
	}
	run, err := s.factory.Runs.Start(runCtx, planJSON, ref)
	if err != nil && ctx.Err() == nil && transient.Is(err) {
		// The cluster could not be reached, or asked to be tried again: the build stays
		// pending on it, and the engine runs it again later (as a build whose events could
		// not be followed).
		logger.Info("cluster-unavailable", lager.Data{"error": err.Error()})
		return false, exec.Retriable{Cause: err}
	}
	if err != nil {
		logger.Error("failed-to-start", err)
		s.saveError(logger, planID(err, s.plan.ID), err.Error())
		if ctx.Err() != nil {
			return false, context.Canceled
		}
		return false, err
	}
	logger = logger.WithData(lager.Data{"run": run.Name(), "attached": run.Attached()})
	logger.Info("following")

	var saved savedEvents
	if run.Attached() {
		if saved, err = readSaved(runCtx, s.build, or(s.factory.Settle, DefaultSettle)); err != nil {
			return false, exec.Retriable{Cause: err}
		}
	}
	for _, w := range run.Warnings() {
		s.save(logger, atcevent.Log{Time: s.now().Unix(), Origin: atcevent.Origin{ID: atcevent.OriginID(s.plan.ID), Source: atcevent.OriginSourceStderr}, Payload: "warning: " + w + "\n"})
	}

	followCtx, stop := context.WithCancel(runCtx)
	defer stop()
	go s.abortOnCancel(ctx, followCtx, run, logger)

	outs := newOutputs(s.build, s.plan, state, s.factory.resourceConfigs())
	pipelines := newPipelineSetter(s.build, s.plan, state, s.factory.SetPipelines, saved)
	containers := newContainers(s.factory.Containers, s.build, s.plan)
	var stopped *setPipelineStopped
	// unreadable is an event the ATC cannot store: the same every time, so not retried.
	var unreadable error
	status, err := run.Events(followCtx, func(e buildevents.Event) error {
		if _, ok := e.Event.(event.Status); ok {
			// The ATC saves the build's status itself: started when it started the
			// build, the last one from what Run returns.
			return nil
		}
		if e.Pipeline != nil {
			return pipelines.set(runCtx, logger, *e.Pipeline)
		}
		// Before the saved events are skipped: a web node that stopped between saving
		// the event and recording the container records it when it attaches.
		containers.record(logger, e)
		ae, err := atcEvent(e.Event)
		if err != nil {
			unreadable = err
			return err
		}
		ae = shownTaskConfig(ae, state)
		if dup, err := saved.take(ae); err != nil || dup {
			return err
		}
		outs.record(logger, ae)
		return s.build.SaveEvent(ae)
	})
	switch {
	case err == nil:
	case errors.As(err, &stopped):
		// The step's end is saved; the steps after it must not go on.
		if abortErr := run.Abort(runCtx); abortErr != nil {
			logger.Error("failed-to-abort", abortErr)
		}
		return stopped.result()
	case errors.Is(err, ErrRunGone):
		s.saveError(logger, s.plan.ID, err.Error())
		return false, err
	case unreadable != nil:
		// The build can no longer be shown: it errors, and its run is stopped.
		s.saveError(logger, s.plan.ID, err.Error())
		if abortErr := run.Abort(runCtx); abortErr != nil {
			logger.Error("failed-to-abort", abortErr)
		}
		return false, err
	case ctx.Err() != nil:
		// Aborted, and the run can no longer be followed: the build ends aborted.
		logger.Error("failed-to-follow-aborted-run", err)
		return false, context.Canceled
	default:
		logger.Error("failed-to-follow", err)
		return false, exec.Retriable{Cause: err}
	}
	logger.Info("ended", lager.Data{"status": status})
	s.recordTaskCaches(runCtx, logger, run)
	if err := s.saveOutputs(runCtx, logger, run); err != nil {
		logger.Error("failed-to-save-outputs", err)
		return false, err
	}
	switch status {
	case event.BuildStatusSucceeded:
		return true, nil
	case event.BuildStatusFailed:
		return false, nil
	case event.BuildStatusAborted:
		return false, context.Canceled
	}
	return false, fmt.Errorf("the build's run %s ended %s", run.Name(), status)
}

// abortOnCancel aborts the run once ctx is cancelled, until it succeeds or the run is no
// longer followed.
func (s *buildStep) abortOnCancel(ctx, followCtx context.Context, run Run, logger lager.Logger) {
	select {
	case <-followCtx.Done():
		return
	case <-ctx.Done():
	}
	logger.Info("aborting")
	for {
		err := run.Abort(followCtx)
		if err == nil || followCtx.Err() != nil {
			return
		}
		logger.Error("failed-to-abort", err)
		select {
		case <-followCtx.Done():
			return
		case <-time.After(or(s.factory.AbortRetry, DefaultAbortRetry)):
		}
	}
}

// saveError saves an error event of the build, as the engine does when a build cannot
// start, so that fly and the web UI say why it errored.
func (s *buildStep) saveError(logger lager.Logger, id atc.PlanID, message string) {
	s.save(logger, atcevent.Error{Message: message, Origin: atcevent.Origin{ID: atcevent.OriginID(id)}, Time: s.now().Unix()})
}

func (s *buildStep) save(logger lager.Logger, e atc.Event) {
	if err := s.build.SaveEvent(e); err != nil {
		logger.Error("failed-to-save-event", err, lager.Data{"event": e.EventType()})
	}
}

func (s *buildStep) now() time.Time {
	if s.factory.Now != nil {
		return s.factory.Now()
	}
	return time.Now()
}

// planID is the plan an error is about: the step a compile error names, the step no
// worker can run, else the root.
func planID(err error, root atc.PlanID) atc.PlanID {
	var unsupported *translate.UnsupportedError
	if errors.As(err, &unsupported) && unsupported.PlanID != "" {
		return atc.PlanID(unsupported.PlanID)
	}
	var noWorkers *NoWorkersError
	if errors.As(err, &noWorkers) && noWorkers.PlanID != "" {
		return noWorkers.PlanID
	}
	return root
}

func or(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// resourceConfigs is the ATC's resource config factory, when the factory has it.
func (f *StepperFactory) resourceConfigs() db.ResourceConfigFactory {
	if f.Checks == nil {
		return nil
	}
	return f.Checks.ResourceConfigFactory
}
