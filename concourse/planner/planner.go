package planner

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/concourse-tekton/concourse-tekton/concourse"
)

// Options are what a build brings to planning beyond the job's config.
type Options struct {
	// Versions are the versions the build's gets fetch, by get step name (Concourse's build
	// inputs). A get with no version here, and none pinned in the step or on the resource,
	// is planned without one: the backend finds the latest version when the build runs.
	Versions map[string]concourse.Version
	// ManuallyTriggered makes image checks skip their interval, as a manual trigger does.
	ManuallyTriggered bool
	// FirstID is the number plan IDs count up from (the first plan gets FirstID+1).
	// Concourse starts at its process's start time; 0 gives small, stable IDs.
	FirstID int64
}

// UnknownResourceError is a get or put of a resource the pipeline does not have.
type UnknownResourceError struct {
	Resource string
}

func (e UnknownResourceError) Error() string {
	return fmt.Sprintf("unknown resource: %s", e.Resource)
}

// UnknownJobError is a job the pipeline does not have.
type UnknownJobError struct {
	Job       string
	Available []string
}

func (e UnknownJobError) Error() string {
	return fmt.Sprintf("unknown job %q (the pipeline has: %s)", e.Job, joinNames(e.Available))
}

func joinNames(names []string) string {
	if len(names) == 0 {
		return "no jobs"
	}
	out := ""
	for i, n := range names {
		if i > 0 {
			out += ", "
		}
		out += n
	}
	return out
}

// Build is a planned build: its plan, and where in the pipeline each node of the plan
// came from.
type Build struct {
	Plan concourse.Plan
	// Paths map every plan ID to the path of the step that made the node, at the key that
	// names its kind (`jobs[unit].plan[2].task`, `jobs[unit].plan[0].across`), for
	// Pipeline.Diagnostic. A put's implicit get and the image sub-plans of a step are the
	// step's; the job's hooks are at `jobs[unit].on_failure`, its steps as a whole at
	// `jobs[unit].plan`. The nodes of an across substep are those of its template.
	Paths map[concourse.PlanID]concourse.Path
	// Retention is the job's build log retention (concourse.JobConfig.LogRetention).
	Retention *concourse.BuildLogRetention
}

// PlanBuild plans a build of the named job of p, as PlanJob does, and locates each node of
// the plan in p.
func PlanBuild(p *concourse.Pipeline, job string, opts Options) (Build, error) {
	i, err := findJob(&p.Config, job)
	if err != nil {
		return Build{}, err
	}
	j := &p.Config.Jobs[i]
	root := j.StepConfig()
	v := newVisitor(&p.Config, j, opts)
	v.steps = stepPaths(p, j, concourse.Path{concourse.Key("jobs"), concourse.Named(i, j.Name)}, root)
	v.paths = map[concourse.PlanID]concourse.Path{}
	if err := root.Visit(v); err != nil {
		return Build{}, err
	}
	return Build{Plan: v.plan, Paths: v.paths, Retention: j.LogRetention()}, nil
}

// PlanJob plans a build of the named job of cfg.
func PlanJob(cfg *concourse.Config, job string, opts Options) (concourse.Plan, error) {
	i, err := findJob(cfg, job)
	if err != nil {
		return concourse.Plan{}, err
	}
	return Plan(cfg, &cfg.Jobs[i], opts)
}

func findJob(cfg *concourse.Config, job string) (int, error) {
	for i := range cfg.Jobs {
		if cfg.Jobs[i].Name == job {
			return i, nil
		}
	}
	var names []string
	for _, j := range cfg.Jobs {
		names = append(names, j.Name)
	}
	return 0, UnknownJobError{Job: job, Available: names}
}

// Plan builds the plan of one build of job, as Concourse's planner (atc/builds/planner.go)
// would: plan IDs are allocated bottom-up, so children have smaller IDs than their parents.
func Plan(cfg *concourse.Config, job *concourse.JobConfig, opts Options) (concourse.Plan, error) {
	v := newVisitor(cfg, job, opts)
	if err := job.StepConfig().Visit(v); err != nil {
		return concourse.Plan{}, err
	}
	return v.plan, nil
}

