package translate_test

import (
	"fmt"
	"math/rand"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/runner/eval"
	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/translate"
)

// The semantics tests run compiled Pipelines in a small model of Tekton's scheduling (DAG,
// `when`, `onError: continue`, results, finally) and compare what ran, and the build's
// status, with an interpreter of Concourse's own rules (concourse-semantics.md §3.1-§3.2).

// noResult is a leaf whose pod never wrote anything (an image that cannot be pulled):
// Concourse calls that an error.
const noResult runspec.Outcome = "no-result"

// simulate runs a compiled build in the model, each leaf ending as outcomes[planID] says.
// It returns the plan IDs of the leaves that ran and the build's status.
func simulate(t *testing.T, r *translate.Result, outcomes map[string]runspec.Outcome) ([]string, runspec.Outcome) {
	t.Helper()
	return newModel(t, r).run(t, outcomes, nil)
}

// simulateAcross is simulate where the resolver of each across step whose values are
// known only at run time, when it succeeds, finds counts[its plan ID] combinations.
func simulateAcross(t *testing.T, r *translate.Result, outcomes map[string]runspec.Outcome, counts map[string]int) ([]string, runspec.Outcome) {
	t.Helper()
	return newModel(t, r).run(t, outcomes, counts)
}

// refRe matches a reference to a task's result.
var refRe = regexp.MustCompile(`\$\(tasks\.([a-z0-9-]+)\.results\.([a-z]+)\)`)

// model is a compiled build ready to run in the model of Tekton's scheduling: its tasks
// with their specs decoded and the tasks each waits for, so that the tables, which run
// one build under thousands of outcomes, compile and decode it once.
type model struct {
	tasks   []modelTask
	finally map[string]bool
}

type modelTask struct {
	pt   v1.PipelineTask
	spec runspec.Spec
	deps []string
}

func newModel(t *testing.T, r *translate.Result) *model {
	t.Helper()
	m := &model{finally: map[string]bool{}}
	for _, f := range r.Pipeline.Spec.Finally {
		m.finally[f.Name] = true
	}
	for _, pt := range append(append([]v1.PipelineTask{}, r.Pipeline.Spec.Tasks...), r.Pipeline.Spec.Finally...) {
		var raw string
		for _, p := range pt.Params {
			if p.Name == "spec" {
				raw = p.Value.StringVal
			}
		}
		spec, err := runspec.Decode(raw)
		if err != nil {
			t.Fatalf("task %s: %v", pt.Name, err)
		}
		deps := append([]string{}, pt.RunAfter...)
		for _, w := range pt.When {
			for _, m := range refRe.FindAllStringSubmatch(w.Input, -1) {
				deps = append(deps, m[1])
			}
		}
		for _, p := range pt.Params {
			for _, m := range refRe.FindAllStringSubmatch(p.Value.StringVal, -1) {
				deps = append(deps, m[1])
			}
		}
		m.tasks = append(m.tasks, modelTask{pt, spec, deps})
	}
	return m
}

