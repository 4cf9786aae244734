package concourse

// walkScope is the across vars visible at a step, for shadowing checks.
type walkScope struct {
	parent *walkScope
	vars   map[string]bool
}

func (s *walkScope) shadows(name string) bool {
	for ; s != nil; s = s.parent {
		if s.vars[name] {
			return true
		}
	}
	return false
}

// WalkJob calls visit for every step config of a job (modifiers, hooks and nested steps
// included) with its path in the document (jpath is the job's), and step, when not nil,
// for every step envelope.
func (p *Pipeline) WalkJob(job *JobConfig, jpath Path, visit func(StepConfig, Path), step func(Step, Path)) {
	p.walkJob(job, jpath, func(s StepConfig, path Path, _ *walkScope) { visit(s, path) }, step)
}

func (p *Pipeline) walkJob(job *JobConfig, jpath Path, visit func(StepConfig, Path, *walkScope), step func(Step, Path)) {
	w := &pathWalker{p: p, visit: visit, step: step}
	for i := range job.PlanSequence {
		w.walkStep(job.PlanSequence[i], jpath.Child(Key("plan"), Index(i)), nil)
	}
	hooks := []struct {
		key  string
		hook *Step
	}{{"on_success", job.OnSuccess}, {"on_failure", job.OnFailure}, {"on_abort", job.OnAbort}, {"on_error", job.OnError}, {"ensure", job.Ensure}}
	for _, h := range hooks {
		if h.hook != nil {
			w.walkStep(*h.hook, jpath.Child(Key(h.key)), nil)
		}
	}
}

type pathWalker struct {
	p     *Pipeline
	visit func(StepConfig, Path, *walkScope)
	step  func(Step, Path)
}

func (w *pathWalker) walkStep(s Step, path Path, scope *walkScope) {
	if w.step != nil {
		w.step(s, path)
	}
	for cfg := s.Config; cfg != nil; {
		w.visit(cfg, path, scope)
		switch st := cfg.(type) {
		case *OnSuccessStep:
			w.walkStep(st.Hook, path.Child(Key("on_success")), scope)
		case *OnFailureStep:
			w.walkStep(st.Hook, path.Child(Key("on_failure")), scope)
		case *OnAbortStep:
			w.walkStep(st.Hook, path.Child(Key("on_abort")), scope)
		case *OnErrorStep:
			w.walkStep(st.Hook, path.Child(Key("on_error")), scope)
		case *EnsureStep:
			w.walkStep(st.Hook, path.Child(Key("ensure")), scope)
		case *AcrossStep:
			inner := &walkScope{parent: scope, vars: map[string]bool{}}
			for _, v := range st.Vars {
				inner.vars[v.Var] = true
			}
			scope = inner
		case *TryStep:
			w.walkStep(st.Step, path.Child(Key("try")), scope)
		case *DoStep:
			for i := range st.Steps {
				w.walkStep(st.Steps[i], path.Child(Key("do"), Index(i)), scope)
			}
		case *InParallelStep:
			base := path.Child(Key("in_parallel"))
			if s.Aggregate {
				base = path.Child(Key("aggregate"))
			}
			if n := w.p.nodeAt(base); n != nil && n.kind == mapNode {
				base = base.Child(Key("steps"))
			}
			for i := range st.Config.Steps {
				w.walkStep(st.Config.Steps[i], base.Child(Index(i)), scope)
			}
		}
		wr, ok := cfg.(StepWrapper)
		if !ok {
			break
		}
		cfg = wr.Unwrap()
	}
}

// nodeAt returns the node at path, or nil.
func (p *Pipeline) nodeAt(path Path) *node {
	cur := p.tree
	for _, e := range path {
		if cur == nil {
			return nil
		}
		if e.isIndex {
			if cur.kind != listNode || e.index >= len(cur.items) {
				return nil
			}
			cur = cur.items[e.index]
			continue
		}
		cur = cur.get(e.key)
	}
	return cur
}

// walkSteps calls f for every step config under s, hooks and nested steps included.
func walkSteps(s StepConfig, f func(StepConfig)) {
	for cfg := s; cfg != nil; {
		f(cfg)
		switch st := cfg.(type) {
		case *OnSuccessStep:
			walkSteps(st.Hook.Config, f)
		case *OnFailureStep:
			walkSteps(st.Hook.Config, f)
		case *OnAbortStep:
			walkSteps(st.Hook.Config, f)
		case *OnErrorStep:
			walkSteps(st.Hook.Config, f)
		case *EnsureStep:
			walkSteps(st.Hook.Config, f)
		case *TryStep:
			walkSteps(st.Step.Config, f)
		case *DoStep:
			for i := range st.Steps {
				walkSteps(st.Steps[i].Config, f)
			}
		case *InParallelStep:
			for i := range st.Config.Steps {
				walkSteps(st.Config.Steps[i].Config, f)
			}
		}
		wr, ok := cfg.(StepWrapper)
		if !ok {
			return
		}
		cfg = wr.Unwrap()
	}
}
