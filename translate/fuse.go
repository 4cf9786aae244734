package translate

import (
	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// The verdict (runspec.VerdictTask) is a finally task: a pod that starts once every
// other task of the build has ended, on the critical path of every build. When the
// build's plan ends with a task step whose own success makes the build's (lastStep) and
// whose task runs after every other task of the build, the verdict runs in that step's
// pod instead, after the step (runspec.Verdict.Fused): a build that succeeds starts no
// pod of its own to record it.
// When the step's TaskRun did not succeed (it failed, was skipped, or never started),
// the finally verdict runs as before: it is guarded by that TaskRun's status.
//
// A get, put or check holds the verdict only when it is the build's only step (a check
// build, which the ATC starts for every check, or a job of one get, or of one put
// without its get): its own runner records the verdict in the step's container once the
// step succeeded (inline), so the termination messages stay three containers', and a
// build of one check runs one pod. Nothing of this build but the step wrote the volume,
// so the step's own user may empty it; a file it may not delete (one an earlier failed
// build's verdict preserved as root) makes the verdict's error say so, and the job's
// next build starts from an empty volume, as after any verdict that could not clean.

// fusedVerdictTask is the task of the build's last step that is to hold its verdict,
// or "" when none may, and whether it records it in its own container (inline).
func (c *compiler) fusedVerdictTask(root runspec.Node) (string, bool) {
	if c.opts.UserNamespaces {
		// The verdict empties the build volume as root, which a user namespace's root
		// is not for the files of the build's other pods.
		return "", false
	}
	unless := map[string]bool{}
	last := c.lastStep(root, unless)
	if last.Kind != runspec.KindLeaf {
		return "", false
	}
	name, inline := "", false
	for _, pt := range c.tasks {
		spec := c.specs[pt.Name]
		if spec == nil || spec.PlanID != last.ID {
			continue
		}
		switch {
		case spec.Mode == runspec.ModeTask:
		case (spec.Mode == runspec.ModeGet || spec.Mode == runspec.ModePut || spec.Mode == runspec.ModeCheck) && len(c.tasks) == 1:
			inline = true
		default:
			// Only a task's results are small enough to share the pod's termination
			// messages with a fourth container: the kubelet gives each container an
			// equal share of 12 KiB, 3 KiB with four (Tekton's init container, the
			// install, the step, the verdict), where a get, put or check may write 3 KiB
			// of version, versions and metadata alone (the runner's resultBudget).
			return "", false
		}
		if name != "" {
			return "", false // the step is more than one task
		}
		name = pt.Name
	}
	if name == "" || !c.runsLast(name, unless) {
		return "", false
	}
	return name, inline
}

// lastStep is the step of n whose success makes n's outcome a success, and after which,
// when it succeeded, nothing of n runs: the last step of a do, the hook of an on_success
// (it runs only once the step succeeded), the step a timeout bounds, the step of an
// on_failure whose hook was compiled once for each way the step can fail (hookCopies):
// none of those copies runs once that step succeeded, and their tasks go into unless. A
// put's implicit get is the hook of its on_success.
func (c *compiler) lastStep(n runspec.Node, unless map[string]bool) runspec.Node {
	switch {
	case n.Kind == runspec.KindDo && len(n.Steps) > 0:
		return c.lastStep(n.Steps[len(n.Steps)-1], unless)
	case (n.Kind == runspec.KindOnSuccess && n.Hook != nil):
		return c.lastStep(*n.Hook, unless)
	case n.Kind == runspec.KindTimeout && n.Step != nil:
		return c.lastStep(*n.Step, unless)
	case n.Kind == runspec.KindOnFailure && n.Step != nil && c.failureHooks[concourse.PlanID(n.ID)] != nil:
		for _, t := range c.failureHooks[concourse.PlanID(n.ID)] {
			unless[t] = true
		}
		return c.lastStep(*n.Step, unless)
	}
	return n
}

// runsLast tells whether every other task of the build runs before the task name (its
// dependencies as Tekton's DAG has them, runAfter and the results it reads, lead to
// each), but those in unless, which do not run once it succeeded.
func (c *compiler) runsLast(name string, unless map[string]bool) bool {
	deps := v1.PipelineTaskList(c.tasks).Deps()
	before := map[string]bool{}
	var visit func(string)
	visit = func(n string) {
		for _, d := range deps[n] {
			if !before[d] {
				before[d] = true
				visit(d)
			}
		}
	}
	visit(name)
	for _, pt := range c.tasks {
		if pt.Name != name && !before[pt.Name] && !unless[pt.Name] {
			return false
		}
	}
	return true
}

// fuseVerdict gives the task name the verdict of spec, and guards the finally verdict
// task (finally[0]) with the task's status.
func (c *compiler) fuseVerdict(name string, inline bool, spec runspec.Spec, finally []v1.PipelineTask) {
	v := *spec.Verdict
	v.Fused = true
	spec.Verdict = &v
	c.fusedSpec = &spec
	c.fused = name
	for i := range c.tasks {
		if c.tasks[i].Name != name {
			continue
		}
		variant := c.variants[name]
		variant.verdict, variant.verdictInline = true, inline
		c.variants[name] = variant
	}
	finally[0].When = v1.WhenExpressions{{Input: "$(tasks." + name + ".status)", Operator: selection.NotIn, Values: []string{"Succeeded"}}}
}
