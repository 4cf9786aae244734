package translate

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tektoncd/pipeline/pkg/apis/pipeline/pod"
	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/vars"
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// The compile scheme (DESIGN §3). Every leaf step is a PipelineTask running the step
// runner, with `onError: continue` and its Concourse outcome as the result `outcome`.
// Composite steps become guards: each compiled node knows the condition under which it
// starts (its entry) and answers "did it end in one of these outcomes?" with a condition
// later tasks can take as their entry. Cheap answers are `when` expressions over a leaf's
// outcome; an answer no `when` can give (an OR of outcomes, or "errored", which a pod that
// never started cannot report) comes from a join task: the runner evaluating the node's
// subtree from the outcomes in the build's state directory.

// cond is a PipelineTask's entry condition: every `when` holds, after the tasks in after.
type cond struct {
	when  v1.WhenExpressions
	after []string
}

func (c cond) and(o cond) cond {
	out := cond{when: append(append(v1.WhenExpressions{}, c.when...), o.when...)}
	seen := map[string]bool{}
	for _, a := range append(append([]string{}, c.after...), o.after...) {
		if !seen[a] {
			seen[a] = true
			out.after = append(out.after, a)
		}
	}
	return out
}

// outcomes is a set of Concourse outcomes, in a fixed order.
type outcomes []runspec.Outcome

var (
	anyOutcome   = outcomes{runspec.Succeeded, runspec.Failed, runspec.Errored, runspec.Aborted}
	onlySuccess  = outcomes{runspec.Succeeded}
	failedOrErr  = outcomes{runspec.Failed, runspec.Errored}
	onlyFailed   = outcomes{runspec.Failed}
	onlyErrored  = outcomes{runspec.Errored}
	onlyAborted  = outcomes{runspec.Aborted}
	everyOutcome = len(anyOutcome)
)

func (s outcomes) has(o runspec.Outcome) bool {
	for _, x := range s {
		if x == o {
			return true
		}
	}
	return false
}

func (s outcomes) values() []string {
	out := make([]string, len(s))
	for i, o := range s {
		out[i] = string(o)
	}
	return out
}

// handle is a compiled plan node.
type handle struct {
	tree  runspec.Node
	name  string
	entry cond
	// tasks are every PipelineTask of the node, for "after it finished".
	tasks []string
	// leaf is set when the node is one PipelineTask whose outcome result is the node's.
	leaf string
	// success, when set, is a cheap condition for "the node succeeded".
	success *cond
	// join is the node's join task, made on first need.
	join string
}

// layers is the Concourse context a subtree runs in.
type scope struct {
	layers     []runspec.Layer
	hookStatus string
	scope      []string
	// acrossVars are the enclosing across steps' values for this substep.
	acrossVars map[string]any
}

func (s scope) with(l runspec.Layer) scope {
	s.layers = append(append([]runspec.Layer{}, s.layers...), l)
	return s
}

func outcomeOf(task string) string { return "$(tasks." + task + ".results.outcome)" }

// test is the condition under which a task runs exactly when h ended in one of s.
func (c *compiler) test(h *handle, s outcomes) cond {
	switch {
	case len(s) == everyOutcome:
		// "h finished": runAfter holds for skipped tasks too, and h's own entry tells
		// whether h was entered at all.
		return h.entry.and(cond{after: h.tasks})
	case len(s) == 1 && s[0] == runspec.Succeeded && h.success != nil:
		return *h.success
	case h.leaf != "" && !s.has(runspec.Errored):
		return cond{when: v1.WhenExpressions{{Input: outcomeOf(h.leaf), Operator: "in", Values: s.values()}}, after: []string{h.leaf}}
	}
	j := c.joinFor(h)
	return cond{when: v1.WhenExpressions{{Input: outcomeOf(j), Operator: "in", Values: s.values()}}, after: []string{j}}
}

// joinFor makes (once) the task that publishes h's outcome.
func (c *compiler) joinFor(h *handle) string {
	if h.join != "" {
		return h.join
	}
	spec := c.spec(runspec.ModeJoin, concourse.PlanID(h.tree.ID), h.name, scope{})
	spec.Join = &runspec.Join{Tree: h.tree}
	h.join = c.runnerTask("join-"+h.name, spec, h.entry.and(cond{after: h.tasks}))
	return h.join
}

