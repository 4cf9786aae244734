package planner

import (
	"github.com/concourse-tekton/concourse-tekton/concourse"
)

// stepPaths locates every step config of job j (at jpath in p), root being the job's
// step config: a step's path is its envelope's, then the key that made the config
// (`jobs[unit].plan[2].task`). The wrappers root adds around the job's plan are at the
// job's own keys (`jobs[unit].ensure`), the do of its steps at `jobs[unit].plan`.
func stepPaths(p *concourse.Pipeline, j *concourse.JobConfig, jpath concourse.Path, root concourse.StepConfig) map[concourse.StepConfig]concourse.Path {
	paths := map[concourse.StepConfig]concourse.Path{}
	for cfg := root; ; {
		w, ok := cfg.(concourse.StepWrapper)
		if !ok {
			paths[cfg] = jpath.Child(concourse.Key("plan"))
			break
		}
		paths[cfg] = jpath.Child(concourse.Key(stepKey(cfg)))
		cfg = w.Unwrap()
	}
	p.WalkJob(j, jpath, func(cfg concourse.StepConfig, path concourse.Path) {
		paths[cfg] = path.Child(concourse.Key(stepKey(cfg)))
	}, nil)
	return paths
}

// stepKey is the key of a step that makes a config of cfg's type.
func stepKey(cfg concourse.StepConfig) string {
	k := &keyVisitor{}
	_ = cfg.Visit(k)
	return k.key
}

// keyVisitor names the key of each step type; a visitor, so that a new step type cannot be
// forgotten.
type keyVisitor struct {
	key string
}

var _ concourse.StepVisitor = (*keyVisitor)(nil)

func (k *keyVisitor) is(key string) error { k.key = key; return nil }

func (k *keyVisitor) VisitTask(*concourse.TaskStep) error               { return k.is("task") }
func (k *keyVisitor) VisitGet(*concourse.GetStep) error                 { return k.is("get") }
func (k *keyVisitor) VisitPut(*concourse.PutStep) error                 { return k.is("put") }
func (k *keyVisitor) VisitRun(*concourse.RunStep) error                 { return k.is("run") }
func (k *keyVisitor) VisitSetPipeline(*concourse.SetPipelineStep) error { return k.is("set_pipeline") }
func (k *keyVisitor) VisitLoadVar(*concourse.LoadVarStep) error         { return k.is("load_var") }
func (k *keyVisitor) VisitTry(*concourse.TryStep) error                 { return k.is("try") }
func (k *keyVisitor) VisitDo(*concourse.DoStep) error                   { return k.is("do") }
func (k *keyVisitor) VisitAcross(*concourse.AcrossStep) error           { return k.is("across") }
func (k *keyVisitor) VisitTimeout(*concourse.TimeoutStep) error         { return k.is("timeout") }
func (k *keyVisitor) VisitRetry(*concourse.RetryStep) error             { return k.is("attempts") }
func (k *keyVisitor) VisitOnSuccess(*concourse.OnSuccessStep) error     { return k.is("on_success") }
func (k *keyVisitor) VisitOnFailure(*concourse.OnFailureStep) error     { return k.is("on_failure") }
func (k *keyVisitor) VisitOnAbort(*concourse.OnAbortStep) error         { return k.is("on_abort") }
func (k *keyVisitor) VisitOnError(*concourse.OnErrorStep) error         { return k.is("on_error") }
func (k *keyVisitor) VisitEnsure(*concourse.EnsureStep) error           { return k.is("ensure") }

func (k *keyVisitor) VisitInParallel(*concourse.InParallelStep) error { return k.is("in_parallel") }
