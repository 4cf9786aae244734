package runspec_test

import (
	"fmt"

	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// A task step with a step-level timeout, inside a fail-fast in_parallel, as the
// translator writes it for the step's container.
func ExampleSpec_Args() {
	spec := runspec.Spec{
		Mode:   runspec.ModeTask,
		PlanID: "3",
		Name:   "unit",
		Build:  runspec.Build{TeamName: "main", PipelineName: "app", JobName: "test", Name: "12"},
		Context: []runspec.Layer{
			{Kind: runspec.LayerFailFast, ID: "5", Child: &runspec.Node{ID: "3", Kind: runspec.KindLeaf}},
			{Kind: runspec.LayerTimeout, ID: "3", Duration: "10m"},
		},
		Task: &runspec.Task{
			Config: map[string]any{"platform": "linux", "run": map[string]any{"path": "make", "args": []any{"test"}}},
			Params: map[string]any{"TOKEN": "((github.token))"},
		},
	}
	args, err := spec.Args()
	if err != nil {
		panic(err)
	}
	fmt.Println(args[0])
	fmt.Println(args[1])
	// Output:
	// step
	// --spec={"mode":"task","plan_id":"3","name":"unit","build":{"name":"12","team":"main","pipeline":"app","job":"test"},"context":[{"kind":"fail_fast","id":"5","child":{"id":"3","kind":"leaf"}},{"kind":"timeout","id":"3","duration":"10m"}],"task":{"config":{"platform":"linux","run":{"args":["test"],"path":"make"}},"params":{"TOKEN":"((github.token))"}}}
}

func ExampleEscape() {
	fmt.Println(runspec.ArtifactPath("a/0/1", "repo"))
	fmt.Println(runspec.Escape(""))
	// Output:
	// volumes/a%2F0%2F1/repo
	// %
}
