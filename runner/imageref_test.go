package runner

import "testing"

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
