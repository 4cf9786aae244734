package concourse

// walkScope is the local vars visible at a step, as Concourse scopes them: a job has one
// scope, where its load_vars define theirs; an across opens one for its vars, where the
// load_vars of the steps it runs define theirs.
type walkScope struct {
	parent *walkScope
	// vars are where each var of the scope is defined, so far in the walk.
	vars map[string]Path
}

func newScope(parent *walkScope) *walkScope {
	return &walkScope{parent: parent, vars: map[string]Path{}}
}

// defines reports whether name is a var of the scope or of one that encloses it.
func (s *walkScope) defines(name string) bool {
	for ; s != nil; s = s.parent {
		if _, ok := s.vars[name]; ok {
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
	scope := newScope(nil)
	for i := range job.PlanSequence {
		w.walkStep(job.PlanSequence[i], jpath.Child(Key("plan"), Index(i)), scope)
	}
	hooks := []struct {
		key  string
		hook *Step
	}{{"on_success", job.OnSuccess}, {"on_failure", job.OnFailure}, {"on_abort", job.OnAbort}, {"on_error", job.OnError}, {"ensure", job.Ensure}}
	for _, h := range hooks {
		if h.hook != nil {
			w.walkStep(*h.hook, jpath.Child(Key(h.key)), scope)
		}
	}
}

type pathWalker struct {
	p     *Pipeline
	visit func(StepConfig, Path, *walkScope)
	step  func(Step, Path)
}

// walkStep walks a step in the order Concourse's validator visits it (the order that
// decides which of two vars of a name shadows the other): its chain of modifiers, the
// steps it holds, then its hooks, the innermost first.
func (w *pathWalker) walkStep(s Step, path Path, scope *walkScope) {
	if w.step != nil {
		w.step(s, path)
	}
	type hook struct {
		step  Step
		key   string
		scope *walkScope
	}
	var hooks []hook
	for cfg := s.Config; cfg != nil; {
		w.visit(cfg, path, scope)
		switch st := cfg.(type) {
		case *OnSuccessStep:
			hooks = append(hooks, hook{st.Hook, "on_success", scope})
		case *OnFailureStep:
			hooks = append(hooks, hook{st.Hook, "on_failure", scope})
		case *OnAbortStep:
			hooks = append(hooks, hook{st.Hook, "on_abort", scope})
		case *OnErrorStep:
			hooks = append(hooks, hook{st.Hook, "on_error", scope})
		case *EnsureStep:
			hooks = append(hooks, hook{st.Hook, "ensure", scope})
		case *AcrossStep:
			scope = newScope(scope)
			for i, v := range st.Vars {
				if _, ok := scope.vars[v.Var]; !ok {
					scope.vars[v.Var] = path.Child(Key("across"), Index(i))
				}
			}
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
	for i := len(hooks) - 1; i >= 0; i-- {
		h := hooks[i]
		w.walkStep(h.step, path.Child(Key(h.key)), h.scope)
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
