package translate_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/concourse-tekton/concourse-tekton/translate"
)

// TestAnnotationsLimit: a build whose objects' annotations would pass Kubernetes' 256 KiB
// (a long team's or pipeline's name, or instance vars: the job's name is bounded when
// the pipeline is validated) is refused, not compiled into objects the API server
// refuses; one just under the limit compiles into objects Tekton takes.
func TestAnnotationsLimit(t *testing.T) {
	file := filepath.Join("testdata", "hooks", "pipeline.yml")
	tests := []struct {
		name string
		opts translate.Options
		want string
	}{
		{"a team's name of 1 MiB", translate.Options{Team: strings.Repeat("t", 1<<20)},
			"the build's objects would have 2049 KiB of annotations, over Kubernetes' limit of 256 KiB for an object's: shorten the team's, the pipeline's or the job's name, or the instance vars"},
		{"instance vars of 200 KiB", translate.Options{InstanceVars: map[string]any{"v": strings.Repeat("x", 200<<10)}}, "over Kubernetes' limit of 256 KiB"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := translateFile(t, file, "test", tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %.300v, want it to say %s", err, tc.want)
			}
		})
	}
	r, err := translateFile(t, file, "test", translate.Options{Team: strings.Repeat("t", 60<<10)})
	if err != nil {
		t.Fatalf("a team's name of 60 KiB: %.300v", err)
	}
	validate(t, r)
}
