package translate_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"

	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/translate"
)

// A custom type's image: Concourse's mock resource mirroring itself, however many custom
// types down, runs the mock resource's image; a registry image known when the pipeline
// is converted runs as it is; any other is fetched when the build runs (a check, a get,
// and unless that get is of a registry image, the publishing of what it fetched), before
// the steps that run it. The job's get, given no version, checks for it in its own pod.
func TestCustomTypeImages(t *testing.T) {
	const types = `resource_types:
- {name: custom-resource-type, type: mock, source: {mirror_self: true}}
- {name: of-custom, type: custom-resource-type, source: {mirror_self: true}}
- {name: not-mirrored, type: custom-resource-type, source: {}}
- {name: from-registry, type: registry-image, source: {repository: example.com/type}}
- {name: of-registry-type, type: from-registry, source: {repository: example.com/other}}
- {name: var-repo, type: registry-image, source: {repository: ((registry))/r}}
`
	const runner = translate.DefaultRunnerImage
	opts := translate.Options{ResourceImages: map[string]string{"mock": "example.com/mock:v1"}}
	tests := []struct {
		typ  string
		want []string // each PipelineTask of the job: name, mode, image
	}{
		{typ: "custom-resource-type", want: []string{"get-r get example.com/mock:v1"}},
		{typ: "of-custom", want: []string{"get-r get example.com/mock:v1"}},
		{typ: "from-registry", want: []string{"get-r get example.com/type:latest"}},
		{typ: "not-mirrored", want: []string{
			"check-not-mirrored check example.com/mock:v1",
			"get-not-mirrored get example.com/mock:v1",
			"publish-not-mirrored publish " + runner,
			"get-r get $(tasks.publish-not-mirrored.results.image)"}},
		{typ: "of-registry-type", want: []string{
			"check-of-registry-type check example.com/type:latest",
			"get-of-registry-type get example.com/type:latest",
			"publish-of-registry-type publish " + runner,
			"get-r get $(tasks.publish-of-registry-type.results.image)"}},
		{typ: "var-repo", want: []string{
			"check-var-repo check concourse/registry-image-resource",
			"get-var-repo get concourse/registry-image-resource",
			"get-r get $(tasks.get-var-repo.results.image)"}},
	}
	for _, tt := range tests {
		t.Run(tt.typ, func(t *testing.T) {
			yaml := types + "resources: [{name: r, type: " + tt.typ + ", source: {initial_version: a}}]\n" +
				"jobs:\n- name: test\n  plan: [{get: r}]\n"
			_, r, err := translateJob(t, yaml, opts)
			if err != nil {
				t.Fatal(err)
			}
			validate(t, r)
			if diff := cmp.Diff(tt.want, stepImages(r)); diff != "" {
				t.Errorf("steps (-want +got):\n%s", diff)
			}
			// The fetched image is in a scope of its own: no step of the build sees it.
			for _, pt := range r.Pipeline.Spec.Tasks {
				spec := specOf(t, pt)
				if (spec.Mode == runspec.ModePublish || spec.Mode == runspec.ModeGet) && spec.Name != "r" {
					if len(spec.Scope) != 1 || spec.Scope[0] != "image:1/image-get" {
						t.Errorf("%s runs in scope %q, want the image's own", pt.Name, spec.Scope)
					}
				}
			}
		})
	}
}

// stepImages lists each PipelineTask of a compiled job as "name mode image".
func stepImages(r *translate.Result) []string {
	var out []string
	for _, pt := range r.Pipeline.Spec.Tasks {
		var mode, image string
		for _, p := range pt.Params {
			switch p.Name {
			case runspec.ParamSpec:
				spec, err := runspec.Decode(p.Value.StringVal)
				if err != nil {
					panic(err)
				}
				mode = string(spec.Mode)
			case runspec.ParamImage:
				image = p.Value.StringVal
			}
		}
		out = append(out, pt.Name+" "+mode+" "+image)
	}
	return out
}

