package concourse_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/vars"
)

// TestVarValuesHidden: a message about a value that static vars gave (-v, -y, -l: how a
// pipeline is given its credentials) shows the value as written, its ((vars)) named,
// never what they gave.
func TestVarValuesHidden(t *testing.T) {
	const secret = "GHTOKEN-SEKRIT-1"
	var vf concourse.VarFlags
	mustNil(t, vf.AddVar("git_token="+secret))
	mustNil(t, vf.AddVar("word=abc"))
	mustNil(t, vf.AddYAMLVar("zero=0"))
	mustNil(t, vf.AddYAMLVar("creds={user: u, password: "+secret+"}"))
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{
			name: "validation",
			yaml: `
resources:
- name: repo
  type: git
jobs:
- name: unit
  plan:
  - get: repo
    timeout: ((git_token))-x
  - task: t
    file: repo/t.yml
    attempts: ((zero))
  - put: repo
    timeout: ((word))
  - get: ((git_token))
`,
			want: []string{
				`9:5: jobs[unit].plan[0].timeout: invalid timeout "((git_token))-x": the step errors when it runs; use a duration such as 30m or 1h30m`,
				`12:5: jobs[unit].plan[1].attempts: attempts must be greater than 0, not ((zero))`,
				`14:5: jobs[unit].plan[2].timeout: invalid timeout "((word))": the step errors when it runs; use a duration such as 30m or 1h30m`,
				`15:5: jobs[unit].plan[3].get: get step "((git_token))" is not a valid identifier: start with a lowercase letter or a number, then use lowercase letters, numbers, '-', '_' and '.'`,
				`15:5: jobs[unit].plan[3].get: unknown resource "((git_token))"`,
			},
		},
		{
			name: "decoding",
			yaml: `
resources:
- name: repo
  type: git
  check_every: ((git_token))
jobs:
- name: unit
  serial: ((git_token))
  plan:
  - get: repo
    attempts: ((word))
  - get: repo
    version: ((git_token))
  - get: repo
    trigger: ((creds))
`,
			want: []string{
				`5:3: resources[repo].check_every: invalid check_every "((git_token))": use a duration such as "10m", or "never"`,
				`8:3: jobs[unit].serial: cannot use string as a boolean (got "((git_token))")`,
				`11:5: jobs[unit].plan[0].attempts: cannot use string as an integer (got "((word))")`,
				`13:5: jobs[unit].plan[1].version: invalid version "((git_token))": use "latest", "every" or a map of version fields`,
				`15:5: jobs[unit].plan[2].trigger: cannot use object as a boolean`,
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, diags := concourse.ParsePipeline("p.yml", []byte(tc.yaml), vf.Variables())
			got := render(diags)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("diagnostics (-want +got):\n%s", diff)
			}
			for _, d := range diags {
				if strings.Contains(d.Error(), secret) || strings.Contains(d.Error(), "abc") {
					t.Errorf("a var's value is shown: %s", d.Error())
				}
			}
		})
	}
}

// TestTaskVarValuesHidden: the same of a task file given vars (execute's -v).
func TestTaskVarValuesHidden(t *testing.T) {
	static := vars.StaticVariables{"git_token": "GHTOKEN-SEKRIT-1"}
	_, diags := concourse.LoadTaskConfig("t.yml", []byte("platform: linux\nrun: {path: env}\ninputs: ((git_token))\n"), concourse.TaskFileOptions{Vars: static})
	err := diags.Err()
	want := `t.yml:3:1: inputs: cannot use string as a list (got "((git_token))")`
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "SEKRIT") {
		t.Errorf("err = %v, want %s", err, want)
	}
}
