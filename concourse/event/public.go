package event

import (
	"encoding/json"
	"fmt"

	"github.com/concourse-tekton/concourse-tekton/concourse"
)

// Public returns the public form of a build plan (atc/public_plan.go): the plan the API
// serves at /api/v1/builds/:id/plan and the image-check, image-get and across-substeps
// events embed. It keeps every node's ID and the plan's structure, so that the UI can file
// events under their steps, and drops what may be secret or is of no use to the UI:
// sources, params, vars, task configs, the values of across vars.
func Public(p concourse.Plan) (json.RawMessage, error) {
	return encodePublic(publicOf(&p))
}

// PublicSubstep returns the public form of one substep of an across step, as the
// across-substeps event lists them: the substep's plan and the values of the vars for its
// combination.
func PublicSubstep(step concourse.Plan, values []any) (json.RawMessage, error) {
	return encodePublic(struct {
		Step   *publicPlan `json:"step"`
		Values []any       `json:"values"`
	}{publicOf(&step), values})
}

func encodePublic(v any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding public plan: %w", err)
	}
	return b, nil
}

// publicPlan is a public plan node. Its fields are in the order of the ATC's, so that the
// bytes are the same as the ATC's.
type publicPlan struct {
	ID             concourse.PlanID              `json:"id,omitempty"`
	InParallel     *publicInParallel             `json:"in_parallel,omitempty"`
	Across         *publicAcross                 `json:"across,omitempty"`
	Do             []*publicPlan                 `json:"do,omitzero"`
	Get            *publicGet                    `json:"get,omitempty"`
	Put            *publicPut                    `json:"put,omitempty"`
	Check          *publicCheck                  `json:"check,omitempty"`
	Task           *publicTask                   `json:"task,omitempty"`
	Run            *publicRun                    `json:"run,omitempty"`
	SetPipeline    *publicSetPipeline            `json:"set_pipeline,omitempty"`
	LoadVar        *publicLoadVar                `json:"load_var,omitempty"`
	OnAbort        *publicHook                   `json:"on_abort,omitempty"`
	OnError        *publicHook                   `json:"on_error,omitempty"`
	Ensure         *publicHook                   `json:"ensure,omitempty"`
	OnSuccess      *publicHook                   `json:"on_success,omitempty"`
	OnFailure      *publicHook                   `json:"on_failure,omitempty"`
	Try            *publicTry                    `json:"try,omitempty"`
	DependentGet   *publicDependentGet           `json:"dependent_get,omitempty"`
	Timeout        *publicTimeout                `json:"timeout,omitempty"`
	Retry          []*publicPlan                 `json:"retry,omitzero"`
	ArtifactInput  *concourse.ArtifactInputPlan  `json:"artifact_input,omitempty"`
	ArtifactOutput *concourse.ArtifactOutputPlan `json:"artifact_output,omitempty"`
}

type publicInParallel struct {
	Steps    []*publicPlan `json:"steps"`
	Limit    int           `json:"limit,omitempty"`
	FailFast bool          `json:"fail_fast,omitempty"`
}

type publicAcross struct {
	Vars     []publicAcrossVar `json:"vars"`
	FailFast bool              `json:"fail_fast,omitempty"`
}

type publicAcrossVar struct {
	Name string `json:"name"`
}

type publicGet struct {
	Name           string             `json:"name"`
	Type           string             `json:"type"`
	Resource       string             `json:"resource,omitempty"`
	Version        *concourse.Version `json:"version,omitempty"`
	ImageGetPlan   *publicPlan        `json:"image_get_plan,omitempty"`
	ImageCheckPlan *publicPlan        `json:"image_check_plan,omitempty"`
}

type publicPut struct {
	Name           string      `json:"name"`
	Type           string      `json:"type"`
	Resource       string      `json:"resource,omitempty"`
	ImageGetPlan   *publicPlan `json:"image_get_plan,omitempty"`
	ImageCheckPlan *publicPlan `json:"image_check_plan,omitempty"`
}

type publicCheck struct {
	Name           string      `json:"name"`
	Type           string      `json:"type"`
	ImageGetPlan   *publicPlan `json:"image_get_plan,omitempty"`
	ImageCheckPlan *publicPlan `json:"image_check_plan,omitempty"`
}

type publicTask struct {
	Name       string `json:"name"`
	Privileged bool   `json:"privileged"`
	Hermetic   bool   `json:"hermetic"`
}

type publicRun struct {
	Message    string `json:"message"`
	Type       string `json:"type"`
	Privileged bool   `json:"privileged"`
}

type publicSetPipeline struct {
	Name         string                 `json:"name"`
	Team         string                 `json:"team"`
	InstanceVars concourse.InstanceVars `json:"instance_vars"`
}

type publicLoadVar struct {
	Name string `json:"name"`
}

type publicTry struct {
	Step *publicPlan `json:"step"`
}

type publicTimeout struct {
	Step     *publicPlan `json:"step"`
	Duration string      `json:"duration"`
}

type publicDependentGet struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Resource string `json:"resource"`
}

