package translate

import "testing"

// FuzzDNSWord: dnsWord gives back the strings it would make again as they are, and makes
// the others as before.
func FuzzDNSWord(f *testing.F) {
	for _, s := range []string{"", "a", "unit", "unit-2", "a--b", "-a", "a-", "Unit", "a_b", "é", "x y", "-", "1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := makeDNSWord(s)
		if got := dnsWord(s); got != want {
			t.Errorf("dnsWord(%q) = %q, want %q", s, got, want)
		}
		if isDNSWord(s) != (want == s) {
			t.Errorf("isDNSWord(%q) = %t, and dnsWord makes %q", s, isDNSWord(s), want)
		}
	})
}
