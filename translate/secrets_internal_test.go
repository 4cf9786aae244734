package translate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/planner"
	"github.com/concourse-tekton/concourse-tekton/concourse/vars"
	"github.com/concourse-tekton/concourse-tekton/internal/testcorpus"
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// TestStringsWith scans JSON for the strings that hold "((": values and keys, escaped
// or not, at any depth, and nothing else; it agrees with decoding the document.
func TestStringsWith(t *testing.T) {
	docs := []any{
		map[string]any{"a": "((x))", "((k))": 1, "b": []any{"no", "y ((z)) \"q\"\n", map[string]any{"c": "((w))<&>"}}, "n": 12.5, "t": true, "nil": nil},
		"((top))",
		[]any{`\((a))`, `a\"((b))`, "(( unclosed", "((é))"},
		[]any{`((a))\`, `\\`, `\`, `\"((b))\\`, `"`, `((c))"`, ""},
		map[string]any{},
	}
	for _, doc := range docs {
		buf, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		stringsWith(buf, "((", func(s string) { got = append(got, s) })
		var decoded any
		if err := json.Unmarshal(buf, &decoded); err != nil {
			t.Fatal(err)
		}
		var want []string
		walkStrings(decoded, func(s string) {
			if len(s) > 1 && containsParens(s) {
				want = append(want, s)
			}
		})
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: strings %q, want %q", buf, got, want)
		}
	}
	// Not JSON: an unterminated string ends the scan.
	stringsWith([]byte(`{"a":"((x`), "((", func(s string) { t.Errorf("called with %q", s) })
}

func containsParens(s string) bool {
	for i := 0; i+1 < len(s); i++ {
		if s[i] == '(' && s[i+1] == '(' {
			return true
		}
	}
	return false
}

// TestRefsInCorpus: over every step of every corpus job, refsIn finds the references the
// strings of the spec's decoded JSON hold, with and without the build's memo.
func TestRefsInCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("the corpus sweep")
	}
	var steps, withRefs int
	for _, file := range testcorpus.Pipelines(t) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		p, diags := concourse.ParsePipeline(filepath.Base(file), data, nil)
		if p == nil || len(diags.Errors()) > 0 {
			continue
		}
		for i := range p.Config.Jobs {
			plan, err := planner.Plan(&p.Config, &p.Config.Jobs[i], planner.Options{})
			if err != nil {
				continue
			}
			r, err := Translate(plan, Options{Pipeline: "corpus", Job: p.Config.Jobs[i].Name})
			if err != nil {
				continue
			}
			memo := &processMemo[string, []vars.Reference]{max: 8192}
			for _, pt := range slices.Concat(r.Pipeline.Spec.Tasks, r.Pipeline.Spec.Finally) {
				for _, param := range pt.Params {
					if param.Name != runspec.ParamSpec {
						continue
					}
					steps++
					encoded := param.Value.StringVal
					var decoded any
					if err := json.Unmarshal([]byte(encoded), &decoded); err != nil {
						t.Fatalf("%s: %s: %v", filepath.Base(file), pt.Name, err)
					}
					var want []string
					walkStrings(decoded, func(s string) {
						for _, n := range vars.Names(s) {
							if ref, err := vars.ParseReference(n); err == nil && ref.Source != "." {
								want = append(want, ref.String())
							}
						}
					})
					got, gotMemo := refStrings(refsIn([]byte(encoded), nil)), refStrings(refsIn([]byte(encoded), memo))
					slices.Sort(want)
					if !slices.Equal(got, want) || !slices.Equal(gotMemo, want) {
						t.Errorf("%s: %s: references %q (with the memo %q), want %q", filepath.Base(file), pt.Name, got, gotMemo, want)
					}
					if len(want) > 0 {
						withRefs++
					}
				}
			}
		}
	}
	if steps < 1000 || withRefs < 500 {
		t.Errorf("%d steps, %d with references: the corpus was not swept", steps, withRefs)
	}
	t.Logf("%d steps, %d with references", steps, withRefs)
}

func refStrings(refs []vars.Reference) []string {
	var out []string
	for _, r := range refs {
		out = append(out, r.String())
	}
	slices.Sort(out)
	return out
}
