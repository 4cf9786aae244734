package translate

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/event"
	"github.com/concourse-tekton/concourse-tekton/concourse/vars"
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// across compiles an across step. With values known at compile time it is a group of its
// substeps, one per combination, interpolated here. With any var's values known only at
// run time (a ((var)), a load_var's ((.:var))) it is a resolver and Options.AcrossSlots
// slots (acrossSlots).
func (c *compiler) across(p *concourse.Plan, e cond, sc scope) *handle {
	lists := make([][]any, len(p.Across.Vars))
	for i, av := range p.Across.Vars {
		l, ok := staticValues(av)
		if !ok {
			return c.acrossSlots(p, e, sc)
		}
		lists[i] = l
	}
	combos := acrossCombinations(p.Across.Vars, lists)
	substeps := make([]concourse.Plan, len(combos))
	public := make([]json.RawMessage, len(combos))
	for i, combo := range combos {
		sub, ok := c.acrossSubstep(p, i, combo)
		if !ok {
			return stub(p.ID, runspec.KindAcross, "across", e)
		}
		substeps[i] = sub
		values := make([]any, len(p.Across.Vars))
		for k, av := range p.Across.Vars {
			values[k] = combo[av.Var]
		}
		pub, err := event.PublicSubstep(sub, values)
		if err != nil {
			c.fail(p, "", "%v", err)
			return stub(p.ID, runspec.KindAcross, "across", e)
		}
		public[i] = pub
	}
	c.acrossSubsteps[string(p.ID)] = public
	lens := make([]int, len(lists))
	for i, l := range lists {
		lens[i] = len(l)
	}
	g := group{id: p.ID, kind: runspec.KindAcross, steps: substeps, limit: acrossLimit(p.Across.Vars, lens, len(combos)), failFast: p.Across.FailFast}
	g.scope = func(i int) scope {
		s := substepScope(p.ID, i, sc, nil)
		for k, v := range combos[i] {
			s.acrossVars[k] = v
		}
		return s
	}
	h := c.parallel(g, e, sc)
	h.name = "across-" + h.name
	return h
}

// acrossSlots compiles an across step whose values are known only at run time. Its
// resolver (runner mode across) evaluates the values when the build runs, writes their
// combinations to the state directory and publishes their count; slot i is the substep
// once more, entered only when the count exceeds i, its steps reading combination i. An
// absent slot is a skipped task (no pod), and neither a success nor a failure: the
// step's outcome comes from a join that knows how many slots were used.
func (c *compiler) acrossSlots(p *concourse.Plan, e cond, sc scope) *handle {
	a, k := p.Across, c.opts.AcrossSlots
	names := make([]string, len(a.Vars))
	spec := c.spec(runspec.ModeAcross, p.ID, "", sc)
	spec.Across = &runspec.Across{Slots: k}
	lens := make([]int, len(a.Vars))
	for i, av := range a.Vars {
		names[i] = av.Var
		spec.Across.Vars = append(spec.Across.Vars, runspec.AcrossVar{Name: av.Var, Values: av.Values})
		lens[i] = k
		if l, ok := staticValues(av); ok {
			lens[i] = len(l)
		}
	}
	spec.Name = strings.Join(names, "-")
	resolver := c.leaf(spec, c.opts.RunnerImage, taskVariant{count: true}, nil, e)
	substeps := make([]concourse.Plan, k)
	for i := range substeps {
		sub, ok := c.acrossSubstep(p, i, nil)
		if !ok {
			return stub(p.ID, runspec.KindAcross, "across", e)
		}
		substeps[i] = sub
	}
	count := "$(tasks." + resolver.leaf + ".results." + runspec.ResultCount + ")"
	g := group{id: p.ID, kind: runspec.KindAcross, steps: substeps, limit: acrossLimit(a.Vars, lens, k), failFast: a.FailFast, slotted: true}
	g.scope = func(i int) scope {
		s := substepScope(p.ID, i, sc, names)
		s.slots = append(append([]runspec.AcrossSlot{}, sc.slots...), runspec.AcrossSlot{Plan: string(p.ID), Index: i})
		s.runtimeVars = append(append([]string{}, sc.runtimeVars...), names...)
		return s
	}
	g.entry = func(i int) cond {
		var enough []string
		for n := i + 1; n <= k; n++ {
			enough = append(enough, strconv.Itoa(n))
		}
		return cond{when: v1.WhenExpressions{{Input: count, Operator: "in", Values: enough}}, after: []string{resolver.leaf}}
	}
	slots := c.parallel(g, e, sc)
	return &handle{
		tree:  runspec.Node{ID: string(p.ID) + "/resolved", Kind: runspec.KindDo, Steps: []runspec.Node{resolver.tree, slots.tree}},
		name:  "across-" + slots.name,
		entry: e,
		tasks: append(append([]string{}, resolver.tasks...), slots.tasks...),
	}
}