func newVisitor(cfg *concourse.Config, job *concourse.JobConfig, opts Options) *visitor {
	v := &visitor{
		cfg:       cfg,
		types:     savedResourceTypes(cfg.ResourceTypes),
		opts:      opts,
		next:      opts.FirstID,
		resources: map[string]*concourse.ResourceConfig{},
		protos:    map[string]*concourse.Prototype{},
	}
	for i := range cfg.Resources {
		v.resources[cfg.Resources[i].Name] = &cfg.Resources[i]
	}
	for i := range cfg.Prototypes {
		v.protos[cfg.Prototypes[i].Name] = &cfg.Prototypes[i]
	}
	return v
}

type visitor struct {
	cfg       *concourse.Config
	types     resourceTypes
	opts      Options
	next      int64
	resources map[string]*concourse.ResourceConfig
	protos    map[string]*concourse.Prototype

	// steps locate the job's step configs (see stepPaths); nil when planning without the
	// pipeline's document. paths are the plan's nodes located so far.
	steps map[concourse.StepConfig]concourse.Path
	paths map[concourse.PlanID]concourse.Path

	// plan is the result of the last Visit.
	plan concourse.Plan
}

var _ concourse.StepVisitor = (*visitor)(nil)

func (v *visitor) newID() concourse.PlanID {
	v.next++
	return concourse.PlanID(strconv.FormatInt(v.next, 16))
}

func (v *visitor) sub(s concourse.StepConfig) (concourse.Plan, error) {
	if err := s.Visit(v); err != nil {
		return concourse.Plan{}, err
	}
	return v.plan, nil
}

func (v *visitor) VisitTask(s *concourse.TaskStep) error {
	v.emit(s, concourse.Plan{ID: v.newID(), Task: &concourse.TaskPlan{
		Name:              s.Name,
		Privileged:        s.Privileged,
		Hermetic:          s.Hermetic,
		Tags:              s.Tags,
		ConfigPath:        s.ConfigPath,
		Config:            s.Config,
		Limits:            s.Limits,
		ImageArtifactName: s.ImageArtifactName,
		Vars:              s.Vars,
		Params:            s.Params,
		InputMapping:      s.InputMapping,
		OutputMapping:     s.OutputMapping,
		Timeout:           s.Timeout,
		ResourceTypes:     v.types,
		CheckSkipInterval: v.opts.ManuallyTriggered,
	}})
	return nil
}

func (v *visitor) VisitGet(s *concourse.GetStep) error {
	name := s.ResourceName()
	r, ok := v.resources[name]
	if !ok {
		return UnknownResourceError{Resource: name}
	}
	tags := s.Tags
	id := v.newID()
	get := &concourse.GetPlan{
		Name:     s.Name,
		Type:     r.Type,
		Resource: name,
		Source:   v.types.sourceWithDefaults(r.Type, r.Source),
		Params:   s.Params,
		Version:  v.version(s, r),
		Tags:     tags,
		Timeout:  s.Timeout,
	}
	get.TypeImage = v.types.imageForType(id, r.Type, tags, v.opts.ManuallyTriggered)
	v.emit(s, concourse.Plan{ID: id, Get: get})
	return nil
}

// version is the version a get fetches: the build's input, else a pin on the step, else a
// pin on the resource.
func (v *visitor) version(s *concourse.GetStep, r *concourse.ResourceConfig) *concourse.Version {
	if ver, ok := v.opts.Versions[s.Name]; ok {
		return &ver
	}
	if s.Version != nil && s.Version.Pinned != nil {
		ver := s.Version.Pinned
		return &ver
	}
	if r.Version != nil {
		ver := r.Version
		return &ver
	}
	return nil
}

