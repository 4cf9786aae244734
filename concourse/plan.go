package concourse

// PlanID identifies a node of a build plan. Concourse numbers plans in lowercase hex and
// derives IDs for sub-plans (`<id>/image-get`, `<across id>/<combination>/<k>`).
type PlanID string

// Plan is a node of a build plan, the atc.Plan JSON the ATC hands to its engine. Exactly one
// of the step fields is set.
type Plan struct {
	ID       PlanID `json:"id"`
	Attempts []int  `json:"attempts,omitempty"`

	Get         *GetPlan         `json:"get,omitempty"`
	Put         *PutPlan         `json:"put,omitempty"`
	Check       *CheckPlan       `json:"check,omitempty"`
	Task        *TaskPlan        `json:"task,omitempty"`
	Run         *RunPlan         `json:"run,omitempty"`
	SetPipeline *SetPipelinePlan `json:"set_pipeline,omitempty"`
	LoadVar     *LoadVarPlan     `json:"load_var,omitempty"`

	Do         *DoPlan         `json:"do,omitempty"`
	InParallel *InParallelPlan `json:"in_parallel,omitempty"`
	Across     *AcrossPlan     `json:"across,omitempty"`
	OnSuccess  *OnSuccessPlan  `json:"on_success,omitempty"`
	OnFailure  *OnFailurePlan  `json:"on_failure,omitempty"`
	OnAbort    *OnAbortPlan    `json:"on_abort,omitempty"`
	OnError    *OnErrorPlan    `json:"on_error,omitempty"`
	Ensure     *EnsurePlan     `json:"ensure,omitempty"`
	Try        *TryPlan        `json:"try,omitempty"`
	Timeout    *TimeoutPlan    `json:"timeout,omitempty"`
	Retry      *RetryPlan      `json:"retry,omitempty"`

	ArtifactInput  *ArtifactInputPlan  `json:"artifact_input,omitempty"`
	ArtifactOutput *ArtifactOutputPlan `json:"artifact_output,omitempty"`

	// DependentGet is deprecated; it is kept so that old plans still decode.
	DependentGet *DependentGetPlan `json:"dependent_get,omitempty"`
}

// TypeImage is how the image of a resource's type is found: a base type, or the check and
// get of a custom type's image.
type TypeImage struct {
	CheckPlan  *Plan  `json:"check_plan,omitempty"`
	GetPlan    *Plan  `json:"get_plan,omitempty"`
	BaseType   string `json:"base_type,omitempty"`
	Privileged bool   `json:"privileged,omitempty"`
}

// GetPlan fetches a version of a resource. The plan types' fields are in the order of
// Concourse's, and encode as they do: the same plan is the same JSON.
type GetPlan struct {
	Name        string    `json:"name,omitempty"`
	Type        string    `json:"type"`
	Source      Source    `json:"source"`
	TypeImage   TypeImage `json:"image"`
	Version     *Version  `json:"version,omitempty"`
	VersionFrom *PlanID   `json:"version_from,omitempty"`
	Params      Params    `json:"params,omitempty"`
	Resource    string    `json:"resource,omitempty"`
	Tags        Tags      `json:"tags,omitempty"`
	Timeout     string    `json:"timeout,omitempty"`
}

// PutPlan pushes a version of a resource.
type PutPlan struct {
	Name                 string        `json:"name"`
	Type                 string        `json:"type"`
	Source               Source        `json:"source"`
	TypeImage            TypeImage     `json:"image"`
	Params               Params        `json:"params,omitempty"`
	Inputs               *InputsConfig `json:"inputs,omitempty"`
	Resource             string        `json:"resource,omitempty"`
	Tags                 Tags          `json:"tags,omitempty"`
	Timeout              string        `json:"timeout,omitempty"`
	ExposeBuildCreatedBy bool          `json:"expose_build_created_by,omitempty"`
}