type compiler struct {
	opts  Options
	tasks []v1.PipelineTask
	names map[string]bool
	// taskDefs are the shared Task definitions, by name.
	taskDefs map[string]*v1.Task
	// runSpecs are per-PipelineTask pod settings (node selectors for tags).
	runSpecs []v1.PipelineTaskRunSpec
	// specs are the runner specs of the PipelineTasks, encoded into their params at the end
	// (a fail-fast group adds its layer to its children's specs after compiling them).
	specs map[string]*runspec.Spec
	// secrets are the Secrets the build reads credentials from.
	secrets map[string]bool
	creds   map[string]Credential
	// images are the artifacts a task may use as its image (`image: name`), by name: the
	// result of the get that fetched it from a registry, or "" with why it cannot be one.
	images map[string]artifactImage
	err    error
}

// artifactImage is what the compiler knows of an artifact, for tasks that run it as image.
type artifactImage struct {
	ref    string // a Tekton result reference to the image, or ""
	reason string // why it cannot be run, when ref is ""
}

func (c *compiler) fail(p *concourse.Plan, step, format string, args ...any) {
	if c.err == nil {
		c.err = &UnsupportedError{PlanID: p.ID, Step: step, Reason: fmt.Sprintf(format, args...)}
	}
}

// taskName returns a unique, readable PipelineTask name.
func (c *compiler) taskName(base string) string {
	name := labelName(base)
	for i := 2; c.names[name]; i++ {
		name = labelName(fmt.Sprintf("%s-%d", base, i))
	}
	c.names[name] = true
	return name
}

func (c *compiler) spec(mode runspec.Mode, planID concourse.PlanID, name string, sc scope) runspec.Spec {
	return runspec.Spec{
		Mode:   mode,
		PlanID: string(planID),
		Name:   name,
		Build: runspec.Build{
			Name:         c.opts.Build,
			TeamName:     c.opts.Team,
			PipelineName: c.opts.Pipeline,
			InstanceVars: c.opts.InstanceVars,
			JobName:      c.opts.Job,
			ExternalURL:  c.opts.ExternalURL,
		},
		HookStatus: sc.hookStatus,
		Context:    sc.layers,
		Scope:      sc.scope,
		AcrossVars: sc.acrossVars,
		VarSources: c.opts.VarSources,
	}
}

