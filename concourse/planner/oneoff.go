package planner

import (
	"strconv"

	"github.com/concourse-tekton/concourse-tekton/concourse"
)

// OneOff says what a one-off build (fly execute) runs its task with.
type OneOff struct {
	// Inputs are the task inputs uploaded from the client, by name, in the order given.
	Inputs []string
	// Gets are the inputs taken from a job's (fly execute -j): its get steps, fetched
	// after the uploads' artifact inputs, in parallel with them.
	Gets []concourse.GetPlan
	// Outputs are the task outputs the client downloads once the build has ended.
	Outputs      []string
	InputMapping map[string]string
	Privileged   bool
	Tags         concourse.Tags
}

// PlanOneOff plans a one-off build of a task config, as fly execute does: the uploaded
// artifacts (in parallel), then the task named "one-off", and, when there are outputs to
// download, their artifact outputs in an ensure hook, so that they are there whatever the
// task's outcome. Plan IDs are numbered from 1 in the order of the nodes; ArtifactIDs
// from 1 in the order of o.Inputs.
func PlanOneOff(cfg concourse.TaskConfig, o OneOff) concourse.Plan {
	id := 0
	next := func() concourse.PlanID { id++; return concourse.PlanID(strconv.Itoa(id)) }
	inputs := concourse.Plan{ID: next(), InParallel: &concourse.InParallelPlan{Steps: []concourse.Plan{}}}
	for i, name := range o.Inputs {
		inputs.InParallel.Steps = append(inputs.InParallel.Steps, concourse.Plan{
			ID: next(), ArtifactInput: &concourse.ArtifactInputPlan{ArtifactID: i + 1, Name: name},
		})
	}
	for _, g := range o.Gets {
		inputs.InParallel.Steps = append(inputs.InParallel.Steps, concourse.Plan{ID: next(), Get: &g})
	}
	task := concourse.Plan{ID: next(), Task: &concourse.TaskPlan{
		Name: "one-off", Privileged: o.Privileged, Tags: o.Tags, Config: &cfg, InputMapping: o.InputMapping,
	}}
	do := concourse.DoPlan{inputs, task}
	if len(o.Outputs) == 0 {
		return concourse.Plan{ID: next(), Do: &do}
	}
	step := concourse.Plan{ID: next(), Do: &do}
	outputs := concourse.Plan{ID: next(), InParallel: &concourse.InParallelPlan{Steps: []concourse.Plan{}}}
	for _, name := range o.Outputs {
		outputs.InParallel.Steps = append(outputs.InParallel.Steps, concourse.Plan{
			ID: next(), ArtifactOutput: &concourse.ArtifactOutputPlan{Name: name},
		})
	}
	return concourse.Plan{ID: next(), Ensure: &concourse.EnsurePlan{Step: step, Next: outputs}}
}
