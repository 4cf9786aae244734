package translate

import (
	"encoding/json"
	"fmt"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/vars"
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// across compiles an across step as a group of its substeps, one per combination of its
// vars' values. The values must be known at compile time.
func (c *compiler) across(p *concourse.Plan, e cond, sc scope) *handle {
	combos, err := acrossCombinations(p.Across.Vars)
	if err != nil {
		c.fail(p, "", "%v", err)
		return stub(p.ID, runspec.KindAcross, "across", e)
	}
	substeps := make([]concourse.Plan, len(combos))
	for i, combo := range combos {
		sub, renamed, err := acrossSubstep(p.ID, i, p.Across.SubStepTemplate, combo)
		if err != nil {
			c.fail(p, "", "%v", err)
			return stub(p.ID, runspec.KindAcross, "across", e)
		}
		for from, id := range renamed {
			c.derive(id, from)
		}
		substeps[i] = sub
	}
	g := group{id: p.ID, kind: runspec.KindAcross, steps: substeps, limit: acrossLimit(p.Across.Vars, len(combos)), failFast: p.Across.FailFast}
	g.scope = func(i int) scope {
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
	}
	h := c.parallel(g, e, sc)
	h.name = "across-" + h.name
	return h
}

// acrossLimit is how many of n substeps run at a time. Concourse runs the first var's
// values max_in_flight at a time, each running the whole product of the later vars; the
// limit of the first var bounds the whole.
func acrossLimit(avs []concourse.AcrossVar, n int) int {
	limit := avs[0].MaxInFlight.EffectiveLimit(n)
	if len(avs) > 1 {
		per := n / max(1, acrossLen(avs[0]))
		inner := 1
		for _, v := range avs[1:] {
			inner *= max(1, v.MaxInFlight.EffectiveLimit(acrossLen(v)))
		}
		limit = limit * min(per, inner)
	}
	return limit
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
// plan IDs <across>/<combination>/<k>, as Concourse does. renamed maps the template's IDs
// to the substep's.
func acrossSubstep(id concourse.PlanID, i int, template string, combo map[string]any) (sub concourse.Plan, renamed map[concourse.PlanID]concourse.PlanID, err error) {
	var raw any
	if err := json.Unmarshal([]byte(template), &raw); err != nil {
		return sub, nil, fmt.Errorf("reading the across substep: %w", err)
	}
	raw, err = vars.Interpolate(raw, acrossVars(combo), false)
	if err != nil {
		return sub, nil, fmt.Errorf("interpolating the across substep: %w", err)
	}
	buf, err := json.Marshal(raw)
	if err != nil {
		return sub, nil, err
	}
	if err := json.Unmarshal(buf, &sub); err != nil {
		return sub, nil, fmt.Errorf("reading the interpolated across substep: %w", err)
	}
	renamed = map[concourse.PlanID]concourse.PlanID{}
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
	return sub, renamed, nil
}
