package tektonengine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"code.cloudfoundry.org/clock"
	"code.cloudfoundry.org/lager/v3"
	"github.com/concourse/concourse/atc"
	"github.com/concourse/concourse/atc/configvalidate"
	"github.com/concourse/concourse/atc/db"
	"github.com/concourse/concourse/atc/engine"
	atcevent "github.com/concourse/concourse/atc/event"
	"github.com/concourse/concourse/atc/exec"
	"github.com/concourse/concourse/atc/policy"

	"github.com/concourse-tekton/concourse-tekton/tektonrun/buildevents"
)

// SetPipelineConfig is what set_pipeline steps need of the ATC to set pipelines: its
// teams, its builds (the parent build saves the pipeline) and its policy checker.
type SetPipelineConfig struct {
	TeamFactory  db.TeamFactory
	BuildFactory db.BuildFactory
	// PolicyChecker checks the run_set_pipeline action (nil: no policy).
	PolicyChecker policy.Checker
	// Clock is the delegate's (nil: the real one).
	Clock clock.Clock
}

// pipelineSetter sets the pipelines of a build's set_pipeline steps, as Concourse's
// SetPipelineStep does once it has read the config (exec/set_pipeline_step.go), with
// Concourse's own delegate (engine.NewSetPipelineStepDelegate), teams and builds: the
// runner read and validated the child pipeline and handed it over (the event's Pipeline,
// after the step's start and before its finish), the setter validates it again with
// Concourse's validator, finds the team (only the main team sets another team's
// pipelines), diffs it against the pipeline's config, and saves it as the build's.
//
// The run has gone on meanwhile: the step's pod succeeded, so the steps after it may have
// started. When the ATC's part fails the step (an invalid pipeline) or errors it (no such
// team, not permitted, a failed save), the setter saves the step's end as Concourse would
// (finish, or an error event) and returns a *setPipelineStopped: the run is aborted, and
// the build ends failed or errored.
type pipelineSetter struct {
	build  db.Build
	state  exec.RunState
	config *SetPipelineConfig
	plans  map[atc.PlanID]atc.SetPipelinePlan
	// saved are the events the build had when the stepper attached to its run.
	saved savedEvents
}

func newPipelineSetter(build db.Build, plan atc.Plan, state exec.RunState, config *SetPipelineConfig, saved savedEvents) *pipelineSetter {
	plans := map[atc.PlanID]atc.SetPipelinePlan{}
	plan.Each(func(p *atc.Plan) {
		if p.SetPipeline != nil {
			plans[p.ID] = *p.SetPipeline
		}
	})
	return &pipelineSetter{build: build, state: state, config: config, plans: plans, saved: saved}
}

// setPipelineStopped is a set_pipeline step that the ATC's part ended other than its run
// says: failed, or errored with err. Its end is saved; the run must be stopped.
type setPipelineStopped struct {
	id  atc.PlanID
	err error
}

func (e *setPipelineStopped) Error() string {
	if e.err == nil {
		return fmt.Sprintf("set_pipeline step %s failed", e.id)
	}
	return fmt.Sprintf("set_pipeline step %s: %v", e.id, e.err)
}

func (e *setPipelineStopped) Unwrap() error { return e.err }

// result is how the build ends: failed, or errored.
func (e *setPipelineStopped) result() (bool, error) {
	return false, e.err
}

// set sets the pipeline p names, and saves what Concourse's step says meanwhile. An error
// is a *setPipelineStopped.
func (s *pipelineSetter) set(ctx context.Context, logger lager.Logger, p buildevents.PipelineToSet) error {
	id := atc.PlanID(p.Origin.ID)
	logger = logger.Session("set-pipeline-step", lager.Data{"plan": id, "step-name": s.plans[id].Name, "job-id": s.build.JobID()})
	if s.saved.setPipelineChanged(id) {
		// A web node before this one set it already (the run was attached to).
		logger.Info("already-set")
		return nil
	}
	policyChecker, clk := policy.Checker(nil), clock.NewClock()
	if s.config != nil {
		policyChecker = s.config.PolicyChecker
		if s.config.Clock != nil {
			clk = s.config.Clock
		}
	}
	delegate := engine.NewSetPipelineStepDelegate(s.build, id, s.state, clk, policyChecker)
	ok, err := s.run(ctx, logger, delegate, id, p)
	switch {
	case err != nil:
		logger.Error("failed", err)
		// Concourse's LogErrorStep saves a step's error so.
		delegate.Errored(logger, err.Error())
		return &setPipelineStopped{id: id, err: err}
	case !ok:
		return &setPipelineStopped{id: id}
	}
	return nil
}