// substepScope is the scope of substep i of across id: a scope of its own, and the
// enclosing across steps' values but those its own vars (shadowed) shadow.
func substepScope(id concourse.PlanID, i int, sc scope, shadowed []string) scope {
	s := sc
	s.scope = append(append([]string{}, sc.scope...), fmt.Sprintf("%s/%d", id, i))
	s.acrossVars = map[string]any{}
	for k, v := range sc.acrossVars {
		if !slices.Contains(shadowed, k) {
			s.acrossVars[k] = v
		}
	}
	return s
}

// staticValues are an across var's values, when the plan lists them and none is a var.
func staticValues(av concourse.AcrossVar) ([]any, bool) {
	l, ok := av.Values.([]any)
	if !ok || firstVar(l, func(vars.Reference) bool { return true }) != "" {
		return nil, false
	}
	return l, true
}

// firstVar is, of the vars in the strings of a generic value that match wants, the
// first by name, or "".
func firstVar(v any, wants func(vars.Reference) bool) string {
	var found []string
	walkStrings(v, func(s string) {
		for _, name := range vars.Names(s) {
			if ref, err := vars.ParseReference(name); err == nil && wants(ref) {
				found = append(found, ref.Path)
			}
		}
	})
	if len(found) == 0 {
		return ""
	}
	return slices.Min(found)
}

// withSubsteps is tree with the public substeps of its across steps (by plan ID) on
// their nodes, as a copy: the join specs share the tree's nodes, and carry no substeps.
func withSubsteps(tree runspec.Node, substeps map[string][]json.RawMessage) runspec.Node {
	if len(substeps) == 0 {
		return tree
	}
	if tree.Kind == runspec.KindAcross && !tree.Slotted {
		if pub, ok := substeps[tree.ID]; ok {
			tree.Substeps = pub
		}
	}
	tree.Steps = slices.Clone(tree.Steps)
	for _, child := range []**runspec.Node{&tree.Step, &tree.Hook} {
		if *child != nil {
			n := **child
			*child = &n
		}
	}
	for _, c := range tree.Children() {
		*c = withSubsteps(*c, substeps)
	}
	return tree
}

// acrossLimit is how many substeps run at a time, given each var's number of values
// (for a var whose values are known only at run time, the most there can be). Concourse
// runs the first var's values max_in_flight at a time, each running the whole product of
// the later vars; the limit of the first var bounds the whole.
func acrossLimit(avs []concourse.AcrossVar, lens []int, n int) int {
	limit := avs[0].MaxInFlight.EffectiveLimit(n)
	if len(avs) > 1 {
		per := n / max(1, lens[0])
		inner := 1
		for i, v := range avs[1:] {
			inner *= max(1, v.MaxInFlight.EffectiveLimit(lens[i+1]))
		}
		limit = limit * min(per, inner)
	}
	return limit
}

