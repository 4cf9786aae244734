package buildevents

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"k8s.io/apimachinery/pkg/types"
	"knative.dev/pkg/apis"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/event"
	"github.com/concourse-tekton/concourse-tekton/runner/eval"
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// An across step is a step of its own in Concourse (exec.AcrossStep), with events at its
// own origin that no PipelineTask makes: initialize, its experimental-step warning on
// stderr, start and (its values known when the pipeline was converted) across-substeps
// before its substeps, then finish once they have ended, or, when an
// error came out of them, that error once more (exec.LogError wraps the across step, and
// the substeps' errors reach it as one go-multierror). The mapper shows them as steps of
// their own, placed in the order of the build's PipelineTasks: an across step's head
// before any of its substeps' events, its end after all of them and before any step
// that runs after it. An across over values known only at run time has a resolver step
// of its own, which prints the warning and says initialize and start itself; its end is
// the same.

// acrossWarning is what Concourse's across step writes to its stderr before it starts, a
// log event per line.
var acrossWarning = []string{
	"\x1b[1;33mWARNING: the across step is experimental and subject to change!\x1b[0m\n",
	"\n",
	"\x1b[33mfollow RFC #29 for updates: https://github.com/concourse/rfcs/pull/29\x1b[0m\n",
	"\n",
}

// acrossStep is an across step of the build's plan.
type acrossStep struct {
	node runspec.Node
	// tasks are the PipelineTasks of its substeps (and its resolver's).
	tasks map[string]bool
	// head and end name its two parts as steps of the mapping; head is "" for an across
	// whose resolver says initialize and start.
	head, end string
}

// walkNode is one step of the mapper's walk: a PipelineTask, or a part of an across step.
type walkNode struct {
	name string
	// across and isEnd say which part of which across step, for a part.
	across *acrossStep
	isEnd  bool
	deps   []string
}

// walkOrders keeps each run's walk order, which is computed from every step's spec and
// depends on the run's PipelineSpec alone: Tekton sets that once, and a build is mapped
// at every change of it and at every line of its logs. Keyed by the run's UID, and
// checked against the spec's PipelineTasks.
var walkOrders = struct {
	sync.Mutex
	m map[types.UID]cachedWalk
}{m: map[types.UID]cachedWalk{}}

type cachedWalk struct {
	tasks []string
	nodes []walkNode
}

// maxWalkOrders bounds walkOrders: past it, it starts again empty.
const maxWalkOrders = 4096

// runWalkOrder is walkOrder(spec) for run, computed once per run.
func runWalkOrder(run *v1.PipelineRun, spec *v1.PipelineSpec) []walkNode {
	if run.UID == "" {
		return walkOrder(spec)
	}
	walkOrders.Lock()
	defer walkOrders.Unlock()
	if c, ok := walkOrders.m[run.UID]; ok && sameTasks(c.tasks, spec) {
		return c.nodes
	}
	if len(walkOrders.m) >= maxWalkOrders {
		clear(walkOrders.m)
	}
	c := cachedWalk{nodes: walkOrder(spec)}
	for _, pt := range spec.Tasks {
		c.tasks = append(c.tasks, pt.Name)
	}
	for _, pt := range spec.Finally {
		c.tasks = append(c.tasks, pt.Name)
	}
	walkOrders.m[run.UID] = c
	return c.nodes
}

func sameTasks(names []string, spec *v1.PipelineSpec) bool {
	if len(names) != len(spec.Tasks)+len(spec.Finally) {
		return false
	}
	for i, pt := range spec.Tasks {
		if names[i] != pt.Name {
			return false
		}
	}
	for i, pt := range spec.Finally {
		if names[len(spec.Tasks)+i] != pt.Name {
			return false
		}
	}
	return true
}