// run runs the build, each leaf ending as outcomes[planID] says, the resolver of each
// across step whose values are known only at run time finding counts[its plan ID]
// combinations when it succeeds. It returns the plan IDs of the leaves that ran and the
// build's status.
func (m *model) run(t *testing.T, outcomes map[string]runspec.Outcome, counts map[string]int) ([]string, runspec.Outcome) {
	t.Helper()
	results := map[string]map[string]string{} // task → result → value
	done := map[string]bool{}
	state := eval.Facts{Outcomes: map[string]runspec.Outcome{}, Present: map[string]int{}}
	var ran []string
	status := runspec.Outcome("")
	resolve := func(s string) (string, bool) {
		if !strings.Contains(s, "$(") {
			return s, true
		}
		ok := true
		out := refRe.ReplaceAllStringFunc(s, func(m string) string {
			sub := refRe.FindStringSubmatch(m)
			v, found := results[sub[1]][sub[2]]
			if !found {
				ok = false
			}
			return v
		})
		return out, ok
	}
	for progress := true; progress; {
		progress = false
		for _, tk := range m.tasks {
			if done[tk.pt.Name] || m.finally[tk.pt.Name] {
				continue
			}
			ready := true
			for _, d := range tk.deps {
				ready = ready && done[d]
			}
			if !ready {
				continue
			}
			done[tk.pt.Name], progress = true, true
			skip := false
			for _, w := range tk.pt.When {
				in, ok := resolve(w.Input)
				if !ok {
					skip = true // Tekton skips a task whose when needs a missing result
					break
				}
				match := false
				for _, v := range w.Values {
					match = match || v == in
				}
				if (w.Operator == "in") != match {
					skip = true
				}
			}
			for _, p := range tk.pt.Params {
				if _, ok := resolve(p.Value.StringVal); !ok {
					skip = true
				}
			}
			if skip {
				continue
			}
			o := runTask(t, tk.spec, outcomes, state)
			if tk.spec.Mode != runspec.ModeJoin {
				ran = append(ran, tk.spec.PlanID)
			}
			if o != noResult {
				results[tk.pt.Name] = map[string]string{"outcome": string(o)}
			}
			if tk.spec.Mode == runspec.ModeAcross && o == runspec.Succeeded {
				n := counts[tk.spec.PlanID]
				results[tk.pt.Name][runspec.ResultCount] = fmt.Sprint(n)
				state.Present[tk.spec.PlanID] = n
			}
		}
	}
	for _, tk := range m.tasks {
		if !done[tk.pt.Name] && !m.finally[tk.pt.Name] {
			t.Fatalf("task %s never became ready: the DAG has a cycle or a dangling reference", tk.pt.Name)
		}
		if m.finally[tk.pt.Name] {
			status = runTask(t, tk.spec, outcomes, state)
		}
	}
	sort.Strings(ran)
	return ran, status
}

// runTask is what the runner does for a spec, in the model.
func runTask(t *testing.T, spec runspec.Spec, outcomes map[string]runspec.Outcome, state eval.Facts) runspec.Outcome {
	switch spec.Mode {
	case runspec.ModeJoin:
		o := eval.Final(spec.Join.Tree, state)
		state.Outcomes[spec.PlanID] = o
		return o
	case runspec.ModeVerdict:
		return eval.Final(spec.Verdict.Tree, state)
	}
	o, ok := outcomes[spec.PlanID]
	if !ok {
		t.Fatalf("no outcome given for leaf %s", spec.PlanID)
	}
	if o != noResult {
		state.Outcomes[spec.PlanID] = o
	}
	return o
}

