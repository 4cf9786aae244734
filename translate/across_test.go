package translate_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/translate"
)

// runtimeAcross is job "test": an across over values known only at run time, then a
// task; the across step's vars and modifiers are filled in by each test.
func runtimeAcross(modifiers string) string {
	return `jobs:
- name: test
  plan:
  - across: [{var: v, values: ((.:vs))` + modifiers + `
    task: each
    config: {platform: linux, rootfs_uri: 'docker:///busybox', run: {path: echo, args: [((.:v))]}}
  - task: after
    config: {platform: linux, rootfs_uri: 'docker:///busybox', run: {path: echo}}
`
}

// pipelineTasks are the PipelineTasks of a result by name, with their specs.
func pipelineTasks(t *testing.T, r *translate.Result) (map[string]v1.PipelineTask, map[string]runspec.Spec) {
	t.Helper()
	tasks, specs := map[string]v1.PipelineTask{}, map[string]runspec.Spec{}
	for _, pt := range append(append([]v1.PipelineTask{}, r.Pipeline.Spec.Tasks...), r.Pipeline.Spec.Finally...) {
		tasks[pt.Name], specs[pt.Name] = pt, stepSpec(t, pt)
	}
	return tasks, specs
}

// TestAcrossSlots: a resolver publishing the count, and AcrossSlots copies of the
// substep, slot i entered when the count exceeds i, its steps reading combination i.
func TestAcrossSlots(t *testing.T) {
	_, r, err := translateJob(t, runtimeAcross("}]"), translate.Options{AcrossSlots: 3})
	if err != nil {
		t.Fatal(err)
	}
	validate(t, r)
	tasks, specs := pipelineTasks(t, r)
	resolver, ok := specs["across-v"]
	if !ok || resolver.Mode != runspec.ModeAcross {
		t.Fatalf("no resolver task across-v: %v", slices.Sorted(func(yield func(string) bool) {
			for n := range tasks {
				yield(n)
			}
		}))
	}
	if diff := cmp.Diff(&runspec.Across{Vars: []runspec.AcrossVar{{Name: "v", Values: "((.:vs))"}}, Slots: 3}, resolver.Across); diff != "" {
		t.Errorf("resolver payload (-want +got):\n%s", diff)
	}
	var def *v1.Task
	for _, task := range r.Tasks {
		if task.Name == tasks["across-v"].TaskRef.Name {
			def = task
		}
	}
	if def == nil || !slices.ContainsFunc(def.Spec.Results, func(r v1.TaskResult) bool { return r.Name == runspec.ResultCount }) {
		t.Errorf("the resolver's Task does not declare the result %s", runspec.ResultCount)
	}
	slots := []string{"task-each", "task-each-2", "task-each-3"}
	for i, name := range slots {
		pt, spec := tasks[name], specs[name]
		if want := fmt.Sprintf("2/%d/0", i); spec.PlanID != want {
			t.Errorf("slot %d: plan ID %s, want %s", i, spec.PlanID, want)
		}
		if diff := cmp.Diff([]runspec.AcrossSlot{{Plan: "2", Index: i}}, spec.AcrossSlots); diff != "" {
			t.Errorf("slot %d: across slots (-want +got):\n%s", i, diff)
		}
		if want := []string{fmt.Sprintf("2/%d", i)}; !slices.Equal(spec.Scope, want) {
			t.Errorf("slot %d: scope %q, want %q", i, spec.Scope, want)
		}
		if args := fmt.Sprint(spec.Task.Config); !strings.Contains(args, "((.:v))") {
			t.Errorf("slot %d: the substep was interpolated at compile time: %s", i, args)
		}
		var enough []string
		for n := i + 1; n <= 3; n++ {
			enough = append(enough, fmt.Sprint(n))
		}
		want := v1.WhenExpressions{{Input: "$(tasks.across-v.results.count)", Operator: "in", Values: enough}}
		if diff := cmp.Diff(want, pt.When); diff != "" {
			t.Errorf("slot %d: when (-want +got):\n%s", i, diff)
		}
		// max_in_flight is 1 when it is not set: each slot waits for the one before.
		if i > 0 && !slices.Contains(pt.RunAfter, slots[i-1]) {
			t.Errorf("slot %d runs after %q, want after %s", i, pt.RunAfter, slots[i-1])
		}
	}
	// The step after runs when every present slot succeeded: a join says so.
	after := tasks["task-after"]
	if len(after.When) != 1 || !strings.HasPrefix(after.When[0].Input, "$(tasks.join-") {
		t.Errorf("the step after the across is guarded by %v, want a join's outcome", after.When)
	}
}

