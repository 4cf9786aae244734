package translate_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// TestPutInputs: a put without `inputs` detects them from its params, as Concourse v8
// does; `all`, `detect` and a list keep their meaning.
func TestPutInputs(t *testing.T) {
	const pipeline = `
resources:
- name: out
  type: s3
  source: {bucket: b}
jobs:
- name: test
  plan:
  - put: omitted
    resource: out
    params: {file: built/x.tgz}
  - put: all
    resource: out
    inputs: all
  - put: detect
    resource: out
    inputs: detect
  - put: listed
    resource: out
    inputs: [built]
`
	file := filepath.Join(t.TempDir(), "pipeline.yml")
	if err := os.WriteFile(file, []byte(pipeline), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := translateFile(t, file, "test", goldenOptions(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	validate(t, r)
	type inputs struct{ Mode, Names string }
	got := map[string]inputs{}
	for _, pt := range r.Pipeline.Spec.Tasks {
		spec := specOf(t, pt)
		if spec.Mode != runspec.ModePut {
			continue
		}
		in := inputs{Mode: spec.Put.Inputs}
		for _, n := range spec.Put.InputNames {
			in.Names += n
		}
		got[spec.Name] = in
	}
	want := map[string]inputs{
		"omitted": {Mode: runspec.InputsDetect},
		"all":     {Mode: runspec.InputsAll},
		"detect":  {Mode: runspec.InputsDetect},
		"listed":  {Mode: runspec.InputsList, Names: "built"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("put inputs (-want +got):\n%s", diff)
	}
}
