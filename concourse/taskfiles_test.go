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
	got, diags := loadTaskFiles(t, taskFilesPipeline, map[string]string{
		"ci/test.yml": "platform: linux\nrootfs_uri: docker:///busybox\nrun: {path: make}\n",
		"ci/lint.yml": "platform: linux\nrootfs_uri: docker:///busybox\nrun: {path: lint}\n",
	})
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	// built/ is no given artifact: its task reads its file when the build runs.
	want := map[string]concourse.TaskConfig{
		"repo/ci/test.yml": {Platform: "linux", RootfsURI: "docker:///busybox", Run: concourse.TaskRunConfig{Path: "make"}},
		"repo/ci/lint.yml": {Platform: "linux", RootfsURI: "docker:///busybox", Run: concourse.TaskRunConfig{Path: "lint"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("configs (-want +got):\n%s", diff)
	}
}

func TestLoadTaskFilesErrors(t *testing.T) {
	_, diags := loadTaskFiles(t, taskFilesPipeline, map[string]string{"ci/test.yml": "platform: linux\nrun: {path: make}\nouputs: []\n"})
	err := diags.Err()
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

// TestLoadTaskFilesWarnings: a valid file's warnings are said once, at their positions
// in the file; that it names no image only when a step that names it gives none.
func TestLoadTaskFilesWarnings(t *testing.T) {
	const pipeline = `resources:
- {name: repo, type: git}
- {name: img, type: registry-image}
jobs:
- name: unit
  plan:
  - get: repo
  - get: img
  - task: test
    file: repo/ci/test.yml
  - task: again
    file: repo/ci/test.yml
  - task: in-img
    image: img
    file: repo/ci/in-img.yml
`
	configs, diags := loadTaskFiles(t, pipeline, map[string]string{
		"ci/test.yml":   "platform: linux\nrun: {path: make}\ncaches:\n- path: .cache\n- {}\n",
		"ci/in-img.yml": "platform: linux\nrun: {path: make}\n",
	})
	if diags.Err() != nil || len(configs) != 2 {
		t.Fatalf("configs %v, diagnostics %v", configs, diags)
	}
	var got []string
	for _, d := range diags.Warnings() {
		got = append(got, d.Error())
	}
	want := []string{
		"repo/ci/test.yml:1:1: the task config has no image: Concourse runs it in its worker's root file system; a build on Tekton runs it in the default task image (--default-task-image; the web node's --tekton-default-task-image), and refuses it without one: give it an image_resource (or a rootfs_uri), or its step an image",
		"repo/ci/test.yml:5:3: caches[1]: cache has no path: Concourse caches the task's whole working directory then, which a build here refuses: give it a path",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}

// loadTaskFiles reads the task files of pipeline from the artifact repo, whose files
// are by path.
func loadTaskFiles(t *testing.T, pipeline string, repo map[string]string) (map[string]concourse.TaskConfig, concourse.Diagnostics) {
	t.Helper()
	p, diags := concourse.ParsePipeline("pipeline.yml", []byte(pipeline), nil)
	mustNil(t, diags.Err())
	files := fstest.MapFS{}
	for name, data := range repo {
		files[name] = &fstest.MapFile{Data: []byte(data)}
	}
	return p.LoadTaskFiles(map[string]fs.FS{"repo": files})
}