// interpret runs a plan by Concourse's rules: the leaves that run, and the outcome.
func interpret(p *concourse.Plan, outcomes map[string]runspec.Outcome, ran *[]string) runspec.Outcome {
	switch {
	case p.Task != nil:
		*ran = append(*ran, string(p.ID))
		o := outcomes[string(p.ID)]
		if o == noResult {
			return runspec.Errored
		}
		return o
	case p.Do != nil:
		for i := range *p.Do {
			if o := interpret(&(*p.Do)[i], outcomes, ran); o != runspec.Succeeded {
				return o
			}
		}
		return runspec.Succeeded
	case p.InParallel != nil:
		var all []runspec.Outcome
		for i := range p.InParallel.Steps {
			all = append(all, interpret(&p.InParallel.Steps[i], outcomes, ran))
		}
		return worst(all)
	case p.Try != nil:
		if interpret(&p.Try.Step, outcomes, ran) == runspec.Aborted {
			return runspec.Aborted
		}
		return runspec.Succeeded
	case p.Timeout != nil:
		return interpret(&p.Timeout.Step, outcomes, ran)
	case p.Retry != nil:
		var o runspec.Outcome
		for i := range *p.Retry {
			o = interpret(&(*p.Retry)[i], outcomes, ran)
			if o == runspec.Succeeded || o == runspec.Aborted {
				return o
			}
		}
		return o
	case p.OnSuccess != nil:
		o := interpret(&p.OnSuccess.Step, outcomes, ran)
		if o != runspec.Succeeded {
			return o
		}
		return interpret(&p.OnSuccess.Next, outcomes, ran)
	case p.OnFailure != nil:
		o := interpret(&p.OnFailure.Step, outcomes, ran)
		if o != runspec.Failed {
			return o
		}
		switch h := interpret(&p.OnFailure.Next, outcomes, ran); h {
		case runspec.Errored, runspec.Aborted:
			return h
		}
		return runspec.Failed
	case p.OnError != nil:
		// Concourse runs an on_error hook with context.Background(), so it is never
		// canceled: an "aborted" hook here is a case that cannot happen, and the step's
		// error is the result.
		o := interpret(&p.OnError.Step, outcomes, ran)
		if o == runspec.Errored {
			interpret(&p.OnError.Next, outcomes, ran)
		}
		return o
	case p.OnAbort != nil:
		o := interpret(&p.OnAbort.Step, outcomes, ran)
		if o == runspec.Aborted {
			interpret(&p.OnAbort.Next, outcomes, ran)
		}
		return o
	case p.Ensure != nil:
		o := interpret(&p.Ensure.Step, outcomes, ran)
		h := interpret(&p.Ensure.Next, outcomes, ran)
		// The build's status is aborted when a Canceled is anywhere in the errors.
		switch {
		case o == runspec.Aborted || h == runspec.Aborted:
			return runspec.Aborted
		case o == runspec.Errored || h == runspec.Errored:
			return runspec.Errored
		case o == runspec.Succeeded && h == runspec.Succeeded:
			return runspec.Succeeded
		}
		return runspec.Failed
	}
	panic(fmt.Sprintf("unexpected plan %+v", p))
}

// worst combines parallel outcomes: an abort wins, then an error, then a failure.
func worst(all []runspec.Outcome) runspec.Outcome {
	rank := map[runspec.Outcome]int{runspec.Succeeded: 0, runspec.Failed: 1, runspec.Errored: 2, runspec.Aborted: 3}
	out := runspec.Succeeded
	for _, o := range all {
		if rank[o] > rank[out] {
			out = o
		}
	}
	return out
}

// gen makes random plans of config tasks and every composite.
type gen struct {
	r    *rand.Rand
	next int
}

func (g *gen) id() concourse.PlanID {
	g.next++
	return concourse.PlanID(fmt.Sprintf("%x", g.next))
}

var leafConfig = &concourse.TaskConfig{Platform: "linux", RootfsURI: "docker:///busybox", Run: concourse.TaskRunConfig{Path: "true"}}

func (g *gen) plan(depth int) concourse.Plan {
	if depth <= 0 || g.r.Intn(4) == 0 {
		id := g.id()
		return concourse.Plan{ID: id, Task: &concourse.TaskPlan{Name: "t" + string(id), Config: leafConfig}}
	}
	kids := func(n int) []concourse.Plan {
		var out []concourse.Plan
		for i := 0; i < n; i++ {
			out = append(out, g.plan(depth-1))
		}
		return out
	}
	switch g.r.Intn(10) {
	case 0:
		do := concourse.DoPlan(kids(1 + g.r.Intn(3)))
		return concourse.Plan{ID: g.id(), Do: &do}
	case 1:
		return concourse.Plan{ID: g.id(), InParallel: &concourse.InParallelPlan{Steps: kids(1 + g.r.Intn(3)), Limit: g.r.Intn(3)}}
	case 2:
		return concourse.Plan{ID: g.id(), Try: &concourse.TryPlan{Step: g.plan(depth - 1)}}
	case 3:
		return concourse.Plan{ID: g.id(), Timeout: &concourse.TimeoutPlan{Step: g.plan(depth - 1), Duration: "1m"}}
	case 4:
		retry := concourse.RetryPlan(kids(2 + g.r.Intn(2)))
		return concourse.Plan{ID: g.id(), Retry: &retry}
	case 5:
		s, n := g.plan(depth-1), g.plan(depth-1)
		return concourse.Plan{ID: g.id(), OnSuccess: &concourse.OnSuccessPlan{Step: s, Next: n}}
	case 6:
		s, n := g.plan(depth-1), g.plan(depth-1)
		return concourse.Plan{ID: g.id(), OnFailure: &concourse.OnFailurePlan{Step: s, Next: n}}
	case 7:
		s, n := g.plan(depth-1), g.plan(depth-1)
		return concourse.Plan{ID: g.id(), OnError: &concourse.OnErrorPlan{Step: s, Next: n}}
	case 8:
		s, n := g.plan(depth-1), g.plan(depth-1)
		return concourse.Plan{ID: g.id(), OnAbort: &concourse.OnAbortPlan{Step: s, Next: n}}
	default:
		s, n := g.plan(depth-1), g.plan(depth-1)
		return concourse.Plan{ID: g.id(), Ensure: &concourse.EnsurePlan{Step: s, Next: n}}
	}
}

