package translate

import (
	"encoding/json"
	"slices"
	"testing"
)

// TestStringsWith scans JSON for the strings that hold "((": values and keys, escaped
// or not, at any depth, and nothing else; it agrees with decoding the document.
func TestStringsWith(t *testing.T) {
	docs := []any{
		map[string]any{"a": "((x))", "((k))": 1, "b": []any{"no", "y ((z)) \"q\"\n", map[string]any{"c": "((w))<&>"}}, "n": 12.5, "t": true, "nil": nil},
		"((top))",
		[]any{`\((a))`, `a\"((b))`, "(( unclosed", "((é))"},
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
