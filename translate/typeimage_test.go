package translate_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/translate"
)

// A custom type's image is known when it compiles: Concourse's mock resource mirroring
// itself, however many custom types down, runs the mock resource's image; a chain to a
// type that fetches images otherwise is refused, naming why.
func TestCustomTypeImages(t *testing.T) {
	const types = `resource_types:
- {name: custom-resource-type, type: mock, source: {mirror_self: true}}
- {name: of-custom, type: custom-resource-type, source: {mirror_self: true}}
- {name: not-mirrored, type: custom-resource-type, source: {}}
- {name: from-registry, type: registry-image, source: {repository: example.com/type}}
- {name: of-registry-type, type: from-registry, source: {repository: example.com/other}}
`
	opts := translate.Options{ResourceImages: map[string]string{"mock": "example.com/mock:v1"}}
	tests := []struct {
		typ, wantImage, wantErr string
	}{
		{typ: "custom-resource-type", wantImage: "example.com/mock:v1"},
		{typ: "of-custom", wantImage: "example.com/mock:v1"},
		{typ: "not-mirrored", wantErr: `the image of resource type "not-mirrored" cannot be run here: it is of type "custom-resource-type"`},
		{typ: "from-registry", wantImage: "example.com/type:latest"},
		{typ: "of-registry-type", wantErr: `the image of resource type "of-registry-type" cannot be run here: it is of type "from-registry"`},
	}
	for _, tt := range tests {
		t.Run(tt.typ, func(t *testing.T) {
			yaml := types + "resources: [{name: r, type: " + tt.typ + ", source: {initial_version: a}}]\n" +
				"jobs:\n- name: test\n  plan: [{get: r}]\n"
			_, r, err := translateJob(t, yaml, opts)
			if tt.wantErr != "" {
				var u *translate.UnsupportedError
				if !errors.As(err, &u) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want an UnsupportedError saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// The get's check and the get both run the type's image.
			var images []string
			for _, pt := range r.Pipeline.Spec.Tasks {
				var mode, image string
				for _, p := range pt.Params {
					switch p.Name {
					case runspec.ParamMode:
						mode = p.Value.StringVal
					case runspec.ParamImage:
						image = p.Value.StringVal
					}
				}
				if mode == string(runspec.ModeCheck) || mode == string(runspec.ModeGet) {
					images = append(images, mode+" "+image)
				}
			}
			want := []string{"check " + tt.wantImage, "get " + tt.wantImage}
			if diff := cmp.Diff(want, images); diff != "" {
				t.Errorf("images (-want +got):\n%s", diff)
			}
		})
	}
}

// A task's image_resource of a custom type that runs the mock resource (testflight's
// custom-resource-type), with mirror_self, runs the mock resource's image, as its get
// would give it; the same type without mirror_self in the image's source cannot run.
func TestTaskImageOfACustomMockType(t *testing.T) {
	const types = `resource_types:
- {name: custom-resource-type, type: mock, source: {mirror_self: true}}
- {name: loop-a, type: loop-b, source: {mirror_self: true}}
- {name: loop-b, type: loop-a, source: {mirror_self: true}}
`
	opts := translate.Options{ResourceImages: map[string]string{"mock": "example.com/mock:v1"}}
	job := func(typ, source string) string {
		return types + "jobs:\n- name: test\n  plan:\n  - task: t\n    config:\n      platform: linux\n" +
			"      image_resource: {type: " + typ + ", source: " + source + "}\n      run: {path: true}\n"
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
	for _, src := range []string{"{}"} {
		if _, _, err := translateJob(t, job("custom-resource-type", src), opts); err == nil {
			t.Errorf("image_resource of custom-resource-type with source %s: compiled, want it refused", src)
		}
	}
	if _, _, err := translateJob(t, job("loop-a", "{mirror_self: true}"), opts); err == nil {
		t.Error("an image_resource of a type in a cycle compiled")
	}
}