func leaves(p concourse.Plan) []string {
	var out []string
	p.Each(func(n *concourse.Plan) {
		if n.Task != nil {
			out = append(out, string(n.ID))
		}
	})
	return out
}

func checkPlan(t *testing.T, plan concourse.Plan, outcomes map[string]runspec.Outcome) {
	t.Helper()
	checkModel(t, plan, compile(t, plan), outcomes)
}

// compile translates a plan of the tables into the model.
func compile(t *testing.T, plan concourse.Plan) *model {
	t.Helper()
	r, err := translate.Translate(plan, translate.Options{Pipeline: "p", Job: "j"})
	if err != nil {
		t.Fatal(err)
	}
	return newModel(t, r)
}

// checkModel is checkPlan for a plan compiled once (compile) and checked under many outcomes.
func checkModel(t *testing.T, plan concourse.Plan, m *model, outcomes map[string]runspec.Outcome) {
	t.Helper()
	var wantRan []string
	wantStatus := interpret(&plan, outcomes, &wantRan)
	sort.Strings(wantRan)
	gotRan, gotStatus := m.run(t, outcomes, nil)
	if diff := cmp.Diff(wantRan, gotRan); diff != "" || wantStatus != gotStatus {
		var b strings.Builder
		for _, id := range leaves(plan) {
			fmt.Fprintf(&b, "%s=%s ", id, outcomes[id])
		}
		t.Errorf("plan %s\noutcomes %s\nleaves that ran (-concourse +tekton):\n%s\nstatus: concourse %s, tekton %s",
			planString(&plan), b.String(), diff, wantStatus, gotStatus)
	}
}

func planString(p *concourse.Plan) string {
	kids := func(ps []concourse.Plan) string {
		var s []string
		for i := range ps {
			s = append(s, planString(&ps[i]))
		}
		return strings.Join(s, ", ")
	}
	switch {
	case p.Task != nil:
		return string(p.ID)
	case p.Do != nil:
		return "do[" + kids(*p.Do) + "]"
	case p.InParallel != nil:
		return fmt.Sprintf("in_parallel(limit %d)[%s]", p.InParallel.Limit, kids(p.InParallel.Steps))
	case p.Retry != nil:
		return "attempts[" + kids(*p.Retry) + "]"
	case p.Try != nil:
		return "try(" + planString(&p.Try.Step) + ")"
	case p.Timeout != nil:
		return "timeout(" + planString(&p.Timeout.Step) + ")"
	case p.OnSuccess != nil:
		return "on_success(" + planString(&p.OnSuccess.Step) + ", " + planString(&p.OnSuccess.Next) + ")"
	case p.OnFailure != nil:
		return "on_failure(" + planString(&p.OnFailure.Step) + ", " + planString(&p.OnFailure.Next) + ")"
	case p.OnError != nil:
		return "on_error(" + planString(&p.OnError.Step) + ", " + planString(&p.OnError.Next) + ")"
	case p.OnAbort != nil:
		return "on_abort(" + planString(&p.OnAbort.Step) + ", " + planString(&p.OnAbort.Next) + ")"
	case p.Ensure != nil:
		return "ensure(" + planString(&p.Ensure.Step) + ", " + planString(&p.Ensure.Next) + ")"
	}
	return "?"
}

