package vars

import (
	"regexp"
	"slices"
	"testing"
)

// interpolationRegex is what Names scans for.
var interpolationRegex = regexp.MustCompile(interpolationPattern)

// FuzzNames: the hand-written scanner finds what interpolationPattern finds, every
// reference, in order, as written.
func FuzzNames(f *testing.F) {
	for _, s := range []string{"", "((a))", "x((a))y((b:c))", "(((a)))", "((a)", "((a b))", "((é))", "((a))((b))", "((\xff))", "((a.b/c@\"d\"))", "(( a ))", "((a))((", "((src:a:b))"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var want []string
		for _, m := range interpolationRegex.FindAllStringSubmatch(s, -1) {
			want = append(want, m[1])
		}
		if got := Names(s); !slices.Equal(got, want) {
			t.Errorf("Names(%q) = %q; the regexp finds %q", s, got, want)
		}
	})
}