// compile compiles p to run when e holds, in scope sc.
func (c *compiler) compile(p *concourse.Plan, e cond, sc scope) *handle {
	switch {
	case p.Get != nil:
		return c.get(p, e, sc)
	case p.Put != nil:
		return c.put(p, e, sc)
	case p.Task != nil:
		return c.task(p, e, sc)
	case p.LoadVar != nil:
		spec := c.spec(runspec.ModeLoadVar, p.ID, p.LoadVar.Name, sc)
		spec.LoadVar = &runspec.LoadVar{File: p.LoadVar.File, Format: p.LoadVar.Format, Reveal: p.LoadVar.Reveal}
		return c.leaf(p.ID, "load-var", p.LoadVar.Name, spec, c.opts.RunnerImage, taskVariant{}, nil, e)
	case p.SetPipeline != nil:
		spec := c.spec(runspec.ModeSetPipeline, p.ID, p.SetPipeline.Name, sc)
		spec.SetPipeline = &runspec.SetPipeline{File: p.SetPipeline.File, Team: p.SetPipeline.Team,
			Vars: p.SetPipeline.Vars, VarFiles: p.SetPipeline.VarFiles, InstanceVars: p.SetPipeline.InstanceVars}
		return c.leaf(p.ID, "set-pipeline", p.SetPipeline.Name, spec, c.opts.RunnerImage, taskVariant{}, nil, e)
	case p.Do != nil:
		return c.do(p.ID, *p.Do, e, sc)
	case p.InParallel != nil:
		return c.parallel(p.ID, runspec.KindInParallel, p.InParallel.Steps, p.InParallel.Limit, p.InParallel.FailFast, e, sc, nil)
	case p.Across != nil:
		return c.across(p, e, sc)
	case p.Retry != nil:
		return c.retry(p.ID, *p.Retry, e, sc)
	case p.Try != nil:
		inner := c.compile(&p.Try.Step, e, sc)
		return &handle{tree: runspec.Node{ID: string(p.ID), Kind: runspec.KindTry, Step: &inner.tree}, name: "try-" + inner.name,
			entry: e, tasks: inner.tasks}
	case p.Timeout != nil:
		inner := c.compile(&p.Timeout.Step, e, sc.with(runspec.Layer{Kind: runspec.LayerTimeout, ID: string(p.ID), Duration: p.Timeout.Duration}))
		return &handle{tree: runspec.Node{ID: string(p.ID), Kind: runspec.KindTimeout, Step: &inner.tree}, name: inner.name,
			entry: e, tasks: inner.tasks, leaf: inner.leaf, success: c.successOf(inner)}
	case p.OnSuccess != nil:
		return c.hook(p.ID, runspec.KindOnSuccess, &p.OnSuccess.Step, &p.OnSuccess.Next, e, sc)
	case p.OnFailure != nil:
		return c.hook(p.ID, runspec.KindOnFailure, &p.OnFailure.Step, &p.OnFailure.Next, e, sc)
	case p.OnError != nil:
		return c.hook(p.ID, runspec.KindOnError, &p.OnError.Step, &p.OnError.Next, e, sc)
	case p.OnAbort != nil:
		return c.hook(p.ID, runspec.KindOnAbort, &p.OnAbort.Step, &p.OnAbort.Next, e, sc)
	case p.Ensure != nil:
		return c.hook(p.ID, runspec.KindEnsure, &p.Ensure.Step, &p.Ensure.Next, e, sc)
	case p.Check != nil:
		return c.check(p.ID, p.Check.Name, p.Check.Type, p.Check.Resource, p.Check.Source, p.Check.TypeImage, p.Check.FromVersion, p.Check.Tags, e, sc)
	case p.Run != nil:
		c.fail(p, p.Run.Message, "the run step is experimental in Concourse and not supported here")
	case p.ArtifactInput != nil, p.ArtifactOutput != nil:
		c.fail(p, "", "artifact inputs and outputs are for one-off builds (execute), not pipelines")
	default:
		c.fail(p, "", "empty plan node")
	}
	return &handle{tree: runspec.Node{ID: string(p.ID), Kind: runspec.KindLeaf}, name: "unsupported", entry: e}
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

// successOf is a cheap success condition for h, if it has one.
func (c *compiler) successOf(h *handle) *cond {
	if h.success != nil {
		return h.success
	}
	if h.leaf != "" {
		s := c.test(h, onlySuccess)
		return &s
	}
	return nil
}

func (c *compiler) do(id concourse.PlanID, steps []concourse.Plan, e cond, sc scope) *handle {
	h := &handle{tree: runspec.Node{ID: string(id), Kind: runspec.KindDo, Steps: []runspec.Node{}}, name: "do", entry: e}
	next := e
	var last *handle
	for i := range steps {
		child := c.compile(&steps[i], next, sc)
		h.tree.Steps = append(h.tree.Steps, child.tree)
		h.tasks = append(h.tasks, child.tasks...)
		next = c.test(child, onlySuccess)
		last = child
	}
	if last == nil {
		// An empty do succeeds as soon as it starts.
		h.success = &e
		return h
	}
	h.name = last.name
	if len(steps) == 1 {
		h.leaf = last.leaf
	}
	// A child runs only if the one before it succeeded: the last one's success is the do's.
	h.success = &next
	return h
}

// parallel compiles children that start together (at most limit at a time). extra, when
// set, gives each child's scope (across substeps).
func (c *compiler) parallel(id concourse.PlanID, kind runspec.Kind, steps []concourse.Plan, limit int, failFast bool, e cond, sc scope, childScope func(i int) scope) *handle {
	h := &handle{tree: runspec.Node{ID: string(id), Kind: kind, Steps: []runspec.Node{}, FailFast: failFast}, name: "parallel", entry: e}
	success := e
	var children []*handle
	for i := range steps {
		entry := e
		if limit > 0 && i >= limit {
			// Concourse starts children in order, at most limit at a time: child i waits for
			// child i-limit to end.
			entry = entry.and(cond{after: children[i-limit].tasks})
		}
		csc := sc
		if childScope != nil {
			csc = childScope(i)
		}
		first := len(c.tasks)
		child := c.compile(&steps[i], entry, csc)
		if failFast {
			c.addLayer(c.tasks[first:], len(csc.layers), runspec.Layer{Kind: runspec.LayerFailFast, ID: string(id), Child: &child.tree})
		}
		children = append(children, child)
		h.tree.Steps = append(h.tree.Steps, child.tree)
		h.tasks = append(h.tasks, child.tasks...)
		success = success.and(c.test(child, onlySuccess))
	}
	if len(children) > 0 {
		h.name = children[0].name
	}
	h.success = &success
	return h
}

func (c *compiler) retry(id concourse.PlanID, attempts []concourse.Plan, e cond, sc scope) *handle {
	h := &handle{tree: runspec.Node{ID: string(id), Kind: runspec.KindRetry, Steps: []runspec.Node{}}, name: "attempts", entry: e}
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
		sofar := &handle{tree: runspec.Node{ID: fmt.Sprintf("%s/after-attempt-%d", id, i+1), Kind: runspec.KindRetry, Steps: append([]runspec.Node{}, h.tree.Steps...)},
			name: fmt.Sprintf("%s-attempt-%d", h.name, i+1), entry: e, tasks: append([]string{}, h.tasks...)}
		entry = c.test(sofar, failedOrErr)
	}
	return h
}