var allOutcomes = []runspec.Outcome{runspec.Succeeded, runspec.Failed, runspec.Errored, runspec.Aborted, noResult}

// leafTask is a task step of plan ID id, named t<id>.
func leafTask(id string) concourse.Plan {
	return concourse.Plan{ID: concourse.PlanID(id), Task: &concourse.TaskPlan{Name: "t" + id, Config: leafConfig}}
}

// doPlan is a do step of plan ID id.
func doPlan(id string, ps ...concourse.Plan) concourse.Plan {
	d := concourse.DoPlan(ps)
	return concourse.Plan{ID: concourse.PlanID(id), Do: &d}
}

// TestSemanticsTable checks every construct against every outcome of its step and hook.
func TestSemanticsTable(t *testing.T) {
	plans := map[string]concourse.Plan{
		"do":                    doPlan("9", leafTask("1"), leafTask("2")),
		"in_parallel":           {ID: "9", InParallel: &concourse.InParallelPlan{Steps: []concourse.Plan{leafTask("1"), leafTask("2")}}},
		"try":                   doPlan("9", concourse.Plan{ID: "8", Try: &concourse.TryPlan{Step: leafTask("1")}}, leafTask("2")),
		"attempts":              doPlan("9", concourse.Plan{ID: "8", Retry: &concourse.RetryPlan{leafTask("1"), leafTask("2")}}, leafTask("3")),
		"attempts last":         doPlan("9", leafTask("3"), concourse.Plan{ID: "8", Retry: &concourse.RetryPlan{leafTask("1"), leafTask("2")}}),
		"in_parallel of try":    {ID: "9", InParallel: &concourse.InParallelPlan{Steps: []concourse.Plan{{ID: "8", Try: &concourse.TryPlan{Step: leafTask("1")}}, leafTask("2")}}},
		"on_success":            {ID: "9", OnSuccess: &concourse.OnSuccessPlan{Step: leafTask("1"), Next: leafTask("2")}},
		"on_failure":            {ID: "9", OnFailure: &concourse.OnFailurePlan{Step: leafTask("1"), Next: leafTask("2")}},
		"on_error":              {ID: "9", OnError: &concourse.OnErrorPlan{Step: leafTask("1"), Next: leafTask("2")}},
		"on_abort":              {ID: "9", OnAbort: &concourse.OnAbortPlan{Step: leafTask("1"), Next: leafTask("2")}},
		"ensure":                {ID: "9", Ensure: &concourse.EnsurePlan{Step: leafTask("1"), Next: leafTask("2")}},
		"ensure on a composite": {ID: "9", Ensure: &concourse.EnsurePlan{Step: doPlan("8", leafTask("1"), leafTask("3")), Next: leafTask("2")}},
		"hook on a composite":   {ID: "9", OnFailure: &concourse.OnFailurePlan{Step: doPlan("8", leafTask("1"), leafTask("3")), Next: leafTask("2")}},
		// on_failure hooks compiled once for each way their step can fail.
		"on_failure of in_parallel": {ID: "9", OnFailure: &concourse.OnFailurePlan{
			Step: concourse.Plan{ID: "8", InParallel: &concourse.InParallelPlan{Steps: []concourse.Plan{leafTask("1"), leafTask("3"), leafTask("4")}}}, Next: leafTask("2")}},
		"on_failure of a sequence": {ID: "9", OnFailure: &concourse.OnFailurePlan{Step: doPlan("8",
			concourse.Plan{ID: "7", InParallel: &concourse.InParallelPlan{Steps: []concourse.Plan{leafTask("1"), leafTask("3")}, Limit: 1}},
			concourse.Plan{ID: "6", OnSuccess: &concourse.OnSuccessPlan{Step: leafTask("4"), Next: leafTask("5")}}),
			Next: doPlan("a", leafTask("2"), leafTask("b"))}},
		"nested on_failure": {ID: "9", OnFailure: &concourse.OnFailurePlan{Step: doPlan("8",
			concourse.Plan{ID: "7", OnFailure: &concourse.OnFailurePlan{Step: doPlan("6", leafTask("1"), leafTask("3")), Next: leafTask("4")}}, leafTask("5")),
			Next: leafTask("2")}},
		"on_failure of in_parallel of composites": {ID: "9", OnFailure: &concourse.OnFailurePlan{
			Step: concourse.Plan{ID: "8", InParallel: &concourse.InParallelPlan{Steps: []concourse.Plan{
				doPlan("7", leafTask("3"), leafTask("4")), leafTask("1"), {ID: "6", OnSuccess: &concourse.OnSuccessPlan{Step: leafTask("5"), Next: leafTask("a")}}}}},
			Next: leafTask("2")}},
		"on_failure of ensure": {ID: "9", OnFailure: &concourse.OnFailurePlan{Step: doPlan("8",
			concourse.Plan{ID: "7", Ensure: &concourse.EnsurePlan{Step: doPlan("6", leafTask("1"), leafTask("3")), Next: leafTask("4")}}, leafTask("5")),
			Next: leafTask("2")}},
		"on_failure of on_error and on_abort": {ID: "9", OnFailure: &concourse.OnFailurePlan{Step: doPlan("8",
			concourse.Plan{ID: "7", OnError: &concourse.OnErrorPlan{Step: leafTask("1"), Next: leafTask("3")}},
			concourse.Plan{ID: "6", OnAbort: &concourse.OnAbortPlan{Step: leafTask("4"), Next: leafTask("5")}}),
			Next: leafTask("2")}},
	}
	for name, plan := range plans {
		t.Run(name, func(t *testing.T) {
			ids := leaves(plan)
			m := compile(t, plan)
			var each func(i int, outcomes map[string]runspec.Outcome)
			each = func(i int, outcomes map[string]runspec.Outcome) {
				if i == len(ids) {
					checkModel(t, plan, m, outcomes)
					return
				}
				for _, o := range allOutcomes {
					next := map[string]runspec.Outcome{}
					for k, v := range outcomes {
						next[k] = v
					}
					next[ids[i]] = o
					each(i+1, next)
				}
			}
			each(0, map[string]runspec.Outcome{})
		})
	}
}