// CheckPlan finds versions of a resource (used for image checks here).
type CheckPlan struct {
	Name         string    `json:"name"`
	Type         string    `json:"type"`
	Source       Source    `json:"source"`
	TypeImage    TypeImage `json:"image"`
	FromVersion  Version   `json:"from_version,omitempty"`
	Resource     string    `json:"resource,omitempty"`
	ResourceType string    `json:"resource_type,omitempty"`
	Prototype    string    `json:"prototype,omitempty"`
	// Interval is the check's interval as Concourse writes its CheckEvery: "never", a Go
	// duration ("1m0s"), or none.
	Interval     string `json:"interval,omitempty"`
	SkipInterval bool   `json:"skip_interval,omitempty"`
	Timeout      string `json:"timeout,omitempty"`
	Tags         Tags   `json:"tags,omitempty"`
}

// TaskPlan runs a task.
type TaskPlan struct {
	Name              string            `json:"name"`
	Privileged        bool              `json:"privileged"`
	Hermetic          bool              `json:"hermetic"`
	Tags              Tags              `json:"tags,omitempty"`
	ConfigPath        string            `json:"config_path,omitempty"`
	Config            *TaskConfig       `json:"config,omitempty"`
	Limits            *ContainerLimits  `json:"container_limits,omitempty"`
	ImageArtifactName string            `json:"image,omitempty"`
	Vars              Params            `json:"vars,omitempty"`
	Params            TaskEnv           `json:"params,omitempty"`
	InputMapping      map[string]string `json:"input_mapping,omitempty"`
	OutputMapping     map[string]string `json:"output_mapping,omitempty"`
	Timeout           string            `json:"timeout,omitempty"`
	ResourceTypes     []ResourceType    `json:"resource_types,omitempty"`
	CheckSkipInterval bool              `json:"check_skip_interval,omitempty"`
}

// RunPlan runs a prototype.
type RunPlan struct {
	Message    string           `json:"message"`
	Type       string           `json:"type"`
	Object     Params           `json:"object,omitempty"`
	Privileged bool             `json:"privileged"`
	Tags       Tags             `json:"tags,omitempty"`
	Limits     *ContainerLimits `json:"container_limits,omitempty"`
	Timeout    string           `json:"timeout,omitempty"`
}

// SetPipelinePlan configures a pipeline.
type SetPipelinePlan struct {
	Name         string       `json:"name"`
	File         string       `json:"file"`
	Team         string       `json:"team,omitempty"`
	Vars         Params       `json:"vars,omitempty"`
	VarFiles     []string     `json:"var_files,omitempty"`
	InstanceVars InstanceVars `json:"instance_vars,omitempty"`
}

// LoadVarPlan loads a local var from a file.
type LoadVarPlan struct {
	Name   string `json:"name"`
	File   string `json:"file"`
	Format string `json:"format,omitempty"`
	Reveal bool   `json:"reveal,omitempty"`
}

// DoPlan runs plans in order.
type DoPlan []Plan

// InParallelPlan runs plans at the same time.
type InParallelPlan struct {
	Steps    []Plan `json:"steps"`
	Limit    int    `json:"limit,omitempty"`
	FailFast bool   `json:"fail_fast,omitempty"`
}

// AcrossPlan runs a substep per combination of its vars' values.
type AcrossPlan struct {
	Vars []AcrossVar `json:"vars"`
	// SubStepTemplate is the JSON of the substep's plan, interpolated per combination.
	SubStepTemplate string `json:"substep_template"`
	FailFast        bool   `json:"fail_fast,omitempty"`
}

// AcrossVar is one var of an across plan.
type AcrossVar struct {
	Var         string             `json:"name"`
	Values      any                `json:"values,omitempty"`
	MaxInFlight *MaxInFlightConfig `json:"max_in_flight,omitempty"`
}

// OnSuccessPlan runs Next after Step succeeds.
type OnSuccessPlan struct {
	Step Plan `json:"step"`
	Next Plan `json:"on_success"`
}

// OnFailurePlan runs Next after Step fails.
type OnFailurePlan struct {
	Step Plan `json:"step"`
	Next Plan `json:"on_failure"`
}