func (c *compiler) hook(id concourse.PlanID, kind runspec.Kind, step, next *concourse.Plan, e cond, sc scope) *handle {
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
	hk := c.compile(next, c.test(inner, when), hsc)
	h := &handle{
		tree:  runspec.Node{ID: string(id), Kind: kind, Step: &inner.tree, Hook: &hk.tree},
		name:  inner.name,
		entry: e,
		tasks: append(append([]string{}, inner.tasks...), hk.tasks...),
	}
	switch kind {
	case runspec.KindOnSuccess:
		// The hook runs only on success, and its result is the step's.
		h.success = c.successOf(hk)
	case runspec.KindOnFailure, runspec.KindOnError, runspec.KindOnAbort:
		// The hook cannot turn the step into a success, nor a success into anything else.
		h.success = c.successOf(inner)
	case runspec.KindEnsure:
		if a, b := c.successOf(inner), c.successOf(hk); a != nil && b != nil {
			s := a.and(*b)
			h.success = &s
		}
	}
	return h
}

func (c *compiler) across(p *concourse.Plan, e cond, sc scope) *handle {
	combos, err := acrossCombinations(p.Across.Vars)
	if err != nil {
		c.fail(p, "", "%v", err)
		return &handle{tree: runspec.Node{ID: string(p.ID), Kind: runspec.KindAcross}, name: "across", entry: e}
	}
	substeps := make([]concourse.Plan, len(combos))
	for i, combo := range combos {
		sub, err := acrossSubstep(p.ID, i, p.Across.SubStepTemplate, combo)
		if err != nil {
			c.fail(p, "", "%v", err)
			return &handle{tree: runspec.Node{ID: string(p.ID), Kind: runspec.KindAcross}, name: "across", entry: e}
		}
		substeps[i] = sub
	}
	// Concourse runs the first var's values max_in_flight at a time, each running the whole
	// product of the later vars; the limit of the first var bounds the whole.
	limit := p.Across.Vars[0].MaxInFlight.EffectiveLimit(len(combos))
	if len(p.Across.Vars) > 1 {
		per := len(combos) / max(1, acrossLen(p.Across.Vars[0]))
		inner := 1
		for _, v := range p.Across.Vars[1:] {
			inner *= max(1, v.MaxInFlight.EffectiveLimit(acrossLen(v)))
		}
		limit = limit * min(per, inner)
	}
	h := c.parallel(p.ID, runspec.KindAcross, substeps, limit, p.Across.FailFast, e, sc, func(i int) scope {
		s := sc
		s.scope = append(append([]string{}, sc.scope...), fmt.Sprintf("%s/%d", p.ID, i))
		s.acrossVars = map[string]any{}
		for k, v := range sc.acrossVars {
			s.acrossVars[k] = v
		}
		for k, v := range combos[i] {
			s.acrossVars[k] = v
		}
		return s
	})
	h.name = "across-" + h.name
	return h
}

func acrossLen(v concourse.AcrossVar) int {
	if l, ok := v.Values.([]any); ok {
		return len(l)
	}
	return 0
}

// acrossCombinations is the cartesian product of the vars' static values, the first var
// varying slowest.
func acrossCombinations(avs []concourse.AcrossVar) ([]map[string]any, error) {
	combos := []map[string]any{{}}
	for _, av := range avs {
		values, ok := av.Values.([]any)
		if !ok {
			return nil, fmt.Errorf("across var %q takes its values at run time (%v): only a static list of values is supported; give the values in the pipeline or with -y", av.Var, av.Values)
		}
		var next []map[string]any
		for _, combo := range combos {
			for _, v := range values {
				m := map[string]any{}
				for k, x := range combo {
					m[k] = x
				}
				m[av.Var] = v
				next = append(next, m)
			}
		}
		combos = next
	}
	return combos, nil
}

