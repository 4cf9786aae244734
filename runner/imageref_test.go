package runner

import (
	"strings"
	"testing"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

func TestImageRef(t *testing.T) {
	tests := []struct {
		typ     string
		source  map[string]any
		version map[string]string
		want    string
	}{
		{"registry-image", map[string]any{"repository": "example/app"}, map[string]string{"digest": "sha256:abc"}, "example/app@sha256:abc"},
		{"docker-image", map[string]any{"repository": "r.example/x"}, map[string]string{"digest": "sha256:1"}, "r.example/x@sha256:1"},
		{"git", map[string]any{"repository": "x"}, map[string]string{"digest": "sha256:1"}, ""},
		{"registry-image", map[string]any{}, map[string]string{"digest": "sha256:1"}, ""},
		{"registry-image", map[string]any{"repository": "x"}, map[string]string{"tag": "1"}, ""},
	}
	for _, tc := range tests {
		if got := imageRef(tc.typ, tc.source, tc.version); got != tc.want {
			t.Errorf("imageRef(%s, %v, %v) = %q, want %q", tc.typ, tc.source, tc.version, got, tc.want)
		}
	}
}

func TestImageReference(t *testing.T) {
	ir := func(typ string, source map[string]any) concourse.TaskConfig {
		return concourse.TaskConfig{ImageResource: &concourse.ImageResource{Type: typ, Source: source}}
	}
	tests := []struct {
		name    string
		cfg     concourse.TaskConfig
		resolve runspec.Resolve
		want    string
		wantErr string
	}{
		{"registry-image with a tag", ir("registry-image", map[string]any{"repository": "busybox", "tag": 1.35}), runspec.Resolve{}, "busybox:1.35", ""},
		{"registry-image, latest", ir("registry-image", map[string]any{"repository": "busybox"}), runspec.Resolve{}, "busybox:latest", ""},
		{"mock with mirror_self: the mock's image", ir("mock", map[string]any{"mirror_self": true}), runspec.Resolve{MockImage: "e2e.invalid/mock-resource:v1"}, "e2e.invalid/mock-resource:v1", ""},
		{"mock with mirror_self, no mock image known", ir("mock", map[string]any{"mirror_self": true}), runspec.Resolve{}, "", "image_resource of type mock is not supported"},
		{"mock without mirror_self", ir("mock", map[string]any{}), runspec.Resolve{MockImage: "e2e.invalid/mock-resource:v1"}, "", "image_resource of type mock is not supported"},
		{"rootfs_uri", concourse.TaskConfig{RootfsURI: "docker:///busybox#1.35"}, runspec.Resolve{}, "busybox:1.35", ""},
		{"rootfs_uri over the default", concourse.TaskConfig{RootfsURI: "docker:///busybox#1.35"}, runspec.Resolve{DefaultImage: "alpine:3"}, "busybox:1.35", ""},
		{"no image: the default", concourse.TaskConfig{}, runspec.Resolve{DefaultImage: "alpine:3"}, "alpine:3", ""},
		{"no image and no default", concourse.TaskConfig{}, runspec.Resolve{}, "", "and the build no default task image: give the config one, or the build a default (--default-task-image"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := imageReference(tc.cfg, &tc.resolve)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("imageReference = %q, %v; want an error containing %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("imageReference = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestContainerEnv(t *testing.T) {
	in := []string{"PATH=/bin", "KUBERNETES_SERVICE_HOST=10.96.0.1", "KUBERNETES_SERVICE_PORT=443", "KUBERNETES_SERVICE_PORT_HTTPS=443",
		"KUBERNETES_PORT=tcp://10.96.0.1:443", "KUBERNETES_PORT_443_TCP_ADDR=10.96.0.1", "KUBERNETES_VERSION=1.30", "HOME=/root",
		runspec.EnvBuildContext + `={"team":"main"}`}
	want := []string{"PATH=/bin", "KUBERNETES_VERSION=1.30", "HOME=/root"}
	if got := containerEnv(in); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("containerEnv = %q, want %q", got, want)
	}
}