// publicHook is a hook node, `{"step": ..., "<hook key>": ...}`: the hook's plan sits under
// the key that names the hook.
type publicHook struct {
	key        string
	step, next *publicPlan
}

// MarshalJSON writes step before the hook, as the ATC does.
func (h publicHook) MarshalJSON() ([]byte, error) {
	step, err := json.Marshal(h.step)
	if err != nil {
		return nil, err
	}
	next, err := json.Marshal(h.next)
	if err != nil {
		return nil, err
	}
	key, err := json.Marshal(h.key)
	if err != nil {
		return nil, err
	}
	out := append([]byte(`{"step":`), step...)
	out = append(out, ',')
	out = append(out, key...)
	out = append(out, ':')
	out = append(out, next...)
	return append(out, '}'), nil
}

// publicOf returns the public form of p, or nil for a nil plan (an absent image sub-plan).
func publicOf(p *concourse.Plan) *publicPlan {
	if p == nil {
		return nil
	}
	out := &publicPlan{ID: p.ID}
	switch {
	case p.InParallel != nil:
		out.InParallel = &publicInParallel{Steps: publicList(p.InParallel.Steps), Limit: p.InParallel.Limit, FailFast: p.InParallel.FailFast}
	case p.Across != nil:
		vars := make([]publicAcrossVar, len(p.Across.Vars))
		for i, v := range p.Across.Vars {
			vars[i] = publicAcrossVar{Name: v.Var}
		}
		out.Across = &publicAcross{Vars: vars, FailFast: p.Across.FailFast}
	case p.Do != nil:
		out.Do = publicList(*p.Do)
	case p.Get != nil:
		g := p.Get
		out.Get = &publicGet{Name: g.Name, Type: g.Type, Resource: g.Resource, Version: g.Version, ImageGetPlan: publicOf(g.TypeImage.GetPlan), ImageCheckPlan: publicOf(g.TypeImage.CheckPlan)}
	case p.Put != nil:
		pt := p.Put
		out.Put = &publicPut{Name: pt.Name, Type: pt.Type, Resource: pt.Resource, ImageGetPlan: publicOf(pt.TypeImage.GetPlan), ImageCheckPlan: publicOf(pt.TypeImage.CheckPlan)}
	case p.Check != nil:
		c := p.Check
		out.Check = &publicCheck{Name: c.Name, Type: c.Type, ImageGetPlan: publicOf(c.TypeImage.GetPlan), ImageCheckPlan: publicOf(c.TypeImage.CheckPlan)}
	case p.Task != nil:
		out.Task = &publicTask{Name: p.Task.Name, Privileged: p.Task.Privileged, Hermetic: p.Task.Hermetic}
	case p.Run != nil:
		out.Run = &publicRun{Message: p.Run.Message, Type: p.Run.Type, Privileged: p.Run.Privileged}
	case p.SetPipeline != nil:
		out.SetPipeline = &publicSetPipeline{Name: p.SetPipeline.Name, Team: p.SetPipeline.Team, InstanceVars: p.SetPipeline.InstanceVars}
	case p.LoadVar != nil:
		out.LoadVar = &publicLoadVar{Name: p.LoadVar.Name}
	case p.OnAbort != nil:
		out.OnAbort = hookOf("on_abort", &p.OnAbort.Step, &p.OnAbort.Next)
	case p.OnError != nil:
		out.OnError = hookOf("on_error", &p.OnError.Step, &p.OnError.Next)
	case p.Ensure != nil:
		out.Ensure = hookOf("ensure", &p.Ensure.Step, &p.Ensure.Next)
	case p.OnSuccess != nil:
		out.OnSuccess = hookOf("on_success", &p.OnSuccess.Step, &p.OnSuccess.Next)
	case p.OnFailure != nil:
		out.OnFailure = hookOf("on_failure", &p.OnFailure.Step, &p.OnFailure.Next)
	case p.Try != nil:
		out.Try = &publicTry{Step: publicOf(&p.Try.Step)}
	case p.DependentGet != nil:
		// concourse.DependentGetPlan has no type; the ATC's public form has the key.
		out.DependentGet = &publicDependentGet{Name: p.DependentGet.Name, Resource: p.DependentGet.Resource}
	case p.Timeout != nil:
		out.Timeout = &publicTimeout{Step: publicOf(&p.Timeout.Step), Duration: p.Timeout.Duration}
	case p.Retry != nil:
		out.Retry = publicList(*p.Retry)
	case p.ArtifactInput != nil:
		in := *p.ArtifactInput
		out.ArtifactInput = &in
	case p.ArtifactOutput != nil:
		o := *p.ArtifactOutput
		out.ArtifactOutput = &o
	}
	return out
}

func hookOf(key string, step, next *concourse.Plan) *publicHook {
	return &publicHook{key: key, step: publicOf(step), next: publicOf(next)}
}

// publicList keeps an empty list empty rather than absent, as the ATC does.
func publicList(plans []concourse.Plan) []*publicPlan {
	out := make([]*publicPlan, len(plans))
	for i := range plans {
		out[i] = publicOf(&plans[i])
	}
	return out
}