// acrossVars answers ((.:var)) with one combination's values; anything else stays.
type acrossVars map[string]any

func (a acrossVars) Get(ref vars.Reference) (any, bool, error) {
	if ref.Source != "." {
		return nil, false, nil
	}
	v, ok := a[ref.Path]
	if !ok {
		return nil, false, nil
	}
	v, err := vars.Traverse(v, ref.String(), ref.Fields)
	return v, err == nil, err
}

// acrossSubstep interpolates the substep template with one combination and renumbers its
// plan IDs <across>/<combination>/<k>, as Concourse does.
func acrossSubstep(id concourse.PlanID, i int, template string, combo map[string]any) (concourse.Plan, error) {
	var raw any
	if err := json.Unmarshal([]byte(template), &raw); err != nil {
		return concourse.Plan{}, fmt.Errorf("reading the across substep: %w", err)
	}
	raw, err := vars.Interpolate(raw, acrossVars(combo), false)
	if err != nil {
		return concourse.Plan{}, fmt.Errorf("interpolating the across substep: %w", err)
	}
	buf, err := json.Marshal(raw)
	if err != nil {
		return concourse.Plan{}, err
	}
	var sub concourse.Plan
	if err := json.Unmarshal(buf, &sub); err != nil {
		return concourse.Plan{}, fmt.Errorf("reading the interpolated across substep: %w", err)
	}
	renamed := map[concourse.PlanID]concourse.PlanID{}
	k := 0
	sub.Each(func(n *concourse.Plan) {
		k++
		nid := concourse.PlanID(fmt.Sprintf("%s/%d/%d", id, i, k))
		renamed[n.ID] = nid
		n.ID = nid
	})
	sub.Each(func(n *concourse.Plan) {
		if n.Get != nil && n.Get.VersionFrom != nil {
			if to, ok := renamed[*n.Get.VersionFrom]; ok {
				n.Get.VersionFrom = &to
			}
		}
	})
	return sub, nil
}

// stepImage is the image of a resource step: its custom type's image, or the base type's.
func (c *compiler) resourceImage(p *concourse.Plan, step, typ string, ti concourse.TypeImage) (string, bool) {
	if ti.GetPlan != nil && ti.GetPlan.Get != nil {
		g := ti.GetPlan.Get
		var version concourse.Version
		if g.Version != nil {
			version = *g.Version
		}
		if img, ok := imageFromResource(g.Type, g.Source, version); ok {
			return img, true
		}
		if mirror, _ := g.Source["mirror_self"].(bool); g.Type == "mock" && mirror {
			// Concourse's test resource as a type's image: the mock resource's own image.
			if img, ok := c.opts.ResourceImages["mock"]; ok {
				return img, true
			}
		}
		c.fail(p, step, "resource type %q is of type %q: only custom types of type registry-image or docker-image, with a static repository, can be run here", typ, g.Type)
		return "", false
	}
	base := ti.BaseType
	if base == "" {
		base = typ
	}
	if img, ok := c.opts.ResourceImages[base]; ok {
		return img, true
	}
	c.fail(p, step, "no image is known for the resource type %q: give one with --resource-image %s=IMAGE", base, base)
	return "", false
}

func (c *compiler) get(p *concourse.Plan, e cond, sc scope) *handle {
	g := p.Get
	img, ok := c.resourceImage(p, g.Name, g.Type, g.TypeImage)
	if !ok {
		return &handle{tree: runspec.Node{ID: string(p.ID), Kind: runspec.KindLeaf}, name: g.Name, entry: e}
	}
	spec := c.spec(runspec.ModeGet, p.ID, g.Name, c.withStepTimeout(sc, p.ID, g.Timeout))
	spec.Get = &runspec.Get{Type: g.Type, Resource: g.Resource, Source: g.Source, Params: g.Params}
	if g.Version != nil {
		spec.Get.Version = *g.Version
	}
	if g.VersionFrom != nil {
		spec.Get.VersionFrom = string(*g.VersionFrom)
	}
	variant := taskVariant{privileged: g.TypeImage.Privileged}
	if g.Version != nil || g.VersionFrom != nil {
		h := c.leaf(p.ID, "get", g.Name, spec, img, variant, g.Tags, e)
		c.producedBy(g.Name, g.Type, h.leaf, g.Source)
		return h
	}
	// No version given: find the latest first, so the job runs standalone.
	checkID := p.ID + "/check"
	check := c.check(checkID, g.Name, g.Type, g.Resource, g.Source, g.TypeImage, nil, g.Tags, e, sc)
	spec.Get.VersionFrom = string(checkID)
	get := c.leaf(p.ID, "get", g.Name, spec, img, variant, g.Tags, c.test(check, onlySuccess))
	c.producedBy(g.Name, g.Type, get.leaf, g.Source)
	s := c.test(get, onlySuccess)
	return &handle{
		tree:    runspec.Node{ID: string(p.ID) + "/checked", Kind: runspec.KindDo, Steps: []runspec.Node{check.tree, get.tree}},
		name:    get.name,
		entry:   e,
		tasks:   append(append([]string{}, check.tasks...), get.tasks...),
		success: &s,
	}
}

