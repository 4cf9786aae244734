// Package golden compares test output with golden files, and rewrites them on -update.
package golden

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Check compares got with the golden file at path; when update is set it rewrites the file
// instead. It reports a missing file with how to create it.
func Check(t testing.TB, path string, got []byte, update bool) {
	t.Helper()
	if update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("output differs from %s (-want +got):\n%s", path, diff)
	}
}