// walkOrder is the build's PipelineTasks with the parts of its across steps among them,
// each with the nodes it runs after. Finally tasks run after every other node.
func walkOrder(spec *v1.PipelineSpec) []walkNode {
	steps := acrossSteps(spec)
	var nodes []walkNode
	inserted := map[string]bool{}
	var all []string
	for i := range spec.Tasks {
		pt := &spec.Tasks[i]
		// An across step's head goes before its first task, its end after its last.
		for _, a := range steps {
			if a.head != "" && a.tasks[pt.Name] && !inserted[a.head] {
				inserted[a.head] = true
				nodes = append(nodes, walkNode{name: a.head, across: a, deps: headDeps(a, steps, spec)})
				all = append(all, a.head)
			}
		}
		deps := slices.Clone(pt.Deps())
		for _, a := range steps {
			if a.tasks[pt.Name] {
				if a.head != "" {
					deps = append(deps, a.head)
				}
				continue
			}
			if slices.ContainsFunc(pt.Deps(), func(d string) bool { return a.tasks[d] }) {
				deps = append(deps, a.end)
			}
		}
		nodes = append(nodes, walkNode{name: pt.Name, deps: deps})
		all = append(all, pt.Name)
		for j := len(steps) - 1; j >= 0; j-- {
			a := steps[j]
			if a.tasks[pt.Name] && lastTask(a, spec) == pt.Name {
				nodes = append(nodes, walkNode{name: a.end, across: a, isEnd: true, deps: endDeps(a, steps)})
				all = append(all, a.end)
			}
		}
	}
	for i := range spec.Finally {
		nodes = append(nodes, walkNode{name: spec.Finally[i].Name, deps: all})
	}
	return nodes
}

// headDeps are what an across step's head runs after: what its tasks run after outside
// it, as the nodes of the walk (a step inside an enclosing across step's end runs after
// that end), and the head of every across step it is in.
func headDeps(a *acrossStep, steps []*acrossStep, spec *v1.PipelineSpec) []string {
	var deps []string
	for _, pt := range spec.Tasks {
		if !a.tasks[pt.Name] {
			continue
		}
		for _, d := range pt.Deps() {
			if a.tasks[d] {
				continue
			}
			deps = append(deps, d)
			for _, o := range steps {
				if o.tasks[d] && !contains(o, a) {
					deps = append(deps, o.end)
				}
			}
		}
	}
	for _, o := range steps {
		if o != a && o.head != "" && contains(o, a) {
			deps = append(deps, o.head)
		}
	}
	return deps
}

// endDeps are what an across step's end runs after: its tasks and the ends of the
// across steps inside it.
func endDeps(a *acrossStep, steps []*acrossStep) []string {
	var deps []string
	for name := range a.tasks {
		deps = append(deps, name)
	}
	for _, o := range steps {
		if o != a && contains(a, o) {
			deps = append(deps, o.end)
		}
	}
	slices.Sort(deps)
	return deps
}

// contains tells whether across step inner is outer or inside it.
func contains(outer, inner *acrossStep) bool {
	for name := range inner.tasks {
		if !outer.tasks[name] {
			return false
		}
	}
	return len(inner.tasks) > 0
}

func lastTask(a *acrossStep, spec *v1.PipelineSpec) string {
	last := ""
	for _, pt := range spec.Tasks {
		if a.tasks[pt.Name] {
			last = pt.Name
		}
	}
	return last
}

// acrossSteps finds the build's across steps in the tree of its verdict, each with the
// PipelineTasks of its substeps, outermost first. An across step none of whose
// substeps is a PipelineTask (a plan the translator made nothing of) is left out.
func acrossSteps(spec *v1.PipelineSpec) []*acrossStep {
	var tree *runspec.Node
	byPlan := map[string][]string{}
	for _, pt := range spec.Finally {
		if s, ok := ParamsSpec(pt.Params); ok && s.Mode == runspec.ModeVerdict && s.Verdict != nil {
			tree = &s.Verdict.Tree
		}
	}
	if tree == nil {
		return nil
	}
	for _, pt := range spec.Tasks {
		if s, ok := ParamsSpec(pt.Params); ok {
			byPlan[s.PlanID] = append(byPlan[s.PlanID], pt.Name)
		}
	}
	var steps []*acrossStep
	var walk func(n runspec.Node)
	walk = func(n runspec.Node) {
		if n.Kind == runspec.KindAcross {
			a := &acrossStep{node: n, tasks: map[string]bool{}}
			eachNode(n, func(c runspec.Node) {
				for _, name := range byPlan[c.ID] {
					a.tasks[name] = true
				}
			})
			if len(a.tasks) > 0 {
				id := strconv.Quote(n.ID)
				if !n.Slotted {
					a.head = "across " + id + " head"
				}
				a.end = "across " + id + " end"
				steps = append(steps, a)
			}
		}
		for _, c := range children(n) {
			walk(c)
		}
	}
	walk(*tree)
	return steps
}

func children(n runspec.Node) []runspec.Node {
	out := slices.Clone(n.Steps)
	if n.Step != nil {
		out = append(out, *n.Step)
	}
	if n.Hook != nil {
		out = append(out, *n.Hook)
	}
	return out
}