// producedBy records that a get named name, of resource type typ, registers an artifact.
func (c *compiler) producedBy(name, typ, task string, source concourse.Source) {
	if typ == "registry-image" || typ == "docker-image" {
		c.images[name] = artifactImage{ref: "$(tasks." + task + ".results.image)"}
		return
	}
	if mirror, _ := source["mirror_self"].(bool); typ == "mock" && mirror {
		// Concourse's test resource fetches itself: its artifact is its own image.
		if img, ok := c.opts.ResourceImages["mock"]; ok {
			c.images[name] = artifactImage{ref: img}
			return
		}
	}
	c.images[name] = artifactImage{reason: fmt.Sprintf("it is fetched by a get of a %s resource", typ)}
}

func (c *compiler) check(id concourse.PlanID, name, typ, resource string, source concourse.Source, ti concourse.TypeImage, from concourse.Version, tags concourse.Tags, e cond, sc scope) *handle {
	p := &concourse.Plan{ID: id}
	img, ok := c.resourceImage(p, name, typ, ti)
	if !ok {
		return &handle{tree: runspec.Node{ID: string(id), Kind: runspec.KindLeaf}, name: name, entry: e}
	}
	spec := c.spec(runspec.ModeCheck, id, name, sc)
	spec.Check = &runspec.Check{Type: typ, Resource: resource, Source: source, FromVersion: from}
	return c.leaf(id, "check", name, spec, img, taskVariant{privileged: ti.Privileged}, tags, e)
}

func (c *compiler) put(p *concourse.Plan, e cond, sc scope) *handle {
	pp := p.Put
	img, ok := c.resourceImage(p, pp.Name, pp.Type, pp.TypeImage)
	if !ok {
		return &handle{tree: runspec.Node{ID: string(p.ID), Kind: runspec.KindLeaf}, name: pp.Name, entry: e}
	}
	spec := c.spec(runspec.ModePut, p.ID, pp.Name, c.withStepTimeout(sc, p.ID, pp.Timeout))
	spec.Put = &runspec.Put{Type: pp.Type, Resource: pp.Resource, Source: pp.Source, Params: pp.Params,
		Inputs: runspec.InputsDetect, ExposeBuildCreatedBy: pp.ExposeBuildCreatedBy}
	if in := pp.Inputs; in != nil {
		switch {
		case in.All:
			spec.Put.Inputs = runspec.InputsAll
		case in.Detect:
		default:
			spec.Put.Inputs, spec.Put.InputNames = runspec.InputsList, in.Specified
		}
	}
	return c.leaf(p.ID, "put", pp.Name, spec, img, taskVariant{privileged: pp.TypeImage.Privileged}, pp.Tags, e)
}

func (c *compiler) withStepTimeout(sc scope, id concourse.PlanID, d string) scope {
	if d == "" {
		return sc
	}
	return sc.with(runspec.Layer{Kind: runspec.LayerTimeout, ID: string(id), Duration: d})
}

