package concourse

import (
	"slices"
	"testing"
)

// TestJobGlob: a pattern without glob syntax matches its name alone, as its regexp would,
// and the glob syntax keeps working.
func TestJobGlob(t *testing.T) {
	names := []string{"unit", "unit-2", "a.b", "axb", "a,b", "a", "b", "x]", "[ab]x", "ax", ""}
	for _, tc := range []struct {
		pattern string
		want    []string
	}{
		{"unit", []string{"unit"}},
		{"a.b", []string{"a.b"}},
		{"a,b", []string{"a,b"}},
		{"x]", []string{"x]"}},
		{"", []string{""}},
		{"unit*", []string{"unit", "unit-2"}},
		{"{a,b}", []string{"a", "b"}},
		{"[ab]x", []string{"ax"}},
		{`\[ab]x`, []string{"[ab]x"}},
		{"a?b", []string{"a.b", "axb", "a,b"}},
	} {
		g, err := compileGlob(tc.pattern)
		if err != nil {
			t.Fatalf("%q: %v", tc.pattern, err)
		}
		re, err := globRegexp(tc.pattern)
		if err != nil {
			t.Fatalf("%q: %v", tc.pattern, err)
		}
		var got []string
		for _, n := range names {
			if g.MatchString(n) != re.MatchString(n) {
				t.Errorf("%q on %q: the matcher says %v, the regexp %v", tc.pattern, n, g.MatchString(n), re.MatchString(n))
			}
			if g.MatchString(n) {
				got = append(got, n)
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%q matches %q, want %q", tc.pattern, got, tc.want)
		}
	}
	for _, bad := range []string{"{a", "a}", "[ab"} {
		if _, err := compileGlob(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
