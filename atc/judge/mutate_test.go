package judge

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	yamlv3 "go.yaml.in/yaml/v3"
)

const mutated = `resources:
- name: repo
  type: git
  source: {uri: u, branch: main}
jobs:
- name: unit
  plan:
  - get: repo
    trigger: true
  - task: test
    file: repo/ci/test.yml
    params: {A: b}
`

// TestMutate: the mutations of a file are the same each time, every kind among them,
// each a text of its own.
func TestMutate(t *testing.T) {
	first := Mutate("p.yml", []byte(mutated), 40)
	if diff := cmp.Diff(first, Mutate("p.yml", []byte(mutated), 40)); diff != "" {
		t.Errorf("a second run differs (-first +second):\n%s", diff)
	}
	seen := map[string]bool{}
	texts := map[string]bool{mutated: true}
	for _, m := range first {
		seen[m.Kind] = true
		if texts[string(m.Data)] {
			t.Errorf("%s: a text seen before", m)
		}
		texts[string(m.Data)] = true
	}
	for _, k := range kinds {
		if !seen[k] {
			t.Errorf("no mutation of kind %s among %d", k, len(first))
		}
	}
	if other := Mutate("q.yml", []byte(mutated), 40); cmp.Equal(first, other) {
		t.Error("another name gives the same mutations: the places are not drawn from the name")
	}
}

func TestMutateKinds(t *testing.T) {
	doc := "a: {b: 1, c: {d: 2}}\nl: [{x: 1}, {y: 2}]\n"
	for _, tc := range []struct {
		kind string
		at   site
		want string
	}{
		{kindRemove, site{0, 0, 2}, "a: {b: 1}\nl: [{x: 1}, {y: 2}]\n"},
		{kindDuplicate, site{0, 2, 1}, "a: {b: 1, c: {d: 2}}\nl: [{x: 1}, {y: 2}, {y: 2}]\n"},
		{kindNest, site{0, 2, 1}, "a: {b: 1, c: {d: 2}}\nl: [{x: 1, on_success: {y: 2}}]\n"},
		{kindUp, site{0, 0, 2, 0}, "a: {b: 1, c: {}, d: 2}\nl: [{x: 1}, {y: 2}]\n"},
		{kindDown, site{0, 0, 0}, "a: {c: {d: 2, b: 1}}\nl: [{x: 1}, {y: 2}]\n"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			got := mutateAt(t, doc, tc.kind, tc.at)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// mutateAt applies one mutation at a site, with a generator that draws the first choice
// each time.
func mutateAt(t *testing.T, doc, kind string, at site) string {
	t.Helper()
	var n yamlv3.Node
	if err := yamlv3.Unmarshal([]byte(doc), &n); err != nil {
		t.Fatal(err)
	}
	if !apply(&n, kind, at, rand.New(zero{})) {
		t.Fatalf("%s at %v: not applied", kind, at)
	}
	var buf bytes.Buffer
	enc := yamlv3.NewEncoder(&buf)
	if err := enc.Encode(&n); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// zero is a source from which IntN(n) draws 0, for any n under 64 (math/rand/v2 takes the
// high bits of a 128-bit product, and draws again on a low product of 0).
type zero struct{}

func (zero) Uint64() uint64 { return 1 << 58 }
