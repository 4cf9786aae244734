package translate

import (
	"fmt"
	"maps"

	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// The composite steps: do, in_parallel, attempts, try, timeout and the hooks. They run no
// pod of their own; they wire their children's entry conditions.

func (c *compiler) do(p *concourse.Plan, e cond, sc scope) *handle {
	steps := *p.Do
	h := &handle{tree: runspec.Node{ID: string(p.ID), Kind: runspec.KindDo, Steps: []runspec.Node{}}, name: "do", entry: e}
	next := e
	var children []*handle
	for i := range steps {
		child := c.compile(&steps[i], next, sc)
		h.tree.Steps = append(h.tree.Steps, child.tree)
		h.tasks = append(h.tasks, child.tasks...)
		children = append(children, child)
		if i < len(steps)-1 {
			next = c.test(child, onlySuccess)
		}
	}
	if len(children) == 0 {
		// An empty do succeeds as soon as it starts.
		h.success = &e
		return h
	}
	last := children[len(children)-1]
	h.name = last.name
	if len(steps) == 1 {
		h.leaf = last.leaf
	}
	h.failedBy = func() []cond { return c.seqFailed(children) }
	// A child runs only if the one before it succeeded: the last one's success is the do's
	// (asked for when a step after the do needs it: the last step of a build's plan needs
	// no join of its own).
	h.successBy = c.lazySuccess(func() *cond {
		s := c.test(last, onlySuccess)
		return &s
	})
	return h
}

// group is children that start together: an in_parallel step's, or an across step's
// substeps.
type group struct {
	id       concourse.PlanID
	kind     runspec.Kind
	steps    []concourse.Plan
	limit    int // at most limit children run at a time; 0 is no limit
	failFast bool
	// scope, when set, gives each child's scope (across substeps).
	scope func(i int) scope
	// entry, when set, adds to each child's entry condition (the guard of an across slot).
	entry func(i int) cond
	// slotted children are an across step's slots, of which only those the build uses
	// run: the group's success is not the AND of theirs, and is left to a join.
	slotted bool
}

// parallel compiles a group of children.
func (c *compiler) parallel(g group, e cond, sc scope) *handle {
	h := &handle{tree: runspec.Node{ID: string(g.id), Kind: g.kind, Steps: []runspec.Node{}, FailFast: g.failFast, Slotted: g.slotted}, name: "parallel", entry: e}
	var children []*handle
	for i := range g.steps {
		entry := e
		if g.entry != nil {
			entry = entry.and(g.entry(i))
		}
		if g.limit > 0 && i >= g.limit {
			// Concourse starts children in order, at most limit at a time: child i waits for
			// child i-limit to end.
			entry = entry.and(cond{after: children[i-g.limit].tasks})
		}
		csc := sc
		if g.scope != nil {
			csc = g.scope(i)
		}
		first := len(c.tasks)
		child := c.compile(&g.steps[i], entry, csc)
		if g.failFast {
			c.addLayer(c.tasks[first:], len(csc.layers), runspec.Layer{Kind: runspec.LayerFailFast, ID: string(g.id), Child: &child.tree})
		}
		children = append(children, child)
		h.tree.Steps = append(h.tree.Steps, child.tree)
		h.tasks = append(h.tasks, child.tasks...)
	}
	if len(children) > 0 {
		h.name = children[0].name
	}
	if !g.slotted {
		// Every child succeeded.
		h.successBy = c.lazySuccess(func() *cond {
			success := e
			for _, child := range children {
				success = success.and(c.test(child, onlySuccess))
			}
			return &success
		})
	}
	if g.kind == runspec.KindInParallel && !g.failFast && g.entry == nil && g.scope == nil {
		h.failedBy = func() []cond { return c.parallelFailed(children) }
	}
	return h
}

// parallelFailed is failedTerms of an in_parallel step: it fails when every child
// succeeded or failed and one failed (an error or an abort of any child is the step's).
// The conditions for child k being the first that failed are every way of: each child
// before it succeeded, it failed, and each one after it succeeded or failed (for a leaf,
// one `when`). Every child has then ended, and written what they read. nil when a child
// has no cheap success or failure conditions, or when they would be more than
// maxFailedTerms.
func (c *compiler) parallelFailed(children []*handle) []cond {
	if len(children) == 0 {
		return nil
	}
	success := make([]cond, len(children))
	failed := make([][]cond, len(children))
	ended := make([][]cond, len(children)) // succeeded or failed
	for j, ch := range children {
		s, f := c.successOf(ch), c.failedTerms(ch)
		if s == nil || f == nil {
			return nil
		}
		success[j], failed[j] = *s, f
		if ch.leaf != "" {
			ended[j] = []cond{outcomeIn(ch.leaf, endedRun)}
		} else {
			ended[j] = append([]cond{*s}, f...)
		}
	}
	var terms []cond
	for k := range children {
		ways := []cond{{}}
		for j := range children {
			var choices []cond
			switch {
			case j < k:
				choices = []cond{success[j]}
			case j == k:
				choices = failed[j]
			default:
				choices = ended[j]
			}
			if len(ways)*len(choices) > maxFailedTerms {
				return nil
			}
			var next []cond
			for _, w := range ways {
				for _, ch := range choices {
					next = append(next, w.and(ch))
				}
			}
			ways = next
		}
		terms = append(terms, ways...)
		if len(terms) > maxFailedTerms {
			return nil
		}
	}
	return terms
}

// addLayer inserts a context layer into the specs of the steps of tasks, at depth (the
// layers above the group come first, those inside the child after).
func (c *compiler) addLayer(tasks []v1.PipelineTask, depth int, l runspec.Layer) {
	for _, t := range tasks {
		spec := c.specs[t.Name]
		if spec == nil || spec.Mode == runspec.ModeJoin || spec.Mode == runspec.ModeVerdict {
			continue
		}
		layers := append([]runspec.Layer{}, spec.Context[:depth]...)
		layers = append(layers, l)
		spec.Context = append(layers, spec.Context[depth:]...)
	}
}

func (c *compiler) retry(p *concourse.Plan, e cond, sc scope) *handle {
	attempts := *p.Retry
	h := &handle{tree: runspec.Node{ID: string(p.ID), Kind: runspec.KindRetry, Steps: []runspec.Node{}}, name: "attempts", entry: e}
	entry := e
	for i := range attempts {
		child := c.compile(&attempts[i], entry, sc)
		if i == 0 {
			h.name = child.name
		}
		h.tree.Steps = append(h.tree.Steps, child.tree)
		h.tasks = append(h.tasks, child.tasks...)
		if i == len(attempts)-1 {
			break
		}
		// The next attempt runs when everything so far failed or errored (Concourse retries
		// errors too): a join over the attempts so far says so.
		sofar := &handle{tree: runspec.Node{ID: fmt.Sprintf("%s/after-attempt-%d", p.ID, i+1), Kind: runspec.KindRetry, Steps: append([]runspec.Node{}, h.tree.Steps...)},
			name: fmt.Sprintf("%s-attempt-%d", h.name, i+1), entry: e, tasks: append([]string{}, h.tasks...)}
		entry = c.test(sofar, failedOrErr)
	}
	return h
}

func (c *compiler) try(p *concourse.Plan, e cond, sc scope) *handle {
	inner := c.compile(&p.Try.Step, e, sc)
	return &handle{tree: runspec.Node{ID: string(p.ID), Kind: runspec.KindTry, Step: &inner.tree}, name: "try-" + inner.name,
		entry: e, tasks: inner.tasks}
}

func (c *compiler) timeout(p *concourse.Plan, e cond, sc scope) *handle {
	inner := c.compile(&p.Timeout.Step, e, sc.withTimeout(p.ID, p.Timeout.Duration))
	return &handle{tree: runspec.Node{ID: string(p.ID), Kind: runspec.KindTimeout, Step: &inner.tree}, name: inner.name,
		entry: e, tasks: inner.tasks, leaf: inner.leaf, successBy: c.lazySuccess(func() *cond { return c.successOf(inner) })}
}

// hookParts are a hook node's kind, its step and its hook.
func hookParts(p *concourse.Plan) (kind runspec.Kind, step, next *concourse.Plan) {
	switch {
	case p.OnSuccess != nil:
		return runspec.KindOnSuccess, &p.OnSuccess.Step, &p.OnSuccess.Next
	case p.OnFailure != nil:
		return runspec.KindOnFailure, &p.OnFailure.Step, &p.OnFailure.Next
	case p.OnError != nil:
		return runspec.KindOnError, &p.OnError.Step, &p.OnError.Next
	case p.OnAbort != nil:
		return runspec.KindOnAbort, &p.OnAbort.Step, &p.OnAbort.Next
	}
	return runspec.KindEnsure, &p.Ensure.Step, &p.Ensure.Next
}

// hook compiles a step and the hook that runs after it when it ends in the hook's outcomes.
func (c *compiler) hook(p *concourse.Plan, e cond, sc scope) *handle {
	kind, step, next := hookParts(p)
	inner := c.compile(step, e, sc)
	hsc := sc
	var when outcomes
	switch kind {
	case runspec.KindOnSuccess:
		when, hsc.hookStatus = onlySuccess, string(runspec.Succeeded)
	case runspec.KindOnFailure:
		when, hsc.hookStatus = onlyFailed, string(runspec.Failed)
	case runspec.KindOnError:
		// Concourse runs on_error and on_abort hooks with context.Background(), always.
		when, hsc.hookStatus = onlyErrored, string(runspec.Errored)
		hsc = hsc.with(runspec.Layer{Kind: runspec.LayerDetach, ID: string(next.ID), Always: true})
	case runspec.KindOnAbort:
		when, hsc.hookStatus = onlyAborted, string(runspec.Aborted)
		hsc = hsc.with(runspec.Layer{Kind: runspec.LayerDetach, ID: string(next.ID), Always: true})
	case runspec.KindEnsure:
		when, hsc.hookStatus = anyOutcome, ""
		hsc = hsc.with(runspec.Layer{Kind: runspec.LayerDetach, ID: string(next.ID)})
	}
	var hk *handle
	var copies []*handle
	tasks := append([]string{}, inner.tasks...)
	var terms []cond
	if kind == runspec.KindOnFailure {
		terms = c.failedTerms(inner)
	}
	if terms != nil && len(terms)*planSteps(next) <= maxHookCopies {
		// The hook once for each way the step can fail: at most one of them runs.
		hk, copies = c.hookCopies(next, terms, hsc)
		c.failureHooks[p.ID] = hk.tasks
	} else {
		hk = c.compile(next, c.test(inner, when), hsc)
	}
	tasks = append(tasks, hk.tasks...)
	h := &handle{
		tree:  runspec.Node{ID: string(p.ID), Kind: kind, Step: &inner.tree, Hook: &hk.tree},
		name:  inner.name,
		entry: e,
		tasks: tasks,
	}
	switch kind {
	case runspec.KindOnSuccess:
		// The hook runs only on success, and its result is the step's.
		h.successBy = c.lazySuccess(func() *cond { return c.successOf(hk) })
		// It fails when the step does, or when the hook does (it has run: the step
		// succeeded).
		h.failedBy = func() []cond {
			if a, b := c.failedTerms(inner), c.failedTerms(hk); a != nil && b != nil && len(a)+len(b) <= maxFailedTerms {
				return append(append([]cond{}, a...), b...)
			}
			return nil
		}
	case runspec.KindOnFailure, runspec.KindOnError, runspec.KindOnAbort:
		// The hook cannot turn the step into a success, nor a success into anything else.
		h.successBy = c.lazySuccess(func() *cond { return c.successOf(inner) })
		switch {
		case kind != runspec.KindOnFailure:
			// Its hook does not run when the step failed, and the step's outcome is the
			// node's.
			h.failedBy = func() []cond { return c.failedTerms(inner) }
		case copies != nil:
			// It fails when its step failed and the hook that ran then did not error.
			h.failedBy = func() []cond { return failedThenHook(terms, copies) }
		}
	case runspec.KindEnsure:
		h.successBy = c.lazySuccess(func() *cond {
			if a, b := c.successOf(inner), c.successOf(hk); a != nil && b != nil {
				s := a.and(*b)
				return &s
			}
			return nil
		})
		h.failedBy = func() []cond { return c.ensureFailed(inner, hk) }
	}
	return h
}

// ensureFailed is failedTerms of a step with an ensure hook, a leaf: it fails when the
// step failed and the hook succeeded or failed, or when the step succeeded and the hook
// failed (an error or an abort of either is the node's). The hook runs once the step
// ended, whatever its outcome, and has then written its own.
func (c *compiler) ensureFailed(inner, hk *handle) []cond {
	stepFailed, stepSucceeded := c.failedTerms(inner), c.successOf(inner)
	if stepFailed == nil || stepSucceeded == nil || hk.leaf == "" || len(stepFailed) >= maxFailedTerms {
		return nil
	}
	var terms []cond
	for _, t := range stepFailed {
		terms = append(terms, t.and(outcomeIn(hk.leaf, endedRun)))
	}
	last := stepSucceeded.and(outcomeIn(hk.leaf, onlyFailed))
	last.failing = hk.leaf
	return append(terms, last)
}

// hookCopies compiles the hook next once for each of terms, of which at most one holds:
// the handle's tasks are every copy's. The copies are the same steps (their plan IDs
// too), so the handle's tree is the first copy's. An artifact the hook registers as an
// image (producedBy) is left as it was before the hook: no one copy's fetch is the one
// that ran.
func (c *compiler) hookCopies(next *concourse.Plan, terms []cond, sc scope) (*handle, []*handle) {
	images, suffix := maps.Clone(c.images), c.nameSuffix
	copies := make([]*handle, len(terms))
	var tasks []string
	for i, term := range terms {
		if len(terms) > 1 {
			// The copy's tasks say which step's failure they follow (the first
			// failing child's leaf, for an in_parallel): tkn lists them all, one run.
			c.nameSuffix = "if-" + term.failing + "-failed"
		}
		copies[i] = c.compile(next, term, sc)
		tasks = append(tasks, copies[i].tasks...)
	}
	c.images, c.nameSuffix = images, suffix
	first := copies[0]
	return &handle{tree: first.tree, name: first.name, entry: first.entry, tasks: tasks}, copies
}

// failedThenHook is failedTerms of an on_failure step whose hook copies (hookCopies) ran
// under terms: its step failed, and the copy that ran then succeeded or failed (a hook
// that errored or was aborted makes the node's outcome its own). nil unless each copy is
// a leaf, whose outcome one `when` reads: it has run when its term holds.
func failedThenHook(terms []cond, copies []*handle) []cond {
	out := make([]cond, len(terms))
	for i, hk := range copies {
		if hk.leaf == "" {
			return nil
		}
		out[i] = terms[i].and(outcomeIn(hk.leaf, endedRun))
	}
	return out
}

// planSteps counts the steps of p, composites included, for maxHookCopies: an across
// step counts for all of them, as its substeps are not counted here.
func planSteps(p *concourse.Plan) int {
	n := 0
	p.EachStep(func(s *concourse.Plan) {
		n++
		if s.Across != nil {
			n += maxHookCopies
		}
	})
	return n
}