func (c *compiler) task(p *concourse.Plan, e cond, sc scope) *handle {
	t := p.Task
	artifactImage := ""
	if t.ImageArtifactName != "" {
		a, known := c.images[t.ImageArtifactName]
		switch {
		case a.ref != "":
			artifactImage = a.ref
		case known:
			c.fail(p, t.Name, "the task's image is the artifact %q, and %s: a task image here must be pulled from a registry (fetch it with a get of a registry-image resource, or use image_resource)", t.ImageArtifactName, a.reason)
		default:
			c.fail(p, t.Name, "the task's image is the artifact %q, which no earlier get of a registry-image or docker-image resource fetches: a task image here must be pulled from a registry", t.ImageArtifactName)
		}
		if artifactImage == "" {
			return &handle{tree: runspec.Node{ID: string(p.ID), Kind: runspec.KindLeaf}, name: t.Name, entry: e}
		}
	}
	defer c.taskOutputs(t, t.Config)
	spec := c.spec(runspec.ModeTask, p.ID, t.Name, c.withStepTimeout(sc, p.ID, t.Timeout))
	spec.Task = &runspec.Task{Vars: t.Vars, InputMapping: t.InputMapping, OutputMapping: t.OutputMapping, Privileged: t.Privileged}
	if len(t.Params) > 0 {
		spec.Task.Params = map[string]any{}
		for k, v := range t.Params {
			spec.Task.Params[k] = v
		}
	}
	variant := taskVariant{privileged: t.Privileged}
	cfg := t.Config
	if cfg == nil {
		if static, ok := c.opts.TaskFiles[t.ConfigPath]; ok {
			cfg = &static
		}
	}
	var raw any
	if cfg != nil {
		var err error
		if raw, err = toJSONValue(cfg); err != nil {
			c.fail(p, t.Name, "encoding its config: %v", err)
		}
		spec.Task.Config = raw
		variant.limits, variant.asRoot = mergeLimits(cfg.Limits, t.Limits), cfg.Run.User != ""
		if artifactImage != "" {
			return c.leaf(p.ID, "task", t.Name, spec, artifactImage, variant, t.Tags, e)
		}
		if !imageNeedsVars(cfg) {
			img, ok := c.taskImage(p, t.Name, cfg)
			if !ok {
				return &handle{tree: runspec.Node{ID: string(p.ID), Kind: runspec.KindLeaf}, name: t.Name, entry: e}
			}
			return c.leaf(p.ID, "task", t.Name, spec, img, variant, t.Tags, e)
		}
	}
	// The config is in an artifact, or its image takes the build's vars: a resolve step
	// reads and interpolates it when the build runs and hands the image to the task.
	resolveSpec := c.spec(runspec.ModeResolve, p.ID+"/resolve", t.Name, sc)
	resolveSpec.Resolve = &runspec.Resolve{TaskPlanID: string(p.ID), File: t.ConfigPath, Config: raw, Vars: t.Vars}
	if raw == nil {
		spec.Task.File = t.ConfigPath
		variant.limits = mergeLimits(nil, t.Limits)
		variant.asRoot = true // the user comes from the file; the runner drops to it
	}
	resolve := c.leaf(p.ID+"/resolve", "resolve", t.Name, resolveSpec, c.opts.RunnerImage, taskVariant{}, nil, e)
	img := "$(tasks." + resolve.leaf + ".results.image)"
	if artifactImage != "" {
		img = artifactImage
	}
	task := c.leaf(p.ID, "task", t.Name, spec, img, variant, t.Tags, c.test(resolve, onlySuccess))
	s := c.test(task, onlySuccess)
	return &handle{
		tree:    runspec.Node{ID: string(p.ID) + "/resolved", Kind: runspec.KindDo, Steps: []runspec.Node{resolve.tree, task.tree}},
		name:    task.name,
		entry:   e,
		tasks:   append(append([]string{}, resolve.tasks...), task.tasks...),
		success: &s,
	}
}

// taskOutputs records the artifacts a task registers: none of them can be a task's image.
func (c *compiler) taskOutputs(t *concourse.TaskPlan, cfg *concourse.TaskConfig) {
	if cfg == nil {
		return
	}
	for _, o := range cfg.Outputs {
		name := o.Name
		if m, ok := t.OutputMapping[name]; ok {
			name = m
		}
		c.images[name] = artifactImage{reason: fmt.Sprintf("it is an output of task %q", t.Name)}
	}
}

// imageNeedsVars reports whether a config's image is only known once the build's vars are.
func imageNeedsVars(cfg *concourse.TaskConfig) bool {
	ir := cfg.ImageResource
	if ir == nil || (ir.Type != "registry-image" && ir.Type != "docker-image") {
		return false
	}
	for _, k := range []string{"repository", "tag"} {
		if s, ok := ir.Source[k].(string); ok && strings.Contains(s, "((") {
			return true
		}
	}
	return strings.Contains(ir.Version["digest"], "((")
}

