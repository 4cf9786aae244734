package runner

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/runner/eval"
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// FuzzSpec feeds the runner's decoders what a translator, a task file or a resource script
// could hand it: nothing may panic or hang, and a spec that decodes encodes back to itself.
func FuzzSpec(f *testing.F) {
	seeds := []string{
		`{"mode":"task","plan_id":"1","build":{},"paths":{},"task":{"config":{"platform":"linux","run":{"path":"sh"}}}}`,
		`{"mode":"get","plan_id":"5/image-get","build":{"id":1},"paths":{},"get":{"type":"git","source":{"n":1e400},"version_from":"4"},"context":[{"kind":"timeout","id":"9","duration":"1m"}]}`,
		`{"mode":"join","plan_id":"j","build":{},"paths":{},"join":{"tree":{"id":"e","kind":"ensure","step":{"id":"1","kind":"leaf"},"hook":{"id":"2","kind":"leaf"}}}}`,
		`{"mode":"verdict","plan_id":"v","build":{},"paths":{},"verdict":{"tree":{"id":"p","kind":"in_parallel","fail_fast":true,"steps":[{"id":"1","kind":"leaf"},{"id":"r","kind":"retry","steps":[{"id":"2","kind":"leaf"}]}]}}}`,
		`{"mode":"put","plan_id":"1","build":{},"paths":{},"put":{"type":"x","inputs":"list","input_names":["a"]},"context":[{"kind":"fail_fast","id":"g","child":{"id":"1","kind":"try","step":{"id":"1","kind":"leaf"}}}]}`,
		`platform: linux
run: {path: ((p)), args: [1, true]}
inputs: [{name: a, path: ../x}]
params: {A: {b: 1}}`,
		`{"version":{"ref":"abc"},"metadata":[{"name":"a","value":"b"}]}`,
		`[{"v":"1"}]`,
		`{"version":null}`,
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		if err := fuzzOne(data); err != nil {
			t.Fatal(err)
		}
	})
}

// fuzzOne runs every decoder on data; the error is for a spec that does not round-trip.
func fuzzOne(data string) error {
	if spec, err := runspec.Decode(data); err == nil {
		enc, err := spec.Encode()
		if err != nil {
			return fmt.Errorf("a decoded spec does not encode: %w", err)
		}
		again, err := runspec.Decode(enc)
		if err != nil {
			return fmt.Errorf("an encoded spec does not decode: %w\n%s", err, enc)
		}
		if diff := cmp.Diff(spec, again); diff != "" {
			return fmt.Errorf("round trip (-first +second):\n%s", diff)
		}
		for _, tree := range []*runspec.Node{treeOf(spec.Join), treeOfVerdict(spec.Verdict)} {
			if tree != nil {
				eval.Final(*tree, eval.Facts{})
				eval.Partial(*tree, eval.Facts{})
			}
		}
	}
	if cfg, err := concourse.ParseTaskConfig([]byte(data)); err == nil {
		_, _ = imageReference(cfg, &runspec.Resolve{})
	}
	_, _ = parseVersionResult([]byte(data), "/opt/resource/in", []string{"/tmp/build/get"})
	for _, format := range []string{"", formatJSON, formatYAML, formatTrim, formatRaw, "xml"} {
		_, _ = parseVar("f.json", format, []byte(data))
	}
	_ = concourse.DetectPutInputs(map[string]any{"p": data})
	return nil
}

func treeOf(j *runspec.Join) *runspec.Node {
	if j == nil {
		return nil
	}
	return &j.Tree
}

func treeOfVerdict(v *runspec.Verdict) *runspec.Node {
	if v == nil {
		return nil
	}
	return &v.Tree
}
