package planner_test

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/planner"
	"github.com/concourse-tekton/concourse-tekton/internal/golden"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func loadPipeline(t *testing.T, file string) *concourse.Pipeline {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	p, diags := concourse.ParsePipeline(filepath.Base(file), data, nil)
	if err := diags.Err(); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestGolden plans job "test" of every testdata/<case>.yml and compares the plan with
// testdata/<case>.plan.json. `go test ./concourse/planner -update` rewrites them.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*.yml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".yml")
		t.Run(name, func(t *testing.T) {
			p := loadPipeline(t, file)
			plan, err := planner.PlanJob(&p.Config, "test", planner.Options{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.MarshalIndent(plan, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			golden.Check(t, strings.TrimSuffix(file, ".yml")+".plan.json", got, *update)
			// The plan decodes back to the same plan: the types are wire-compatible.
			var back concourse.Plan
			if err := json.Unmarshal(got, &back); err != nil {
				t.Fatal(err)
			}
			again, _ := json.MarshalIndent(back, "", "  ")
			if diff := cmp.Diff(string(got), string(again)+"\n"); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPlanIDs checks the IDs of the example Concourse's planner was verified with
// (concourse-semantics.md §2.3): children are numbered before their parents.
func TestPlanIDs(t *testing.T) {
	p := loadPipeline(t, "testdata/semantics-example.yml")
	plan, err := planner.PlanJob(&p.Config, "test", planner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	plan.Each(func(n *concourse.Plan) {
		kind := ""
		switch {
		case n.Get != nil:
			kind = "get:" + n.Get.Name
		case n.Put != nil:
			kind = "put:" + n.Put.Name
		case n.Check != nil:
			kind = "check:" + n.Check.Name
		case n.Task != nil:
			kind = "task:" + n.Task.Name
		case n.Retry != nil:
			kind = "retry"
		case n.OnSuccess != nil:
			kind = "on_success"
		case n.Do != nil:
			kind = "do"
		case n.Ensure != nil:
			kind = "ensure"
		}
		got = append(got, string(n.ID)+"="+kind)
	})
	want := []string{
		"a=ensure", "8=do",
		"1=get:repo", "1/image-check=check:custom", "1/image-get=get:custom",
		"4=retry", "2=task:build", "3=task:build",
		"7=on_success", "5=put:out", "6=get:out",
		"9=task:cleanup",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("plan IDs (-want +got):\n%s", diff)
	}
	get := (*plan.Ensure.Step.Do)[0].Get
	if diff := cmp.Diff(concourse.Source{"uri": "https://example.com/repo.git", "branch": "main"}, get.Source); diff != "" {
		t.Errorf("type defaults are merged under the source (-want +got):\n%s", diff)
	}
	if from := get.TypeImage.GetPlan.Get.VersionFrom; from == nil || *from != "1/image-check" {
		t.Errorf("image get version_from = %v, want 1/image-check", from)
	}
	implicit := (*plan.Ensure.Step.Do)[2].OnSuccess.Next.Get
	if implicit.VersionFrom == nil || *implicit.VersionFrom != "5" {
		t.Errorf("implicit get version_from = %v, want the put's ID 5", implicit.VersionFrom)
	}
}

func TestPlanOptions(t *testing.T) {
	p := loadPipeline(t, "testdata/composites.yml")
	plan, err := planner.PlanJob(&p.Config, "test", planner.Options{
		Versions: map[string]concourse.Version{"repo": {"ref": "from-input"}},
		FirstID:  0x100,
	})
	if err != nil {
		t.Fatal(err)
	}
	first := (*plan.Do)[0].InParallel.Steps[0]
	if first.ID != "101" {
		t.Errorf("first ID = %s, want 101 (FirstID+1 in hex)", first.ID)
	}
	if diff := cmp.Diff(&concourse.Version{"ref": "from-input"}, first.Get.Version); diff != "" {
		t.Errorf("a build input wins over a pin (-want +got):\n%s", diff)
	}
	second := (*plan.Do)[0].InParallel.Steps[1]
	if diff := cmp.Diff(&concourse.Version{"ref": "pinned"}, second.Get.Version); diff != "" {
		t.Errorf("the resource's pin applies (-want +got):\n%s", diff)
	}
}

func TestPlanErrors(t *testing.T) {
	p := loadPipeline(t, "testdata/hooks.yml")
	_, err := planner.PlanJob(&p.Config, "nope", planner.Options{})
	if err == nil || err.Error() != `unknown job "nope" (the pipeline has: test)` {
		t.Errorf("got %v", err)
	}
	cfg := &concourse.Config{Jobs: []concourse.JobConfig{{Name: "j", PlanSequence: []concourse.Step{{Config: &concourse.GetStep{Name: "ghost"}}}}}}
	_, err = planner.PlanJob(cfg, "j", planner.Options{})
	if err == nil || err.Error() != "unknown resource: ghost" {
		t.Errorf("got %v", err)
	}
}

// TestPlannedAsTheWebNode: a plan is what Concourse's web node plans from the config it
// saved: a task's resource types by name, each source over its parent type's defaults
// (as the scheduler reads them back from its database), which the image of a type built
// on another has too; an image's check at the type's check_every, else the web node's
// default interval; an empty run left out of a task's config.
func TestPlannedAsTheWebNode(t *testing.T) {
	p, diags := concourse.ParsePipeline("p.yml", []byte(`resource_types:
- {name: zeta, type: registry-image, source: {repository: z}, defaults: {k: from-zeta}}
- {name: alpha, type: zeta, source: {own: a}, check_every: 168h}
- {name: never, type: registry-image, source: {repository: nv}, check_every: never}
resources:
- {name: r, type: alpha}
- {name: nv, type: never}
jobs:
- name: test
  plan:
  - get: r
  - get: nv
  - task: t
    config: {platform: linux, run: {args: []}}
`), nil)
	if err := diags.Err(); err != nil {
		t.Fatal(err)
	}
	plan, err := planner.PlanJob(&p.Config, "test", planner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	do := *plan.Do
	task := do[2].Task
	var types []string
	for _, rt := range task.ResourceTypes {
		src, _ := json.Marshal(rt.Source)
		types = append(types, rt.Name+" "+string(src))
	}
	want := []string{`alpha {"k":"from-zeta","own":"a"}`, `never {"repository":"nv"}`, `zeta {"repository":"z"}`}
	if diff := cmp.Diff(want, types); diff != "" {
		t.Errorf("a task's resource types (-want +got):\n%s", diff)
	}
	image := do[0].Get.TypeImage
	if diff := cmp.Diff(concourse.Source{"k": "from-zeta", "own": "a"}, image.GetPlan.Get.Source); diff != "" {
		t.Errorf("the image of a type built on another (-want +got):\n%s", diff)
	}
	intervals := []string{
		image.CheckPlan.Check.Interval,
		image.GetPlan.Get.TypeImage.CheckPlan.Check.Interval,
		do[1].Get.TypeImage.CheckPlan.Check.Interval,
	}
	if diff := cmp.Diff([]string{"168h0m0s", "1m0s", "never"}, intervals); diff != "" {
		t.Errorf("the intervals of the checks of alpha's image, of zeta's, of never's (-want +got):\n%s", diff)
	}
	cfg, err := json.Marshal(task.Config)
	if err != nil || strings.Contains(string(cfg), `"run"`) {
		t.Errorf("a task config's empty run is kept: %s, %v", cfg, err)
	}
}