func eachNode(n runspec.Node, f func(runspec.Node)) {
	f(n)
	for _, c := range children(n) {
		eachNode(c, f)
	}
}

// acrossLeaf is what the mapper knows of a step of an across step: its spec, its
// outcome, and the error it showed, if it did.
type acrossLeaf struct {
	spec    runspec.Spec
	tr      *v1.TaskRun
	outcome runspec.Outcome
	err     string
}

// acrossLeaves are the across step's PipelineTasks that have TaskRuns, by plan ID.
func (m *mapper) acrossLeaves(a *acrossStep) map[string]acrossLeaf {
	leaves := map[string]acrossLeaf{}
	for name := range a.tasks {
		o := m.obs.Steps[name]
		if o == nil || o.TaskRun == nil {
			continue
		}
		spec, ok := StepSpec(o.TaskRun)
		if !ok || spec.Mode == runspec.ModeJoin || spec.Mode == runspec.ModeVerdict {
			// A join is no step, and has the plan ID of its composite.
			continue
		}
		outcome, _ := runspec.ParseOutcome(Result(o.TaskRun, runspec.ResultOutcome))
		l := acrossLeaf{spec: spec, tr: o.TaskRun, outcome: outcome}
		if Done(o.TaskRun.Status.GetCondition(apis.ConditionSucceeded)) {
			if outcome == "" {
				l.outcome = runspec.Errored
			}
			l.err, _ = endError(o.TaskRun, o.Pod, outcome)
		}
		leaves[spec.PlanID] = l
	}
	return leaves
}

// began tells whether Concourse started the across step: a step of it ran, or is running.
func began(leaves map[string]acrossLeaf) bool {
	for _, l := range leaves {
		if l.outcome != runspec.NeverRan {
			return true
		}
	}
	return false
}

// acrossHead maps an across step's head, once one of its steps exists: initialize, the
// warning, start, at the time the steps it runs after ended.
func (m *mapper) acrossHead(n walkNode, runDone bool) bool {
	a := n.across
	if !began(m.acrossLeaves(a)) {
		// Not started (yet): if it never will, it has nothing to show.
		for name := range a.tasks {
			if !m.skipped[name] && !runDone {
				return false
			}
		}
		return true
	}
	at := runStart(m.obs.Run)
	for _, d := range n.deps {
		if o := m.obs.Steps[d]; o != nil && o.TaskRun != nil {
			at = max(at, endTime(o.TaskRun, o.Pod))
		}
	}
	origin := event.Origin{ID: concourse.PlanID(a.node.ID)}
	m.emit(Key{Step: a.head, Part: PartHead, N: 0}, event.Initialize{Origin: origin, Time: at})
	for i, line := range acrossWarning {
		m.emit(Key{Step: a.head, Part: PartLog, N: i}, event.Log{Time: at, Origin: event.Origin{ID: origin.ID, Source: event.OriginSourceStderr}, Payload: line})
	}
	if len(a.node.Substeps) == 0 {
		m.emit(Key{Step: a.head, Part: PartEnd, N: 0, Last: true}, event.Start{Origin: origin, Time: at})
		return true
	}
	// Its values known, Concourse lists the substeps (ConstructAcrossSubsteps), which
	// the web UI draws the step's children from.
	m.emit(Key{Step: a.head, Part: PartEnd, N: 0}, event.Start{Origin: origin, Time: at})
	m.emit(Key{Step: a.head, Part: PartEnd, N: 1, Last: true}, event.AcrossSubsteps{Origin: origin, Time: at, Substeps: a.node.Substeps})
	return true
}

// acrossEnd maps an across step's end once all its steps have: the error that came out
// of them, or finish.
func (m *mapper) acrossEnd(n walkNode) {
	a := n.across
	leaves := m.acrossLeaves(a)
	if !began(leaves) {
		return
	}
	if r, ok := leaves[a.node.ID]; ok && r.spec.Mode == runspec.ModeAcross && r.outcome != runspec.Succeeded {
		// The resolver could not find the values: its error was the across step's end.
		return
	}
	var at int64
	facts := eval.Facts{Outcomes: map[string]runspec.Outcome{}, Present: map[string]int{}}
	for id, l := range leaves {
		at = max(at, endTime(l.tr, nil))
		facts.Outcomes[id] = l.outcome
		if l.spec.Mode == runspec.ModeAcross {
			if c, err := strconv.Atoi(Result(l.tr, runspec.ResultCount)); err == nil {
				facts.Present[id] = c
			}
		}
	}
	origin := event.Origin{ID: concourse.PlanID(a.node.ID)}
	var e event.Event
	if msg := interruption(a, leaves); msg != "" {
		e = event.Error{Message: msg, Origin: origin, Time: at}
	} else if errs := propagated(a.node, leaves, facts); len(errs) > 0 {
		e = event.Error{Message: multiError(errs), Origin: origin, Time: at}
	} else {
		e = event.Finish{Origin: origin, Time: at, Succeeded: eval.Final(a.node, facts) == runspec.Succeeded}
	}
	m.emit(Key{Step: a.end, Part: PartEnd, N: 0, Last: true}, e)
}