// TestSemanticsRandom cross-checks random plans with random leaf outcomes.
func TestSemanticsRandom(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 1500; i++ {
		g := &gen{r: r}
		plan := g.plan(4)
		outcomes := map[string]runspec.Outcome{}
		for _, id := range leaves(plan) {
			// Mostly successes, so that deep plans get to run their later steps.
			if r.Intn(3) > 0 {
				outcomes[id] = runspec.Succeeded
			} else {
				outcomes[id] = allOutcomes[r.Intn(len(allOutcomes))]
			}
		}
		checkPlan(t, plan, outcomes)
		if t.Failed() {
			return
		}
	}
}

// TestFailureHookPods: a job of steps in sequence (an in_parallel of gets among them)
// with a job-level on_failure hook runs, when it succeeds, its steps' pods alone: the
// hook, compiled once for each way to fail, is skipped, no join runs, and the last
// step's pod holds the verdict. When a step fails, the hook runs once.
func TestFailureHookPods(t *testing.T) {
	steps := concourse.DoPlan{
		{ID: "3", InParallel: &concourse.InParallelPlan{Steps: []concourse.Plan{leafTask("1"), leafTask("2")}}},
		leafTask("4"), leafTask("5"),
	}
	plan := concourse.Plan{ID: "9", OnFailure: &concourse.OnFailurePlan{Step: concourse.Plan{ID: "6", Do: &steps}, Next: leafTask("7")}}
	r, err := translate.Translate(plan, translate.Options{Pipeline: "p", Job: "j"})
	if err != nil {
		t.Fatal(err)
	}
	var copies []string
	fused := ""
	for _, pt := range r.Pipeline.Spec.Tasks {
		for _, p := range pt.Params {
			switch {
			case p.Name == "spec" && strings.Contains(p.Value.StringVal, `"mode":"join"`):
				t.Errorf("task %s is a join", pt.Name)
			case p.Name == "spec" && strings.Contains(p.Value.StringVal, `"plan_id":"7"`):
				copies = append(copies, pt.Name)
			case p.Name == runspec.ParamVerdictSpec:
				fused = pt.Name
			}
		}
	}
	// A copy of the hook for each of the 4 steps that can fail, named after it.
	want := []string{"task-t7-if-task-t1-failed", "task-t7-if-task-t2-failed", "task-t7-if-task-t4-failed", "task-t7-if-task-t5-failed"}
	if !slices.Equal(copies, want) || fused != "task-t5" {
		t.Errorf("copies of the hook %q, want %q; verdict held by %q, want task-t5", copies, want, fused)
	}
	for _, failing := range []string{"", "1", "2", "4", "5"} {
		outcomes := map[string]runspec.Outcome{"1": runspec.Succeeded, "2": runspec.Succeeded, "4": runspec.Succeeded, "5": runspec.Succeeded, "7": runspec.Succeeded}
		if failing != "" {
			outcomes[failing] = runspec.Failed
		}
		ran, _ := simulate(t, r, outcomes)
		hooks := strings.Count(strings.Join(ran, " "), "7")
		if want := map[bool]int{true: 0, false: 1}[failing == ""]; hooks != want {
			t.Errorf("step %q failed: the hook ran %d times, want %d (ran %v)", failing, hooks, want, ran)
		}
		checkPlan(t, plan, outcomes)
	}
}

