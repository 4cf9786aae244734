package buildevents

import (
	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	"knative.dev/pkg/apis"

	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// What a step's TaskRun says, read here the one way the mapper reads it, for the mapper
// and for the code around it that acts on the same facts.

// Done tells whether a run's or a TaskRun's Succeeded condition says it ended.
func Done(c *apis.Condition) bool {
	return c != nil && c.Status != corev1.ConditionUnknown
}

// StepSpec is the runner spec a TaskRun carries, and whether it carries one: a TaskRun
// of no step of ours (someone edited the Pipeline) does not.
func StepSpec(tr *v1.TaskRun) (runspec.Spec, bool) {
	return ParamsSpec(tr.Spec.Params)
}

// ParamsSpec reads the runner spec among a PipelineTask's or a TaskRun's params.
func ParamsSpec(params v1.Params) (runspec.Spec, bool) {
	s, err := runspec.Decode(Param(params, runspec.ParamSpec))
	return s, err == nil
}

// Param is the string value of the param name, "" when there is none.
func Param(params v1.Params, name string) string {
	for _, p := range params {
		if p.Name == name {
			return p.Value.StringVal
		}
	}
	return ""
}

// Result is a TaskRun's result name, "" when it has none.
func Result(tr *v1.TaskRun, name string) string {
	v, _ := LookupResult(tr, name)
	return v
}

// LookupResult is a TaskRun's result name, and whether it has it.
func LookupResult(tr *v1.TaskRun, name string) (string, bool) {
	for _, r := range tr.Status.Results {
		if r.Name == name {
			return r.Value.StringVal, true
		}
	}
	return "", false
}

// Started tells whether the step's container started, as the TaskRun (which outlives
// the pod) or its pod (nil: not known) says.
func Started(tr *v1.TaskRun, pod *corev1.Pod) bool {
	return ran(containerState(tr, pod))
}
