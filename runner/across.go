package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/concourse-tekton/concourse-tekton/concourse/vars"
	"github.com/concourse-tekton/concourse-tekton/runner/state"
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// An across step whose values are known only at run time: its resolver (runAcross)
// evaluates them and writes their combinations; each step of its slot i reads
// combination i (enterSlots).

// runAcross is Concourse's AcrossStep up to the substeps: the experimental warning, a
// warning for each var that shadows a local var, each var's values evaluated strictly
// (creds.NewList), and their cartesian product, the first var varying slowest.
func runAcross(_ context.Context, s *step) (bool, error) {
	a := s.spec.Across
	fmt.Fprintln(s.stderr, "\x1b[1;33mWARNING: the across step is experimental and subject to change!\x1b[0m")
	fmt.Fprintln(s.stderr, "")
	fmt.Fprintln(s.stderr, "\x1b[33mfollow RFC #29 for updates: https://github.com/concourse/rfcs/pull/29\x1b[0m")
	fmt.Fprintln(s.stderr, "")
	c := state.Combinations{Values: [][]any{{}}}
	for _, v := range a.Vars {
		if _, found, _ := s.vars.local(v.Name); found {
			fmt.Fprintf(s.stderr, "\x1b[1;33mWARNING: across step shadows local var '%s'\x1b[0m\n", v.Name)
		}
		values, err := s.evaluateList(v.Values)
		if err != nil {
			return false, err
		}
		var next [][]any
		for _, combo := range c.Values {
			for _, x := range values {
				next = append(next, append(append(make([]any, 0, len(combo)+1), combo...), x))
			}
		}
		c.Vars, c.Values = append(c.Vars, v.Name), next
	}
	if len(c.Values) > a.Slots {
		return false, fmt.Errorf("the across step has %d combinations of values, more than the %d it was converted for: convert the pipeline with a larger --across-slots", len(c.Values), a.Slots)
	}
	if c.Values == nil {
		c.Values = [][]any{}
	}
	if err := s.state.WriteCombinations(s.spec.PlanID, c); err != nil {
		return false, err
	}
	return true, s.writeResult(runspec.ResultCount, []byte(strconv.Itoa(len(c.Values))))
}

// evaluateList is creds.NewList(...).Evaluate(): the raw values interpolated strictly,
// then read as a list, with the errors of Concourse's sigs.k8s.io/yaml.
func (s *step) evaluateList(raw any) ([]any, error) {
	v, err := s.interpolate(raw)
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var list []any
	if err := dec.Decode(&list); err != nil {
		return nil, fmt.Errorf("error unmarshaling JSON: while decoding JSON: %v", err)
	}
	return list, nil
}

// enterSlots gives a step of across slots its combinations: the values become local vars
// (AcrossVars, which the translator gave, over them), and the spec is interpolated with
// them leniently, as Concourse interpolates a substep's plan before it runs it.
func (s *step) enterSlots() error {
	if len(s.spec.AcrossSlots) == 0 {
		return nil
	}
	local := vars.Local{}
	for _, sl := range s.spec.AcrossSlots {
		c, found, err := s.state.ReadCombinations(sl.Plan)
		if err != nil {
			return err
		}
		combo, ok := c.Combination(sl.Index)
		if !found || !ok {
			return fmt.Errorf("across step %s has no combination %d: its slot ran without it", sl.Plan, sl.Index)
		}
		for k, v := range combo {
			local[k] = v
		}
	}
	for k, v := range s.spec.AcrossVars {
		local[k] = v
	}
	spec, err := interpolateSpec(s.spec, local)
	if err != nil {
		return fmt.Errorf("interpolating the across substep: %w", err)
	}
	s.spec, s.vars.across = spec, local
	return nil
}

// interpolateSpec interpolates the whole spec with local vars, leaving every other var.
func interpolateSpec(spec runspec.Spec, local vars.Local) (runspec.Spec, error) {
	data, err := json.Marshal(spec)
	if err != nil {
		return spec, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var raw any
	if err := dec.Decode(&raw); err != nil {
		return spec, err
	}
	raw, err = vars.Interpolate(raw, local, false)
	if err != nil {
		return spec, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(raw); err != nil {
		return spec, err
	}
	return runspec.Decode(buf.String())
}
