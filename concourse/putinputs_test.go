package concourse_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/concourse-tekton/concourse-tekton/concourse"
)

// TestDetectPutInputs: Concourse v8's exec.detectInputsFromParam, value by value.
func TestDetectPutInputs(t *testing.T) {
	for _, tt := range []struct {
		name   string
		params map[string]any
		want   []string
	}{
		{name: "no params", params: nil, want: nil},
		{name: "a bare name is itself", params: map[string]any{"repo": "built"}, want: []string{"built"}},
		{name: "first segment of a path", params: map[string]any{"file": "built/image.tar"}, want: []string{"built"}},
		{name: "dot segments skipped", params: map[string]any{"a": "./src/x", "b": "../../up/x"}, want: []string{"src", "up"}},
		{name: "only dot segments: the whole string", params: map[string]any{"a": "../.."}, want: []string{"../.."}},
		{name: "an absolute path names nothing", params: map[string]any{"a": "/abs/path", "b": "./"}, want: nil},
		{name: "keys, numbers and booleans name nothing", params: map[string]any{"built": 3, "repo": true, "x": 1.5}, want: nil},
		{
			name:   "nested maps and lists, sorted keys, each name once",
			params: map[string]any{"z": "zed/1", "d": []any{"list/1", map[string]any{"e": "nested/y", "f": "zed"}}},
			want:   []string{"list", "nested", "zed"},
		},
		{name: "uninterpolated vars are names like any", params: map[string]any{"a": "((dir))/x"}, want: []string{"((dir))"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, concourse.DetectPutInputs(tt.params)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