// acrossCombinations is the cartesian product of the vars' values, the first var varying
// slowest.
func acrossCombinations(avs []concourse.AcrossVar, lists [][]any) []map[string]any {
	combos := []map[string]any{{}}
	for i, av := range avs {
		var next []map[string]any
		for _, combo := range combos {
			for _, v := range lists[i] {
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
	return combos
}

// acrossSubstep is substep i of across p: its template interpolated with the
// combination (none for a slot, whose steps interpolate it when they run), its plan IDs
// renumbered <across>/<i>/<k> as Concourse does (the engine's ConstructAcrossSubsteps: k
// counts from 0, the substep's root first), each derived from the template's.
func (c *compiler) acrossSubstep(p *concourse.Plan, i int, combo map[string]any) (concourse.Plan, bool) {
	var sub concourse.Plan
	var raw any
	if err := json.Unmarshal([]byte(p.Across.SubStepTemplate), &raw); err != nil {
		c.fail(p, "", "reading the across substep: %v", err)
		return sub, false
	}
	raw, err := vars.Interpolate(raw, vars.Local(combo), false)
	if err != nil {
		c.fail(p, "", "interpolating the across substep: %v", err)
		return sub, false
	}
	buf, err := json.Marshal(raw)
	if err == nil {
		err = json.Unmarshal(buf, &sub)
	}
	if err != nil {
		c.fail(p, "", "reading the interpolated across substep: %v", err)
		return sub, false
	}
	renamed := map[concourse.PlanID]concourse.PlanID{}
	k := 0
	sub.Each(func(n *concourse.Plan) {
		nid := concourse.PlanID(fmt.Sprintf("%s/%d/%d", p.ID, i, k))
		k++
		renamed[n.ID] = nid
		c.derive(nid, n.ID)
		n.ID = nid
	})
	sub.Each(func(n *concourse.Plan) {
		if n.Get != nil && n.Get.VersionFrom != nil {
			if to, ok := renamed[*n.Get.VersionFrom]; ok {
				n.Get.VersionFrom = &to
			}
		}
	})
	return sub, true
}

// runtimeGuard refuses what a step of an across slot needs when the pipeline is
// converted but takes from the slot's vars, which are known only at run time: a task's
// image (but a registry image_resource, which a resolve step reads when the step runs),
// a resource type's image, worker tags.
func (c *compiler) runtimeGuard(p *concourse.Plan, sc scope) bool {
	if len(sc.runtimeVars) == 0 {
		return true
	}
	dynamic := func(v any) string {
		return firstVar(v, func(r vars.Reference) bool { return r.Source == "." && slices.Contains(sc.runtimeVars, r.Path) })
	}
	var kind, name string
	var tags concourse.Tags
	var image []any
	switch {
	case p.Task != nil:
		t := p.Task
		kind, name, tags, image = "task", t.Name, t.Tags, []any{t.ImageArtifactName}
		if cfg := t.Config; cfg != nil {
			image = append(image, cfg.RootfsURI)
			if ir := cfg.ImageResource; ir != nil {
				// A registry image's repository, tag and digest are read when the step
				// runs (resolvedTask); any other type is decided now.
				image = append(image, ir.Type)
				if !runspec.RegistryImageType(ir.Type) {
					image = append(image, toGeneric(ir.Source))
				}
			}
		}
	case p.Get != nil:
		kind, name, tags, image = "get", p.Get.Name, p.Get.Tags, []any{toGeneric(p.Get.TypeImage)}
	case p.Put != nil:
		kind, name, tags, image = "put", p.Put.Name, p.Put.Tags, []any{toGeneric(p.Put.TypeImage)}
	case p.Check != nil:
		kind, name, tags, image = "check", p.Check.Name, p.Check.Tags, []any{toGeneric(p.Check.TypeImage)}
	default:
		return true
	}
	why := ""
	if v := dynamic(image); v != "" {
		why = fmt.Sprintf("the image of %s %q depends on across var %q, whose values are known only at run time: a step's image is chosen when the pipeline is converted (a task may take it from a registry-image image_resource whose repository or tag holds the var)", kind, name, v)
	} else if v := dynamic(toGeneric(tags)); v != "" {
		why = fmt.Sprintf("the tags of %s %q depend on across var %q, whose values are known only at run time: tags choose the step's nodes when the pipeline is converted", kind, name, v)
	}
	if why != "" {
		c.fail(p, name, "%s", why)
		return false
	}
	return true
}

// toGeneric is v as generic JSON (maps, lists, strings), or nil.
func toGeneric(v any) any {
	out, err := toJSONValue(v)
	if err != nil {
		return nil
	}
	return out
}