// A task's image_resource of a custom type that runs the mock resource (testflight's
// custom-resource-type), with mirror_self, runs the mock resource's image, as its get
// would give it; the same type without mirror_self is fetched when the build runs.
func TestTaskImageOfACustomMockType(t *testing.T) {
	const types = `resource_types:
- {name: custom-resource-type, type: mock, source: {mirror_self: true}}
- {name: loop-a, type: loop-b, source: {mirror_self: true}}
- {name: loop-b, type: loop-a, source: {mirror_self: true}}
`
	opts := translate.Options{ResourceImages: map[string]string{"mock": "example.com/mock:v1"}}
	job := func(typ, source string) string {
		return types + "jobs:\n- name: test\n  plan:\n  - task: t\n    config:\n      platform: linux\n" +
			"      image_resource: {type: " + typ + ", source: " + source + "}\n      run: {path: \"true\"}\n"
	}
	_, r, err := translateJob(t, job("custom-resource-type", "{mirror_self: true}"), opts)
	if err != nil {
		t.Fatal(err)
	}
	var image string
	for _, pt := range r.Pipeline.Spec.Tasks {
		for _, p := range pt.Params {
			if p.Name == runspec.ParamImage && strings.HasPrefix(pt.Name, "task-") {
				image = p.Value.StringVal
			}
		}
	}
	if image != "example.com/mock:v1" {
		t.Errorf("the task's image is %q, want the mock resource's", image)
	}
	// Without mirror_self, the image is what the type's get fetches, published.
	_, r, err = translateJob(t, job("custom-resource-type", "{}"), opts)
	if err != nil {
		t.Fatal(err)
	}
	validate(t, r)
	want := []string{
		"check-image check example.com/mock:v1",
		"get-image get example.com/mock:v1",
		"publish-image publish " + translate.DefaultRunnerImage,
		"task-t task $(tasks.publish-image.results.image)",
	}
	if diff := cmp.Diff(want, stepImages(r)); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	// Types in a cycle: the chain ends, as Concourse's does, at a base type of the name
	// (no type is its own image's type), which no image is known for.
	_, r, err = translateJob(t, job("loop-a", "{mirror_self: true}"), opts)
	if err != nil || len(r.Warnings) == 0 || !strings.Contains(r.Warnings[0].Reason, "base resource type not found: loop-a") {
		t.Errorf("an image_resource of a type in a cycle: err %v, warnings %v; want it compiled, warned, to error at run time", err, r.Warnings)
	}
}

// specOf decodes the runner spec of a PipelineTask.
func specOf(t *testing.T, pt v1.PipelineTask) runspec.Spec {
	t.Helper()
	for _, p := range pt.Params {
		if p.Name == runspec.ParamSpec {
			spec, err := runspec.Decode(p.Value.StringVal)
			if err != nil {
				t.Fatalf("%s: %v", pt.Name, err)
			}
			return spec
		}
	}
	t.Fatalf("%s has no spec", pt.Name)
	return runspec.Spec{}
}