func (c *compiler) taskImage(p *concourse.Plan, step string, cfg *concourse.TaskConfig) (string, bool) {
	if ir := cfg.ImageResource; ir != nil && ir.Type == "mock" {
		// Concourse's test resource: with mirror_self its image is its own.
		if mirror, _ := ir.Source["mirror_self"].(bool); mirror {
			if img, ok := c.opts.ResourceImages["mock"]; ok {
				return img, true
			}
		}
	}
	if ir := cfg.ImageResource; ir != nil {
		if img, ok := imageFromResource(ir.Type, ir.Source, ir.Version); ok {
			return img, true
		}
		c.fail(p, step, "its image_resource is of type %q: only registry-image or docker-image with a static repository can be run here", ir.Type)
		return "", false
	}
	if cfg.RootfsURI != "" {
		if img, ok := imageFromRootfsURI(cfg.RootfsURI); ok {
			return img, true
		}
		c.fail(p, step, "rootfs_uri %q is not a docker:/// image", cfg.RootfsURI)
		return "", false
	}
	c.fail(p, step, "the task has no image: give its config an image_resource or a rootfs_uri")
	return "", false
}

func mergeLimits(cfg, step *concourse.ContainerLimits) concourse.ContainerLimits {
	var out concourse.ContainerLimits
	if cfg != nil {
		out = *cfg
	}
	if step != nil {
		if step.CPU != nil {
			out.CPU = step.CPU
		}
		if step.Memory != nil {
			out.Memory = step.Memory
		}
	}
	return out
}

func toJSONValue(v any) (any, error) {
	buf, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	err = json.Unmarshal(buf, &out)
	return out, err
}

// leaf adds the PipelineTask of one step, named <kind>-<step>.
func (c *compiler) leaf(id concourse.PlanID, kind, step string, spec runspec.Spec, image string, variant taskVariant, tags concourse.Tags, e cond) *handle {
	name := c.taskName(kind + "-" + step)
	variant.secrets = c.secretsOf(spec)
	c.tasks = append(c.tasks, c.pipelineTask(name, image, variant, &spec, e))
	c.nodeSelector(name, tags)
	return &handle{tree: runspec.Node{ID: string(id), Kind: runspec.KindLeaf}, name: strings.TrimPrefix(name, kind+"-"), entry: e, tasks: []string{name}, leaf: name}
}

// runnerTask adds a PipelineTask that runs the runner in its own image (joins, verdicts).
func (c *compiler) runnerTask(base string, spec runspec.Spec, e cond) string {
	name := c.taskName(base)
	c.tasks = append(c.tasks, c.pipelineTask(name, c.opts.RunnerImage, taskVariant{}, &spec, e))
	return name
}

// pipelineTask makes a PipelineTask running spec; its params are filled in by finish.
func (c *compiler) pipelineTask(name, image string, variant taskVariant, spec *runspec.Spec, e cond) v1.PipelineTask {
	c.specs[name] = spec
	return v1.PipelineTask{
		Name:       name,
		TaskRef:    &v1.TaskRef{Name: c.stepTask(variant)},
		Params:     v1.Params{{Name: runspec.ParamImage, Value: *v1.NewStructuredValues(image)}},
		Workspaces: []v1.WorkspacePipelineTaskBinding{{Name: runspec.Workspace, Workspace: runspec.Workspace}},
		When:       e.when,
		RunAfter:   e.after,
		OnError:    v1.PipelineTaskContinue,
		Timeout:    &metav1.Duration{},
	}
}

// finish encodes each task's runner spec into its params.
func (c *compiler) finish(tasks []v1.PipelineTask) {
	for i := range tasks {
		spec := c.specs[tasks[i].Name]
		encoded, err := spec.Encode()
		if err != nil && c.err == nil {
			c.err = err
		}
		// Tekton reads $(...) in a param as a variable and rejects the ones it does not
		// know, such as a script's $(pwd). In JSON strings, \u0028 is '(' to the runner.
		encoded = strings.ReplaceAll(encoded, "$(", `$\u0028`)
		tasks[i].Params = append(tasks[i].Params,
			v1.Param{Name: runspec.ParamMode, Value: *v1.NewStructuredValues(string(spec.Mode))},
			v1.Param{Name: runspec.ParamSpec, Value: *v1.NewStructuredValues(encoded)})
	}
}

func (c *compiler) nodeSelector(task string, tags concourse.Tags) {
	if len(tags) == 0 || len(c.opts.NodeSelectors) == 0 {
		return
	}
	sel := map[string]string{}
	for _, t := range tags {
		for k, v := range c.opts.NodeSelectors[t] {
			sel[k] = v
		}
	}
	if len(sel) == 0 {
		return
	}
	c.runSpecs = append(c.runSpecs, v1.PipelineTaskRunSpec{PipelineTaskName: task, PodTemplate: &pod.Template{NodeSelector: sel}})
}