// interruption is the error of an across step whose own context ended under it: the
// build was aborted ("interrupted"), or a timeout of a step around it passed ("timeout
// exceeded"). Steps of a fail-fast across that fired were aborted by the across step
// itself, which is no interruption of it.
func interruption(a *acrossStep, leaves map[string]acrossLeaf) string {
	fired := false
	if a.node.FailFast {
		for _, l := range leaves {
			fired = fired || l.outcome == runspec.Failed || l.outcome == runspec.Errored
		}
	}
	inside := map[string]bool{}
	eachNode(a.node, func(n runspec.Node) { inside[n.ID] = true })
	for _, id := range slices.Sorted(maps.Keys(leaves)) {
		l := leaves[id]
		switch {
		case l.outcome == runspec.Aborted && l.err == "interrupted" && !fired:
			return "interrupted"
		case l.err == "timeout exceeded":
			for _, layer := range l.spec.Context {
				if layer.Kind == runspec.LayerTimeout && !inside[layer.ID] {
					return "timeout exceeded"
				}
			}
		}
	}
	return ""
}

// propagated are the errors that come out of a step, in plan order, as Concourse's steps
// pass them on: a do stops at its first step that did not succeed, in_parallel and across
// gather their steps' errors, try swallows them, a retry has its last attempt's, a hook
// adds its own where the step it wraps lets it run. A step that was aborted or timed out
// passes no error (Concourse's context errors are not errors of the step).
func propagated(n runspec.Node, leaves map[string]acrossLeaf, facts eval.Facts) []string {
	outcome := func(c runspec.Node) runspec.Outcome { return eval.Final(c, facts) }
	switch n.Kind {
	case runspec.KindLeaf:
		l, ok := leaves[n.ID]
		if ok && l.outcome == runspec.Errored && l.err != "" && l.err != "interrupted" && l.err != "timeout exceeded" {
			return []string{l.err}
		}
		return nil
	case runspec.KindDo:
		for _, c := range n.Steps {
			if outcome(c) != runspec.Succeeded {
				return propagated(c, leaves, facts)
			}
		}
		return nil
	case runspec.KindInParallel, runspec.KindAcross:
		steps := n.Steps
		if n.Slotted {
			steps = steps[:max(0, min(facts.Present[n.ID], len(steps)))]
		}
		var errs []string
		for _, c := range steps {
			errs = append(errs, propagated(c, leaves, facts)...)
		}
		return errs
	case runspec.KindRetry:
		for i := len(n.Steps) - 1; i >= 0; i-- {
			if o := outcome(n.Steps[i]); o != runspec.NeverRan && o != "" {
				return propagated(n.Steps[i], leaves, facts)
			}
		}
		return nil
	case runspec.KindTry:
		return nil
	}
	if n.Step == nil {
		return nil
	}
	errs := propagated(*n.Step, leaves, facts)
	hook := func() []string {
		if n.Hook == nil {
			return nil
		}
		return propagated(*n.Hook, leaves, facts)
	}
	switch n.Kind {
	case runspec.KindOnSuccess:
		if len(errs) == 0 && outcome(*n.Step) == runspec.Succeeded {
			return hook()
		}
	case runspec.KindOnFailure:
		if len(errs) == 0 && outcome(*n.Step) == runspec.Failed {
			return hook()
		}
	case runspec.KindEnsure:
		return append(errs, hook()...)
	}
	return errs
}

// multiError is the text of a go-multierror of errs, as Concourse's parallel steps
// return them.
func multiError(errs []string) string {
	if len(errs) == 1 {
		return fmt.Sprintf("1 error occurred:\n\t* %s\n\n", errs[0])
	}
	points := make([]string, len(errs))
	for i, e := range errs {
		points[i] = "* " + e
	}
	return fmt.Sprintf("%d errors occurred:\n\t%s\n\n", len(errs), strings.Join(points, "\n\t"))
}