func (v *visitor) VisitPut(s *concourse.PutStep) error {
	name := s.ResourceName()
	r, ok := v.resources[name]
	if !ok {
		return UnknownResourceError{Resource: name}
	}
	tags := s.Tags
	source := v.types.sourceWithDefaults(r.Type, r.Source)
	putID := v.newID()
	put := concourse.Plan{ID: putID, Put: &concourse.PutPlan{
		Name:                 s.Name,
		Type:                 r.Type,
		Resource:             name,
		Source:               source,
		Params:               s.Params,
		Inputs:               s.Inputs,
		Tags:                 tags,
		Timeout:              s.Timeout,
		ExposeBuildCreatedBy: r.ExposeBuildCreatedBy,
	}}
	put.Put.TypeImage = v.types.imageForType(putID, r.Type, tags, v.opts.ManuallyTriggered)
	if s.NoGet {
		v.emit(s, put)
		return nil
	}
	getID := v.newID()
	from := putID
	get := concourse.Plan{ID: getID, Get: &concourse.GetPlan{
		Name:        s.Name,
		Type:        r.Type,
		Resource:    name,
		Source:      source,
		Params:      s.GetParams,
		VersionFrom: &from,
		Tags:        tags,
		Timeout:     s.Timeout,
	}}
	get.Get.TypeImage = v.types.imageForType(getID, r.Type, tags, v.opts.ManuallyTriggered)
	v.emit(s, concourse.Plan{ID: v.newID(), OnSuccess: &concourse.OnSuccessPlan{Step: put, Next: get}})
	return nil
}

func (v *visitor) VisitRun(s *concourse.RunStep) error {
	object := concourse.Params{}
	if p, ok := v.protos[s.Type]; ok {
		for k, val := range p.Defaults {
			object[k] = val
		}
	}
	for k, val := range s.Params {
		object[k] = val
	}
	if len(object) == 0 {
		object = nil
	}
	v.emit(s, concourse.Plan{ID: v.newID(), Run: &concourse.RunPlan{
		Message:    s.Message,
		Type:       s.Type,
		Object:     object,
		Privileged: s.Privileged,
		Tags:       s.Tags,
		Limits:     s.Limits,
		Timeout:    s.Timeout,
	}})
	return nil
}

func (v *visitor) VisitSetPipeline(s *concourse.SetPipelineStep) error {
	v.emit(s, concourse.Plan{ID: v.newID(), SetPipeline: &concourse.SetPipelinePlan{
		Name:         s.Name,
		File:         s.File,
		Team:         s.Team,
		Vars:         s.Vars,
		VarFiles:     s.VarFiles,
		InstanceVars: s.InstanceVars,
	}})
	return nil
}

func (v *visitor) VisitLoadVar(s *concourse.LoadVarStep) error {
	v.emit(s, concourse.Plan{ID: v.newID(), LoadVar: &concourse.LoadVarPlan{
		Name:   s.Name,
		File:   s.File,
		Format: s.Format,
		Reveal: s.Reveal,
	}})
	return nil
}

func (v *visitor) VisitTry(s *concourse.TryStep) error {
	step, err := v.sub(s.Step.Config)
	if err != nil {
		return err
	}
	v.emit(s, concourse.Plan{ID: v.newID(), Try: &concourse.TryPlan{Step: step}})
	return nil
}

func (v *visitor) VisitDo(s *concourse.DoStep) error {
	steps, err := v.subs(s.Steps)
	if err != nil {
		return err
	}
	do := concourse.DoPlan(steps)
	v.emit(s, concourse.Plan{ID: v.newID(), Do: &do})
	return nil
}

func (v *visitor) VisitInParallel(s *concourse.InParallelStep) error {
	steps, err := v.subs(s.Config.Steps)
	if err != nil {
		return err
	}
	v.emit(s, concourse.Plan{ID: v.newID(), InParallel: &concourse.InParallelPlan{
		Steps:    steps,
		Limit:    s.Config.Limit,
		FailFast: s.Config.FailFast,
	}})
	return nil
}

// subs plans a list of steps, in order (never nil: an empty list is planned as one).
func (v *visitor) subs(list []concourse.Step) ([]concourse.Plan, error) {
	plans := []concourse.Plan{}
	for _, step := range list {
		p, err := v.sub(step.Config)
		if err != nil {
			return nil, err
		}
		plans = append(plans, p)
	}
	return plans, nil
}

