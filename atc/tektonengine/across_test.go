package tektonengine

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"code.cloudfoundry.org/clock"
	"github.com/concourse/concourse/atc"
	"github.com/concourse/concourse/atc/db/dbfakes"
	"github.com/concourse/concourse/atc/engine"
	atcevent "github.com/concourse/concourse/atc/event"
	"github.com/concourse/concourse/atc/exec"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/translate"
)

// TestAcrossSubstepIDs: the plan IDs of an across step's substeps, which every event of
// a substep carries as its origin, are the ones Concourse's engine gives them
// (ConstructAcrossSubsteps), for a substep with hooks and nested steps; and the substeps
// its across-substeps event lists are the engine's, byte for byte.
func TestAcrossSubstepIDs(t *testing.T) {
	task := func(id atc.PlanID, name string) atc.Plan {
		return atc.Plan{ID: id, Task: &atc.TaskPlan{Name: name, Config: &atc.TaskConfig{
			Platform: "linux", RootfsURI: "docker:///busybox", Run: atc.TaskRunConfig{Path: "true"},
		}}}
	}
	template := atc.Plan{ID: "t-ensure", Ensure: &atc.EnsurePlan{
		Step: atc.Plan{ID: "t-success", OnSuccess: &atc.OnSuccessPlan{
			Step: atc.Plan{ID: "t-do", Do: &atc.DoPlan{task("t-a", "a-((.:v))"), task("t-b", "b")}},
			Next: task("t-hook", "hook"),
		}},
		Next: task("t-ensure-hook", "ensure"),
	}}
	raw, err := json.Marshal(template)
	if err != nil {
		t.Fatal(err)
	}
	vars := []atc.AcrossVar{{Var: "v", Values: []any{"x", "y"}, MaxInFlight: &atc.MaxInFlightConfig{All: true}}}

	build := new(dbfakes.FakeBuild)
	delegate := engine.NewBuildStepDelegate(build, "7", exec.NewRunState(noopStepper, nil), clock.NewClock(), nil, false)
	substeps, err := delegate.ConstructAcrossSubsteps(raw, vars, [][]any{{"x"}, {"y"}})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, s := range substeps {
		s.Step.Each(func(p *atc.Plan) { want = append(want, string(p.ID)) })
	}

	plan := atc.Plan{ID: "7", Across: &atc.AcrossPlan{Vars: vars, SubStepTemplate: string(raw)}}
	planJSON, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	var converted concourse.Plan
	if err := json.Unmarshal(planJSON, &converted); err != nil {
		t.Fatal(err)
	}
	r, err := translate.Translate(converted, translate.Options{Team: "main", Pipeline: "p", Job: "j", Build: "1"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	var ours []json.RawMessage
	for _, pt := range append(r.Pipeline.Spec.Tasks, r.Pipeline.Spec.Finally...) {
		for _, p := range pt.Params {
			if p.Name != runspec.ParamSpec {
				continue
			}
			var spec runspec.Spec
			if err := json.Unmarshal([]byte(p.Value.StringVal), &spec); err != nil {
				t.Fatal(err)
			}
			if spec.Verdict != nil {
				collectIDs(spec.Verdict.Tree, &got)
				ours = spec.Verdict.Tree.Substeps
			}
		}
	}
	got = slices.DeleteFunc(got, func(id string) bool { return !strings.HasPrefix(id, "7/") })
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("substep plan IDs:\n ours     %q\n Concourse %q", got, want)
	}

	// The across-substeps event the engine saved lists the same substeps, byte for byte.
	if build.SaveEventCallCount() != 1 {
		t.Fatalf("the engine saved %d events, want its across-substeps", build.SaveEventCallCount())
	}
	saved, ok := build.SaveEventArgsForCall(0).(atcevent.AcrossSubsteps)
	if !ok {
		t.Fatalf("the engine saved a %T", build.SaveEventArgsForCall(0))
	}
	if len(saved.Substeps) != len(ours) {
		t.Fatalf("%d substeps in the verdict's tree, the engine's event lists %d", len(ours), len(saved.Substeps))
	}
	for i, sub := range saved.Substeps {
		if string(*sub) != string(ours[i]) {
			t.Errorf("substep %d:\n ours      %s\n Concourse %s", i, ours[i], *sub)
		}
	}
}

// collectIDs lists the plan IDs of a build's step tree below its root.
func collectIDs(n runspec.Node, into *[]string) {
	for _, c := range n.Children() {
		*into = append(*into, c.ID)
		collectIDs(*c, into)
	}
}

// noopStepper is a stepper for a run state no step is run from.
func noopStepper(atc.Plan) exec.Step { return nil }