func TestAcrossSlotsMaxInFlightAndFailFast(t *testing.T) {
	tests := []struct {
		name, modifiers string
		// after[i] is the slot slot i waits for, or -1.
		after    []int
		failFast bool
	}{
		{name: "all", modifiers: ", max_in_flight: all}]", after: []int{-1, -1, -1, -1}},
		{name: "two", modifiers: ", max_in_flight: 2}]", after: []int{-1, -1, 0, 1}},
		{name: "fail_fast", modifiers: ", max_in_flight: all}]\n    fail_fast: true", after: []int{-1, -1, -1, -1}, failFast: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, r, err := translateJob(t, runtimeAcross(tc.modifiers), translate.Options{AcrossSlots: 4})
			if err != nil {
				t.Fatal(err)
			}
			validate(t, r)
			tasks, specs := pipelineTasks(t, r)
			slots := []string{"task-each", "task-each-2", "task-each-3", "task-each-4"}
			for i, name := range slots {
				for j, other := range slots {
					if waits := slices.Contains(tasks[name].RunAfter, other); waits != (tc.after[i] == j) {
						t.Errorf("slot %d waits for slot %d: %t", i, j, waits)
					}
				}
				ff := slices.ContainsFunc(specs[name].Context, func(l runspec.Layer) bool {
					return l.Kind == runspec.LayerFailFast && l.ID == "2" && l.Child != nil && l.Child.ID == specs[name].PlanID
				})
				if ff != tc.failFast {
					t.Errorf("slot %d in the fail-fast group: %t, want %t", i, ff, tc.failFast)
				}
			}
		})
	}
}

// TestAcrossSlotsSemantics runs the compiled across in the model of Tekton for every
// count of combinations and outcome of the slots: absent slots never run and count for
// nothing; the step after runs when every present slot succeeded.
func TestAcrossSlotsSemantics(t *testing.T) {
	const k = 3
	leaf := func(id string) concourse.Plan {
		return concourse.Plan{ID: concourse.PlanID(id), Task: &concourse.TaskPlan{Name: "t" + id, Config: leafConfig}}
	}
	template, err := json.Marshal(leaf("1"))
	if err != nil {
		t.Fatal(err)
	}
	do := concourse.DoPlan{
		{ID: "5", Across: &concourse.AcrossPlan{Vars: []concourse.AcrossVar{{Var: "v", Values: "((.:vs))"}}, SubStepTemplate: string(template)}},
		leaf("6"),
	}
	plan := concourse.Plan{ID: "9", Do: &do}
	r, err := translate.Translate(plan, translate.Options{Pipeline: "p", Job: "j", AcrossSlots: k})
	if err != nil {
		t.Fatal(err)
	}
	validate(t, r)
	outcomes := []runspec.Outcome{runspec.Succeeded, runspec.Failed, runspec.Errored}
	for _, resolver := range outcomes {
		for n := 0; n <= k; n++ {
			for combo := 0; combo < 27; combo++ {
				given := map[string]runspec.Outcome{"5": resolver, "6": runspec.Succeeded}
				var present []runspec.Outcome
				wantRan := []string{"5"}
				for i, c := 0, combo; i < k; i, c = i+1, c/3 {
					id := fmt.Sprintf("5/%d/0", i)
					given[id] = outcomes[c%3]
					if resolver == runspec.Succeeded && i < n {
						present = append(present, given[id])
						wantRan = append(wantRan, id)
					}
				}
				want := resolver
				if resolver == runspec.Succeeded {
					want = worst(present)
				}
				if want == runspec.Succeeded {
					wantRan = append(wantRan, "6")
				}
				ran, status := simulateAcross(t, r, given, map[string]int{"5": n})
				slices.Sort(wantRan)
				if !slices.Equal(ran, wantRan) || status != want {
					t.Fatalf("resolver %s, %d combinations, slots %v: ran %v, status %s; want %v, %s", resolver, n, given, ran, status, wantRan, want)
				}
			}
		}
	}
}