func (v *visitor) VisitAcross(s *concourse.AcrossStep) error {
	step, err := v.sub(s.Step)
	if err != nil {
		return err
	}
	template, err := json.Marshal(step)
	if err != nil {
		return fmt.Errorf("encoding across substep: %w", err)
	}
	vars := make([]concourse.AcrossVar, len(s.Vars))
	for i, av := range s.Vars {
		vars[i] = concourse.AcrossVar{Var: av.Var, Values: av.Values, MaxInFlight: av.MaxInFlight}
	}
	v.emit(s, concourse.Plan{ID: v.newID(), Across: &concourse.AcrossPlan{
		Vars:            vars,
		SubStepTemplate: string(template),
		FailFast:        s.FailFast,
	}})
	return nil
}

func (v *visitor) VisitTimeout(s *concourse.TimeoutStep) error {
	step, err := v.sub(s.Step)
	if err != nil {
		return err
	}
	v.emit(s, concourse.Plan{ID: v.newID(), Timeout: &concourse.TimeoutPlan{Step: step, Duration: s.Duration}})
	return nil
}

func (v *visitor) VisitRetry(s *concourse.RetryStep) error {
	retry := concourse.RetryPlan{}
	for i := 0; i < s.Attempts; i++ {
		p, err := v.sub(s.Step)
		if err != nil {
			return err
		}
		retry = append(retry, p)
	}
	v.emit(s, concourse.Plan{ID: v.newID(), Retry: &retry})
	return nil
}

// hook plans the step s wraps, then its hook, then the node that joins them.
func (v *visitor) hook(s concourse.StepWrapper, hook concourse.Step, node func(id concourse.PlanID, step, next concourse.Plan) concourse.Plan) error {
	step, err := v.sub(s.Unwrap())
	if err != nil {
		return err
	}
	h, err := v.sub(hook.Config)
	if err != nil {
		return err
	}
	v.emit(s, node(v.newID(), step, h))
	return nil
}

// emit makes p the result of the visit of s, and locates at s the nodes of p that are not
// located yet: p's own, and those only a leaf makes (a put's get, image sub-plans).
func (v *visitor) emit(s concourse.StepConfig, p concourse.Plan) {
	v.plan = p
	path, ok := v.steps[s]
	if !ok {
		return
	}
	v.plan.Each(func(n *concourse.Plan) {
		if _, done := v.paths[n.ID]; !done {
			v.paths[n.ID] = path
		}
	})
}

func (v *visitor) VisitOnSuccess(s *concourse.OnSuccessStep) error {
	return v.hook(s, s.Hook, func(id concourse.PlanID, step, next concourse.Plan) concourse.Plan {
		return concourse.Plan{ID: id, OnSuccess: &concourse.OnSuccessPlan{Step: step, Next: next}}
	})
}

func (v *visitor) VisitOnFailure(s *concourse.OnFailureStep) error {
	return v.hook(s, s.Hook, func(id concourse.PlanID, step, next concourse.Plan) concourse.Plan {
		return concourse.Plan{ID: id, OnFailure: &concourse.OnFailurePlan{Step: step, Next: next}}
	})
}

func (v *visitor) VisitOnAbort(s *concourse.OnAbortStep) error {
	return v.hook(s, s.Hook, func(id concourse.PlanID, step, next concourse.Plan) concourse.Plan {
		return concourse.Plan{ID: id, OnAbort: &concourse.OnAbortPlan{Step: step, Next: next}}
	})
}

func (v *visitor) VisitOnError(s *concourse.OnErrorStep) error {
	return v.hook(s, s.Hook, func(id concourse.PlanID, step, next concourse.Plan) concourse.Plan {
		return concourse.Plan{ID: id, OnError: &concourse.OnErrorPlan{Step: step, Next: next}}
	})
}

func (v *visitor) VisitEnsure(s *concourse.EnsureStep) error {
	return v.hook(s, s.Hook, func(id concourse.PlanID, step, next concourse.Plan) concourse.Plan {
		return concourse.Plan{ID: id, Ensure: &concourse.EnsurePlan{Step: step, Next: next}}
	})
}