// OnAbortPlan runs Next after Step is aborted.
type OnAbortPlan struct {
	Step Plan `json:"step"`
	Next Plan `json:"on_abort"`
}

// OnErrorPlan runs Next after Step errors.
type OnErrorPlan struct {
	Step Plan `json:"step"`
	Next Plan `json:"on_error"`
}

// EnsurePlan runs Next after Step, whatever happened.
type EnsurePlan struct {
	Step Plan `json:"step"`
	Next Plan `json:"ensure"`
}

// TryPlan runs Step and succeeds unless the build is aborted.
type TryPlan struct {
	Step Plan `json:"step"`
}

// TimeoutPlan stops Step after Duration.
type TimeoutPlan struct {
	Step     Plan   `json:"step"`
	Duration string `json:"duration"`
}

// RetryPlan is one fully planned copy of the step per attempt.
type RetryPlan []Plan

// ArtifactInputPlan registers an uploaded artifact (fly execute -i).
type ArtifactInputPlan struct {
	ArtifactID int    `json:"artifact_id"`
	Name       string `json:"name"`
}

// ArtifactOutputPlan names an artifact to download (fly execute -o).
type ArtifactOutputPlan struct {
	Name string `json:"name"`
}

// DependentGetPlan is the deprecated get that followed a put.
type DependentGetPlan struct {
	Type     string `json:"type"`
	Name     string `json:"name,omitempty"`
	Resource string `json:"resource"`
}

// Each calls f on p and every plan nested in it, depth first, parents before children. It
// does not descend into across substep templates, which are JSON strings.
func (p *Plan) Each(f func(*Plan)) {
	f(p)
	for _, c := range p.children() {
		c.Each(f)
	}
}

// EachStep calls f on p and every step nested in it, as Each does, but not on the
// checks and gets of the images of resource types (TypeImage), which fetch what a step
// runs in.
func (p *Plan) EachStep(f func(*Plan)) {
	f(p)
	for _, c := range p.steps(nil) {
		c.EachStep(f)
	}
}

// children returns the plans directly nested in p, image sub-plans included.
func (p *Plan) children() []*Plan {
	var out []*Plan
	addImage := func(ti *TypeImage) {
		if ti.CheckPlan != nil {
			out = append(out, ti.CheckPlan)
		}
		if ti.GetPlan != nil {
			out = append(out, ti.GetPlan)
		}
	}
	switch {
	case p.Get != nil:
		addImage(&p.Get.TypeImage)
	case p.Put != nil:
		addImage(&p.Put.TypeImage)
	case p.Check != nil:
		addImage(&p.Check.TypeImage)
	}
	return p.steps(out)
}

// steps appends to out the steps directly nested in p.
func (p *Plan) steps(out []*Plan) []*Plan {
	switch {
	case p.Do != nil:
		for i := range *p.Do {
			out = append(out, &(*p.Do)[i])
		}
	case p.Retry != nil:
		for i := range *p.Retry {
			out = append(out, &(*p.Retry)[i])
		}
	case p.InParallel != nil:
		for i := range p.InParallel.Steps {
			out = append(out, &p.InParallel.Steps[i])
		}
	case p.OnSuccess != nil:
		out = append(out, &p.OnSuccess.Step, &p.OnSuccess.Next)
	case p.OnFailure != nil:
		out = append(out, &p.OnFailure.Step, &p.OnFailure.Next)
	case p.OnAbort != nil:
		out = append(out, &p.OnAbort.Step, &p.OnAbort.Next)
	case p.OnError != nil:
		out = append(out, &p.OnError.Step, &p.OnError.Next)
	case p.Ensure != nil:
		out = append(out, &p.Ensure.Step, &p.Ensure.Next)
	case p.Try != nil:
		out = append(out, &p.Try.Step)
	case p.Timeout != nil:
		out = append(out, &p.Timeout.Step)
	}
	return out
}