// run is SetPipelineStep.run from the point where the config was fetched: (false, nil) is
// a step that failed, whose finish is saved.
func (s *pipelineSetter) run(ctx context.Context, logger lager.Logger, delegate exec.SetPipelineStepDelegate, id atc.PlanID, p buildevents.PipelineToSet) (bool, error) {
	if _, ok := s.plans[id]; !ok {
		return false, fmt.Errorf("step %s handed over a pipeline to set, but it is no set_pipeline step", id)
	}
	if p.Error != "" {
		return false, errors.New(p.Error)
	}
	if s.config == nil || s.config.TeamFactory == nil || s.config.BuildFactory == nil {
		return false, errors.New("set_pipeline steps need the ATC's teams and builds, which the build engine was not given")
	}
	var atcConfig atc.Config
	if err := atc.UnmarshalConfig(p.Config, &atcConfig); err != nil {
		return false, err
	}
	stdout, stderr := delegate.Stdout(), delegate.Stderr()

	warnings, errs := configvalidate.Validate(atcConfig)
	for _, warning := range warnings {
		fmt.Fprintf(stderr, "WARNING: %s\n", warning.Message)
	}
	if len(errs) > 0 {
		fmt.Fprintln(stderr, "invalid pipeline:")
		for _, e := range errs {
			fmt.Fprintf(stderr, "- %s", e)
		}
		delegate.Finished(logger, false)
		return false, nil
	}

	team, err := s.team(p.Team)
	if err != nil {
		return false, err
	}
	ref := atc.PipelineRef{Name: p.Pipeline, InstanceVars: atc.InstanceVars(p.InstanceVars)}
	pipeline, found, err := team.Pipeline(ref)
	if err != nil {
		return false, err
	}
	fromVersion := db.ConfigVersion(0)
	existingConfig := atc.Config{}
	if found {
		fromVersion = pipeline.ConfigVersion()
		if existingConfig, err = pipeline.Config(); err != nil {
			return false, err
		}
	}

	if !existingConfig.Diff(stdout, atcConfig) {
		logger.Debug("no-diff")
		fmt.Fprintf(stdout, "no changes to apply.\n")
		if found {
			if err := pipeline.SetParentIDs(s.build.JobID(), s.build.ID()); err != nil {
				return false, err
			}
		}
		delegate.SetPipelineChanged(logger, false)
		return true, nil
	}

	if s.config.PolicyChecker != nil {
		if err := delegate.CheckRunSetPipelinePolicy(&atcConfig); err != nil {
			return false, err
		}
	}

	fmt.Fprintf(stdout, "setting pipeline: %s\n", ref.String())
	delegate.SetPipelineChanged(logger, true)

	parentBuild, found, err := s.config.BuildFactory.Build(s.build.ID())
	if err != nil {
		return false, err
	}
	if !found {
		return false, errors.New("set_pipeline step not attached to a buildID")
	}
	pipeline, _, err = parentBuild.SavePipeline(ref, team.ID(), atcConfig, fromVersion, false)
	if err != nil {
		if errors.Is(err, db.ErrSetByNewerBuild) {
			fmt.Fprintln(stderr, "\x1b[1;33mWARNING: the pipeline was not saved because it was already saved by a newer build\x1b[0m")
			return true, nil
		}
		return false, err
	}
	fmt.Fprintf(stdout, "done\n")
	logger.Info("saved-pipeline", lager.Data{"team": team.Name(), "pipeline": pipeline.Name()})
	return true, nil
}

// team is the team the pipeline is set in: the build's, or the one the step names, which
// only the main (admin) team may name when it is another.
func (s *pipelineSetter) team(name string) (db.Team, error) {
	teams := s.config.TeamFactory
	if name == "" {
		return teams.GetByID(s.build.TeamID()), nil
	}
	current, found, err := teams.FindTeam(s.build.TeamName())
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("team %s not found", s.build.TeamName())
	}
	target, found, err := teams.FindTeam(name)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("team %s not found", name)
	}
	if target.ID() != current.ID() && !current.Admin() {
		return nil, fmt.Errorf("only %s team can set another team's pipeline", atc.DefaultTeamName)
	}
	return target, nil
}

// setPipelineChanged tells whether the build has the set-pipeline-changed event of step
// id: the pipeline was set (or found unchanged) already.
func (s savedEvents) setPipelineChanged(id atc.PlanID) bool {
	for k, n := range s {
		if n == 0 {
			continue
		}
		var e atcevent.SetPipelineChanged
		typ, payload, ok := splitSavedKey(k)
		if ok && typ == atcevent.EventTypeSetPipelineChanged && json.Unmarshal(payload, &e) == nil && atc.PlanID(e.Origin.ID) == id {
			return true
		}
	}
	return false
}

// splitSavedKey is savedKey's parts: the type and the payload.
func splitSavedKey(k string) (atc.EventType, []byte, bool) {
	typ, rest, ok := strings.Cut(k, "\x00")
	if !ok {
		return "", nil, false
	}
	_, payload, ok := strings.Cut(rest, "\x00")
	return atc.EventType(typ), []byte(payload), ok
}