// TestJoinsOnlyWhereAsked: a join is made for a node's success only when a step after it
// asks for that success. A build whose plan ends with attempts, a try or an in_parallel
// of them runs no join for the build's last step: its verdict reads the build's state.
// attempts makes the join that guards its next attempt, and a step after the attempts
// the join of their success, which it reads. Each plan is checked against Concourse's
// semantics with each of its leaves ending in each outcome.
func TestJoinsOnlyWhereAsked(t *testing.T) {
	attempts := concourse.Plan{ID: "8", Retry: &concourse.RetryPlan{leafTask("1"), leafTask("2")}}
	try := concourse.Plan{ID: "7", Try: &concourse.TryPlan{Step: leafTask("4")}}
	for _, tt := range []struct {
		name  string
		plan  concourse.Plan
		joins []string
	}{
		{"attempts last", doPlan("9", leafTask("3"), attempts), []string{"join-t1-attempt-1"}},
		{"try last", doPlan("9", leafTask("3"), try), nil},
		{"in_parallel last", doPlan("9", leafTask("3"), concourse.Plan{ID: "6", InParallel: &concourse.InParallelPlan{Steps: []concourse.Plan{attempts, try}}}),
			[]string{"join-t1-attempt-1"}},
		{"a step after attempts", doPlan("9", attempts, leafTask("3")), []string{"join-t1-attempt-1", "join-t1"}},
		{"a step after a try", doPlan("9", try, leafTask("3")), []string{"join-try-t4"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, err := translate.Translate(tt.plan, translate.Options{Pipeline: "p", Job: "j"})
			if err != nil {
				t.Fatal(err)
			}
			var joins []string
			for _, pt := range r.Pipeline.Spec.Tasks {
				for _, p := range pt.Params {
					if p.Name == "spec" && strings.Contains(p.Value.StringVal, `"mode":"join"`) {
						joins = append(joins, pt.Name)
					}
				}
			}
			if !slices.Equal(joins, tt.joins) {
				t.Errorf("joins %q, want %q", joins, tt.joins)
			}
			// Each leaf in turn ends in each outcome, the others succeeding.
			ids := leaves(tt.plan)
			for _, varied := range ids {
				for _, o := range allOutcomes {
					outcomes := map[string]runspec.Outcome{}
					for _, id := range ids {
						outcomes[id] = runspec.Succeeded
					}
					outcomes[varied] = o
					checkPlan(t, tt.plan, outcomes)
				}
			}
		})
	}
}
