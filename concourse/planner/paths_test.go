package planner_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/planner"
)

const pathsPipeline = `resource_types:
- name: custom
  type: registry-image
  source: {repository: example/custom}
resources:
- {name: repo, type: git, source: {uri: u}}
- {name: out, type: custom, source: {}}
jobs:
- name: other
  plan: [{get: repo}]
- name: test
  plan:
  - get: repo
  - task: t
    file: repo/t.yml
    on_failure:
      do:
      - task: t
        file: repo/t.yml
  - in_parallel:
    - put: out
      no_get: true
  - in_parallel:
      steps:
      - across: [{var: v, values: [a, b]}]
        attempts: 2
        task: t
        file: repo/t.yml
  - try: {put: out}
  ensure:
    timeout: 1m
    load_var: x
    file: repo/x
`

// TestPlanBuildPaths checks that each node of the plan is located at the step that made it,
// two steps of the same name included.
func TestPlanBuildPaths(t *testing.T) {
	p, diags := concourse.ParsePipeline("p.yml", []byte(pathsPipeline), nil)
	if err := diags.Err(); err != nil {
		t.Fatal(err)
	}
	b, err := planner.PlanBuild(p, "test", planner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	b.Plan.Each(func(n *concourse.Plan) {
		at, ok := b.Paths[n.ID]
		if !ok {
			t.Errorf("plan %s is not located", n.ID)
			return
		}
		pos := p.Pos(at)
		got[string(n.ID)] = fmt.Sprintf("%d:%d %s", pos.Line, pos.Col, at)
	})
	put := "29:11 jobs[test].plan[4].try.put"
	want := map[string]string{
		"1": "13:5 jobs[test].plan[0].get",
		"2": "14:5 jobs[test].plan[1].task",
		"3": "18:9 jobs[test].plan[1].on_failure.do[0].task",
		"4": "17:7 jobs[test].plan[1].on_failure.do",
		"5": "16:5 jobs[test].plan[1].on_failure",
		// The put of an in_parallel's list, and its type's image sub-plans.
		"6": "21:7 jobs[test].plan[2].in_parallel[0].put", "6/image-check": "21:7 jobs[test].plan[2].in_parallel[0].put", "6/image-get": "21:7 jobs[test].plan[2].in_parallel[0].put",
		"7": "20:5 jobs[test].plan[2].in_parallel",
		"b": "25:9 jobs[test].plan[3].in_parallel.steps[0].across",
		"c": "23:5 jobs[test].plan[3].in_parallel",
		// A put, its implicit get and the node that joins them are the put step's.
		"d": put, "d/image-check": put, "d/image-get": put,
		"e": put, "e/image-check": put, "e/image-get": put,
		"f":  put,
		"10": "29:5 jobs[test].plan[4].try",
		"11": "12:3 jobs[test].plan",
		"12": "32:5 jobs[test].ensure.load_var",
		"13": "31:5 jobs[test].ensure.timeout",
		"14": "30:3 jobs[test].ensure",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("paths (-want +got):\n%s", diff)
	}
	// The nodes of the across substep are in its template, where Each does not go: the
	// attempts of a task.
	for id, path := range map[concourse.PlanID]string{
		"8": "jobs[test].plan[3].in_parallel.steps[0].task",
		"9": "jobs[test].plan[3].in_parallel.steps[0].task",
		"a": "jobs[test].plan[3].in_parallel.steps[0].attempts",
	} {
		if got := b.Paths[id].String(); got != path {
			t.Errorf("plan %s is at %s, want %s", id, got, path)
		}
	}
	// The plan is PlanJob's.
	plan, err := planner.PlanJob(&p.Config, "test", planner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(plan, b.Plan); diff != "" {
		t.Errorf("PlanBuild's plan is not PlanJob's (-want +got):\n%s", diff)
	}
}

// TestPlanBuildLocatesEveryNode plans every job of the golden cases.
func TestPlanBuildLocatesEveryNode(t *testing.T) {
	files, err := filepath.Glob("testdata/*.yml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	for _, file := range files {
		p := loadPipeline(t, file)
		for _, j := range p.Config.Jobs {
			b, err := planner.PlanBuild(p, j.Name, planner.Options{})
			if err != nil {
				t.Fatal(err)
			}
			b.Plan.Each(func(n *concourse.Plan) {
				if at, ok := b.Paths[n.ID]; !ok || len(at) < 3 {
					t.Errorf("%s: job %s: plan %s is located at %q", file, j.Name, n.ID, at)
				}
			})
		}
	}
}
