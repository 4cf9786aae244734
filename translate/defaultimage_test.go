package translate_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/planner"
	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/translate"
)

// TestDefaultTaskImage: a task that names no image runs in the default task image, as
// Concourse runs it in its worker's default root file system; a task that names one
// keeps it. A task whose config is read when the build runs hands the default to the
// step that reads it. Without a default, the task is refused at its step.
func TestDefaultTaskImage(t *testing.T) {
	const yaml = `resources: [{name: img, type: registry-image, source: {repository: example.com/img}}, {name: repo, type: git}]
jobs:
- name: test
  plan:
  - get: img
  - get: repo
  - task: bare
    config: {platform: linux, run: {path: "true"}}
  - task: rootfs
    config: {platform: linux, rootfs_uri: docker:///busybox#1.36, run: {path: "true"}}
  - task: artifact
    image: img
    config: {platform: linux, run: {path: "true"}}
  - task: from-file
    file: repo/ci/task.yml
`
	opts := translate.Options{DefaultTaskImage: "example.com/default:1"}
	_, r, err := translateJob(t, yaml, opts)
	if err != nil {
		t.Fatal(err)
	}
	validate(t, r)
	var tasks []string
	for _, s := range stepImages(r) {
		if strings.HasPrefix(s, "task-") || strings.HasPrefix(s, "resolve-") {
			tasks = append(tasks, s)
		}
	}
	want := []string{
		"task-bare task example.com/default:1",
		"task-rootfs task busybox:1.36",
		"task-artifact task $(tasks.get-img.results.image)",
		"resolve-from-file resolve " + translate.DefaultRunnerImage,
		"task-from-file task $(tasks.resolve-from-file.results.image)",
	}
	if diff := cmp.Diff(want, tasks); diff != "" {
		t.Errorf("tasks (-want +got):\n%s", diff)
	}
	for _, pt := range r.Pipeline.Spec.Tasks {
		if spec := specOf(t, pt); spec.Mode == runspec.ModeResolve && spec.Resolve.DefaultImage != opts.DefaultTaskImage {
			t.Errorf("%s reads its config with the default image %q, want %q", pt.Name, spec.Resolve.DefaultImage, opts.DefaultTaskImage)
		}
	}

	b, _, err := translateJob(t, yaml, translate.Options{})
	var u *translate.UnsupportedError
	if !errors.As(err, &u) || b.Paths[u.PlanID].String() != "jobs[test].plan[2].task" ||
		!strings.Contains(u.Reason, "or the build a default task image (--default-task-image; the web node's --tekton-default-task-image)") {
		t.Errorf("without a default: %v; want the task bare refused at its step, naming the flag", err)
	}
}

// TestOneOffDefaultTaskImage: fly execute's task config without an image runs in the
// default task image.
func TestOneOffDefaultTaskImage(t *testing.T) {
	cfg, err := concourse.ParseTaskConfig([]byte("platform: linux\nrun: {path: \"true\"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	plan := planner.PlanOneOff(cfg, planner.OneOff{})
	r, err := translate.Translate(plan, translate.Options{Pipeline: "one-off", Job: "build", OneOff: true, DefaultTaskImage: "example.com/default:1"})
	if err != nil {
		t.Fatal(err)
	}
	validate(t, r)
	var images []string
	for _, pt := range r.PipelineRun.Spec.PipelineSpec.Tasks {
		for _, p := range pt.Params {
			if p.Name == runspec.ParamImage {
				images = append(images, p.Value.StringVal)
			}
		}
	}
	if diff := cmp.Diff([]string{"example.com/default:1"}, images); diff != "" {
		t.Errorf("images (-want +got):\n%s", diff)
	}
}
