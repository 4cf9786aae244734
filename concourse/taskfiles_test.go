package concourse_test

import (
	"errors"
	"io/fs"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/concourse-tekton/concourse-tekton/concourse"
)

const taskFilesPipeline = `resources:
- name: repo
  type: git
  source: {uri: https://example.com/r.git}
jobs:
- name: unit
  plan:
  - get: repo
  - task: test
    file: repo/ci/test.yml
  - task: later
    file: built/ci/later.yml
- name: lint
  plan:
  - get: repo
  - do:
    - task: lint
      file: repo/ci/lint.yml
    - task: again
      file: repo/ci/test.yml
`

func TestLoadTaskFiles(t *testing.T) {
	p, diags := concourse.ParsePipeline("pipeline.yml", []byte(taskFilesPipeline), nil)
	mustNil(t, diags.Err())
	repo := fstest.MapFS{
		"ci/test.yml": {Data: []byte("platform: linux\nrun: {path: make}\n")},
		"ci/lint.yml": {Data: []byte("platform: linux\nrun: {path: lint}\n")},
	}
	got, err := p.LoadTaskFiles(map[string]fs.FS{"repo": repo})
	mustNil(t, err)
	// built/ is no given artifact: its task reads its file when the build runs.
	want := map[string]concourse.TaskConfig{
		"repo/ci/test.yml": {Platform: "linux", Run: concourse.TaskRunConfig{Path: "make"}},
		"repo/ci/lint.yml": {Platform: "linux", Run: concourse.TaskRunConfig{Path: "lint"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("configs (-want +got):\n%s", diff)
	}
}

func TestLoadTaskFilesErrors(t *testing.T) {
	p, diags := concourse.ParsePipeline("pipeline.yml", []byte(taskFilesPipeline), nil)
	mustNil(t, diags.Err())
	repo := fstest.MapFS{
		"ci/test.yml": {Data: []byte("platform: linux\nrun: {path: make}\nouputs: []\n")},
	}
	_, err := p.LoadTaskFiles(map[string]fs.FS{"repo": repo})
	var invalid *concourse.InvalidConfigError
	if !errors.As(err, &invalid) {
		t.Fatalf("err = %v, want an *InvalidConfigError", err)
	}
	var got []string
	for _, d := range invalid.Diagnostics {
		got = append(got, d.Error())
	}
	// Every problem, at the step that names the file: a file two steps name is read once
	// and reported at both.
	bad := `invalid task file: repo/ci/test.yml:3:1: ouputs: unknown fields: [ouputs] (did you mean "outputs"?)`
	want := []string{
		`pipeline.yml:10:5: jobs[unit].plan[1].file: task "test": ` + bad,
		`pipeline.yml:18:7: jobs[lint].plan[1].do[0].file: task "lint": the artifact repo has no file ci/lint.yml: fix the path, or give the directory of the artifact that has it`,
		`pipeline.yml:20:7: jobs[lint].plan[1].do[1].file: task "again": ` + bad,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}
