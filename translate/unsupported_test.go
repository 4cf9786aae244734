package translate_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/planner"
	"github.com/concourse-tekton/concourse-tekton/translate"
)

// TestUnsupportedPlanID checks that an UnsupportedError names a node of the plan it was
// given (for a node of an across substep, the node of its template; for a get's check, the
// get), which planner.Build locates at the step the user wrote.
func TestUnsupportedPlanID(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{
			name: "a task of an across substep",
			yaml: `jobs:
- name: test
  plan:
  - across: [{var: v, values: [a, b]}]
    do:
    - task: t
      config: {platform: linux, rootfs_uri: 'docker:///x', run: {path: x}}
    - task: t
      config: {platform: linux, rootfs_uri: "file:///x", run: {path: x}}
`,
			want: "jobs[test].plan[0].do[1].task",
		},
		{
			name: "a task of a nested across over run-time values",
			yaml: `jobs:
- name: test
  plan:
  - across: [{var: v, values: [a, b]}]
    do:
    - across: [{var: w, values: ((ws))}]
      task: t
      tags: [((.:w))]
      config: {platform: linux, rootfs_uri: 'docker:///x', run: {path: x}}
`,
			want: "jobs[test].plan[0].do[0].task",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, _, err := translateJob(t, tc.yaml, translate.Options{})
			var u *translate.UnsupportedError
			if !errors.As(err, &u) {
				t.Fatalf("err = %v, want an *UnsupportedError", err)
			}
			if got := b.Paths[u.PlanID].String(); got != tc.want {
				t.Errorf("plan %s is at %q, want %q (%v)", u.PlanID, got, tc.want, err)
			}
		})
	}
}

// A warning is at the step of the pipeline it is about, as an error is: the put's implicit
// get is the put's.
func TestWarningPlanID(t *testing.T) {
	b, r, err := translateJob(t, "resources: [{name: r, type: weird}]\njobs:\n- name: test\n  plan: [{get: r}, {put: r}]\n", translate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var at []string
	for _, w := range r.Warnings {
		at = append(at, b.Paths[w.PlanID].String())
	}
	if want := []string{"jobs[test].plan[0].get", "jobs[test].plan[1].put", "jobs[test].plan[1].put"}; strings.Join(at, " ") != strings.Join(want, " ") {
		t.Errorf("warnings at %q, want %q", at, want)
	}
}

// A refusal names its real cause.
func TestUnsupportedNamesTheCause(t *testing.T) {
	tests := []struct{ name, source, want string }{
		{"no repository", `{tag: "1"}`, `its source has no repository`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			yaml := "resource_types: [{name: custom, type: registry-image, source: " + tc.source + "}]\n" +
				"resources: [{name: r, type: custom}]\njobs:\n- name: test\n  plan: [{get: r}]\n"
			_, _, err := translateJob(t, yaml, translate.Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to say %q", err, tc.want)
			}
		})
	}
}

// translateJob plans job "test" of pipeline "p" and compiles it with opts, returning the
// build, the compiled objects and the compiler's error.
func translateJob(t *testing.T, yaml string, opts translate.Options) (planner.Build, *translate.Result, error) {
	t.Helper()
	p, diags := concourse.ParsePipeline("p.yml", []byte(yaml), nil)
	if err := diags.Err(); err != nil {
		t.Fatal(err)
	}
	b, err := planner.PlanBuild(p, "test", planner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	opts.Pipeline, opts.Job = "p", "test"
	r, err := translate.Translate(b.Plan, opts)
	return b, r, err
}
