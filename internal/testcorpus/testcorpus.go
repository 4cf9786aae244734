// Package testcorpus finds the shared corpus of real pipelines for tests.
package testcorpus

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
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
			// A module nested in the project's (atc/) has the project's root above it.
			for hasGoMod(filepath.Dir(dir)) {
				dir = filepath.Dir(dir)
			}
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

func hasGoMod(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "go.mod"))
	return err == nil
}

// Pipelines returns the corpus's pipeline files (.yml and .yaml), sorted.
func Pipelines(t testing.TB) []string {
	t.Helper()
	return files(t, "pipelines")
}

// Tasks returns the corpus's task files (.yml and .yaml), sorted.
func Tasks(t testing.TB) []string {
	t.Helper()
	return files(t, "tasks")
}

// VarsFiles returns the corpus's vars files (.yml and .yaml), sorted.
func VarsFiles(t testing.TB) []string {
	t.Helper()
	return files(t, "vars")
}

// files lists a corpus folder's YAML files, sorted.
func files(t testing.TB, folder string) []string {
	t.Helper()
	dir := filepath.Join(Dir(t), folder)
	var out []string
	for _, ext := range []string{"*.yml", "*.yaml"} {
		m, err := filepath.Glob(filepath.Join(dir, ext))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m...)
	}
	if len(out) == 0 {
		t.Fatalf("no YAML files in %s", dir)
	}
	sort.Strings(out)
	return out
}

// Report prints a line of a corpus test's summary, and appends it to the file
// $CONCOURSE_TEKTON_CORPUS_REPORT when that is set (make test prints the file, so that
// the summaries show without a second, verbose run of the tests).
func Report(t testing.TB, format string, args ...any) {
	t.Helper()
	line := fmt.Sprintf(format, args...)
	fmt.Print(line)
	path := os.Getenv("CONCOURSE_TEKTON_CORPUS_REPORT")
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(line); err != nil {
		f.Close()
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