// TestAcrossRuntimeGuards: what a pod needs when the pipeline is converted cannot come
// from a var known only at run time; the refusal names the step, the field and the var.
// A registry image_resource can: a resolve step reads it when the step runs.
func TestAcrossRuntimeGuards(t *testing.T) {
	const cfg = "{platform: linux, rootfs_uri: 'docker:///busybox', run: {path: x}}"
	tests := []struct {
		name, step, want string
	}{
		{
			name: "task image artifact",
			step: "task: t\n    image: ((.:v))\n    config: {platform: linux, run: {path: x}}",
			want: `step "t" (plan 1): the image of task "t" depends on across var "v", whose values are known only at run time`,
		},
		{
			name: "rootfs_uri",
			step: "task: t\n    config: {platform: linux, rootfs_uri: 'docker:///((.:v))', run: {path: x}}",
			want: `the image of task "t" depends on across var "v"`,
		},
		{
			name: "image_resource type",
			step: "task: t\n    config: {platform: linux, image_resource: {type: ((.:v)), source: {}}, run: {path: x}}",
			want: `the image of task "t" depends on across var "v"`,
		},
		{
			name: "tags",
			step: "task: t\n    tags: [((.:v))]\n    config: " + cfg,
			want: `the tags of task "t" depend on across var "v", whose values are known only at run time`,
		},
		{
			name: "a resource type's image",
			step: "get: r",
			want: `the image of get "r" depends on across var "v"`,
		},
		{
			name: "a registry image_resource",
			step: "task: t\n    config: {platform: linux, image_resource: {type: registry-image, source: {repository: ((.:v))}}, run: {path: x}}",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			yaml := "jobs:\n- name: test\n  plan:\n  - across: [{var: v, values: ((.:vs))}]\n    " + tc.step + "\n"
			if strings.HasPrefix(tc.step, "get:") {
				yaml = "resource_types: [{name: custom, type: registry-image, source: {repository: ((.:v))}}]\n" +
					"resources: [{name: r, type: custom}]\n" + yaml
			}
			b, r, err := translateJob(t, yaml, translate.Options{AcrossSlots: 2})
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				validate(t, r)
				_, specs := pipelineTasks(t, r)
				if s := specs["resolve-t"]; s.Mode != runspec.ModeResolve || len(s.AcrossSlots) != 1 {
					t.Errorf("the image is not resolved in the slot: %+v", s)
				}
				return
			}
			var u *translate.UnsupportedError
			if !errors.As(err, &u) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want an UnsupportedError saying %q", err, tc.want)
			}
			if got := b.Paths[u.PlanID].String(); !strings.HasPrefix(got, "jobs[test].plan[0]") || got == "jobs[test].plan[0].across" {
				t.Errorf("the refusal is placed at %q, want the step in the across", got)
			}
		})
	}
}

// TestAcrossNested: an across over run-time values in the substep of another, static or
// not: the slots chain outermost first, and the inner vars shadow the outer ones.
func TestAcrossNested(t *testing.T) {
	yaml := `jobs:
- name: test
  plan:
  - across: [{var: v, values: [a, b]}, {var: w, values: [c]}]
    do:
    - across: [{var: v, values: ((.:vs))}]
      do:
      - across: [{var: x, values: ((.:v))}]
        task: t
        config: {platform: linux, rootfs_uri: 'docker:///busybox', run: {path: echo, args: [((.:v)), ((.:w)), ((.:x))]}}
`
	_, r, err := translateJob(t, yaml, translate.Options{AcrossSlots: 2})
	if err != nil {
		t.Fatal(err)
	}
	validate(t, r)
	_, specs := pipelineTasks(t, r)
	var leaves []runspec.Spec
	for _, s := range specs {
		if s.Mode == runspec.ModeTask {
			leaves = append(leaves, s)
		}
	}
	// Two static combinations, times two slots, times two slots.
	if len(leaves) != 8 {
		t.Fatalf("%d tasks, want 8", len(leaves))
	}
	for _, s := range leaves {
		if len(s.AcrossSlots) != 2 || !strings.HasPrefix(s.PlanID, s.AcrossSlots[1].Plan+"/") || !strings.HasPrefix(s.AcrossSlots[1].Plan, s.AcrossSlots[0].Plan+"/") {
			t.Errorf("task %s: across slots %+v, want the outer one first", s.PlanID, s.AcrossSlots)
		}
		if diff := cmp.Diff(map[string]any{"w": "c"}, s.AcrossVars); diff != "" {
			t.Errorf("task %s: static across vars (-want +got), v is shadowed by the slot's:\n%s", s.PlanID, diff)
		}
	}
}