// TestMirroredImages: a step whose image is the mock resource fetching itself (run as
// the mock's own image) is told the fetches that make it, innermost first, for its
// runner to give it the fetched image's environment: a resource step of a custom type
// (and a get's check), a task's image_resource, a task that runs a get's artifact.
func TestMirroredImages(t *testing.T) {
	const pipeline = `resource_types:
- {name: custom-resource-type, type: mock, source: {mirror_self: true, initial_version: type-v}}
- {name: of-custom, type: custom-resource-type, source: {mirror_self: true}}
- {name: from-registry, type: registry-image, source: {repository: example.com/type}}
resources:
- {name: r, type: of-custom, source: {initial_version: a}}
- {name: img, type: mock, source: {mirror_self: true}}
- {name: plain, type: from-registry, source: {}}
jobs:
- name: test
  plan:
  - get: r
  - put: r
  - get: img
  - get: plain
  - task: own
    config:
      platform: linux
      image_resource: {type: mock, source: {mirror_self: true}, params: {p: 1}, version: {version: pinned}}
      run: {path: env}
  - task: custom
    config:
      platform: linux
      image_resource: {type: custom-resource-type, source: {mirror_self: true, initial_version: image-version}}
      run: {path: env}
  - task: artifact
    image: img
    config: {platform: linux, run: {path: env}}
  - task: registry
    config:
      platform: linux
      image_resource: {type: registry-image, source: {repository: busybox}}
      run: {path: env}
`
	typeFetch := runspec.ImageFetch{Source: map[string]any{"mirror_self": true, "initial_version": "type-v"}}
	ofCustomFetch := runspec.ImageFetch{Source: map[string]any{"mirror_self": true}}
	want := map[string]*runspec.MirroredImage{
		"get-r":         {Fetches: []runspec.ImageFetch{typeFetch, ofCustomFetch}},
		"put-r":         {Fetches: []runspec.ImageFetch{typeFetch, ofCustomFetch}},
		"get-r-2":       {Fetches: []runspec.ImageFetch{typeFetch, ofCustomFetch}},
		"task-own":      {Fetches: []runspec.ImageFetch{{Source: map[string]any{"mirror_self": true}, Params: map[string]any{"p": json.Number("1")}, Version: map[string]string{"version": "pinned"}}}},
		"task-custom":   {Fetches: []runspec.ImageFetch{typeFetch, {Source: map[string]any{"mirror_self": true, "initial_version": "image-version"}}}},
		"task-artifact": {Artifact: "img"},
	}
	opts := translate.Options{ResourceImages: map[string]string{"mock": "example.com/mock:v1"}}
	_, r, err := translateJob(t, pipeline, opts)
	if err != nil {
		t.Fatal(err)
	}
	validate(t, r)
	got := map[string]*runspec.MirroredImage{}
	for _, pt := range r.Pipeline.Spec.Tasks {
		if spec := specOf(t, pt); spec.MirroredImage != nil {
			got[pt.Name] = spec.MirroredImage
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mirrored images (-want +got):\n%s\nsteps: %v", diff, stepImages(r))
	}

}

// A task's image_resource that steps of the build fetch: the fetch's first step (its
// check) carries the public plans of its check and its get, for Concourse's image-check
// and image-get events on the task's origin (none of the image's source); a pinned
// version's get, the fetch's only step, carries its own; the fetches of a custom type's
// image for a resource step, which Concourse does not announce, carry none.
func TestTaskImageFetchAnnounced(t *testing.T) {
	for _, version := range []string{"", "version: {v: '1'}, "} {
		yaml := `resource_types:
- {name: custom-resource-type, type: mock, source: {mirror_self: true}}
- {name: not-mirrored, type: custom-resource-type, source: {}}
resources: [{name: r, type: not-mirrored, source: {initial_version: a}}]
jobs:
- name: test
  plan:
  - get: r
  - task: t
    config:
      platform: linux
      image_resource: {type: not-mirrored, ` + version + `source: {secret: s3cret}}
      run: {path: "true"}
`
		_, r, err := translateJob(t, yaml, translate.Options{ResourceImages: map[string]string{"mock": "example.com/mock:v1"}})
		if err != nil {
			t.Fatal(err)
		}
		validate(t, r)
		task := ""
		for _, pt := range r.Pipeline.Spec.Tasks {
			if spec := specOf(t, pt); spec.Mode == runspec.ModeTask {
				task = spec.PlanID
			}
		}
		if task == "" {
			t.Fatalf("no task in %s", stepImages(r))
		}
		announced := map[string][]string{}
		for _, pt := range r.Pipeline.Spec.Tasks {
			spec := specOf(t, pt)
			for _, plan := range spec.ImagePlans {
				if strings.Contains(string(plan), "s3cret") {
					t.Errorf("%s: the image's source is in its public plan: %s", pt.Name, plan)
				}
				var p struct{ ID string }
				if err := json.Unmarshal(plan, &p); err != nil {
					t.Fatalf("%s: %s: %v", pt.Name, plan, err)
				}
				announced[spec.PlanID] = append(announced[spec.PlanID], p.ID)
			}
		}
		want := map[string][]string{task + "/image-check": {task + "/image-check", task + "/image-get"}}
		if version != "" {
			want = map[string][]string{task + "/image-get": {task + "/image-get"}}
		}
		if diff := cmp.Diff(want, announced); diff != "" {
			t.Errorf("%q: the plans each step announces (-want +got):\n%s", version, diff)
		}
	}
}
