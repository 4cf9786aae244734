// Package testcorpus finds the shared corpus of real pipelines for tests.
package testcorpus

import (
	"os"
	"path/filepath"
	"testing"
)

// Dir returns ../shared/corpus beside the project's root (or $CONCOURSE_TEKTON_CORPUS), and
// skips the test, saying so, when it is absent.
func Dir(t testing.TB) string {
	t.Helper()
	if dir := os.Getenv("CONCOURSE_TEKTON_CORPUS"); dir != "" {
		return dir
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			corpus := filepath.Join(dir, "..", "shared", "corpus")
			if _, err := os.Stat(corpus); err != nil {
				t.Skipf("the pipeline corpus is absent: expected it at %s (beside the project's root), or set CONCOURSE_TEKTON_CORPUS", corpus)
			}
			return corpus
		}
		if filepath.Dir(dir) == dir {
			t.Fatalf("no go.mod above %s", wd)
		}
	}
}
