package concourse

import (
	"regexp"
	"testing"
)

// identifierRegexp is Concourse's own rule (atc/configvalidate), the oracle of isIdentifier.
var identifierRegexp = regexp.MustCompile(`^[\p{Ll}\p{Lt}\p{Lm}\p{Lo}\d][\p{Ll}\p{Lt}\p{Lm}\p{Lo}\d\-_.]*$`)

func TestIsIdentifier(t *testing.T) {
	for _, name := range []string{
		"", "a", "0", "unit", "my-job_1.2", "-a", "_a", ".a", "a-", "A", "aB", "ünit", "日本",
		"ǅx", "ʰx", "a b", "a/b", "a\n", "\xff", "a\xff", "١٢", "42", "a((b))",
	} {
		if got, want := isIdentifier(name), identifierRegexp.MatchString(name); got != want {
			t.Errorf("isIdentifier(%q) = %v, want %v", name, got, want)
		}
	}
}

func FuzzIsIdentifier(f *testing.F) {
	for _, s := range []string{"unit", "-a", "ünit", "a\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if got, want := isIdentifier(name), identifierRegexp.MatchString(name); got != want {
			t.Errorf("isIdentifier(%q) = %v, want %v", name, got, want)
		}
	})
}
