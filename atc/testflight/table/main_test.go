package main

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// report is a ginkgo JSON report of a run focused on fail_test.go: the suite's nodes, its
// spec, and another file's spec, not focused.
const report = `[{"RunTime": 15000000000, "SpecReports": [
 {"LeafNodeType": "SynchronizedBeforeSuite", "State": "passed", "LeafNodeLocation": {"FileName": "github.com/concourse/concourse/testflight/suite_test.go"}},
 {"LeafNodeType": "It", "State": "skipped", "LeafNodeText": "other", "LeafNodeLocation": {"FileName": "github.com/concourse/concourse/testflight/do_test.go"}},
 {"LeafNodeType": "It", "State": "passed", "RunTime": 12000000000, "ContainerHierarchyTexts": ["A job"], "LeafNodeText": "fails", "LeafNodeLocation": {"FileName": "github.com/concourse/concourse/testflight/fail_test.go"}},
 {"LeafNodeType": "It", "State": "failed", "RunTime": 3000000000, "ContainerHierarchyTexts": ["A job"], "LeafNodeText": "aborts", "LeafNodeLocation": {"FileName": "github.com/concourse/concourse/testflight/fail_test.go"}, "Failure": {"Message": "Expected\n  <int>: 2\nto equal 3"}},
 {"LeafNodeType": "It", "State": "skipped", "RunTime": 0, "LeafNodeText": "swap", "LeafNodeLocation": {"FileName": "github.com/concourse/concourse/testflight/fail_test.go"}, "Failure": {"Message": "swap limits not enabled"}}
]}]`

func TestMarkdown(t *testing.T) {
	reports, err := ParseReports([]byte(report))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		reasons map[string]string
		files   []string
		want    string
	}{{
		name: "undiagnosed",
		want: "| file | passed | time |\n|---|---|---|\n" +
			"| fail_test.go | 1/3 | 15s |\n" +
			"| **1 files run** | **1/3** | 15s |\n" +
			"\nWhy not:\n\n" +
			"- fail_test.go (1/3): undiagnosed: \"A job aborts\" failed: Expected\n",
	}, {
		name:    "with a reason, and files not run",
		reasons: map[string]string{"fail_test.go": "abort | not there", "zz_test.go": "needs intercept"},
		files:   []string{"zz_test.go", "fail_test.go", "do_test.go"},
		want: "| file | passed | time |\n|---|---|---|\n" +
			"| fail_test.go | 1/3 | 15s |\n" +
			"| **1 files run** | **1/3** | 15s |\n" +
			"\nNot run (2 files): do_test.go, zz_test.go.\n" +
			"\nWhy not:\n\n" +
			"- fail_test.go (1/3): abort | not there\n" +
			"- zz_test.go (not run): needs intercept\n",
	}, {
		name: "a long reason, wrapped",
		reasons: map[string]string{"fail_test.go": "the abort is not there yet: the spec waits for the build's " +
			"on_abort hook, which runs - once the pod has started - as Concourse runs it, and\nnot before"},
		want: "| file | passed | time |\n|---|---|---|\n" +
			"| fail_test.go | 1/3 | 15s |\n" +
			"| **1 files run** | **1/3** | 15s |\n" +
			"\nWhy not:\n\n" +
			"- fail_test.go (1/3): the abort is not there yet: the spec waits for the build's on_abort\n" +
			"  hook, which runs - once the pod has started - as Concourse runs it, and not before\n",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Markdown(Summarize(reports, tt.files), tt.reasons)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Markdown (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseReasons(t *testing.T) {
	got, err := ParseReasons([]byte("# comment\n\nfail_test.go: why: because\n"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"fail_test.go": "why: because"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := ParseReasons([]byte("no reason here\n")); err == nil {
		t.Error("a line without `FILE: ` parsed")
	}
}

func TestReplace(t *testing.T) {
	readme := "a\n" + beginMarker + "\nold\n" + endMarker + "\nb\n"
	got, err := Replace([]byte(readme), "new\n")
	if err != nil {
		t.Fatal(err)
	}
	want := "a\n" + beginMarker + "\nnew\n" + endMarker + "\nb\n"
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := Replace([]byte("no markers"), "x"); err == nil {
		t.Error("a README without markers was accepted")
	}
}

// A file run again: its specs count as the last run says.
func TestSummarizeRerun(t *testing.T) {
	first, err := ParseReports([]byte(report))
	if err != nil {
		t.Fatal(err)
	}
	rerun, err := ParseReports([]byte(`[{"SpecReports": [
 {"LeafNodeType": "It", "State": "passed", "RunTime": 5000000000, "ContainerHierarchyTexts": ["A job"], "LeafNodeText": "aborts", "LeafNodeLocation": {"FileName": "github.com/concourse/concourse/testflight/fail_test.go"}}
]}]`))
	if err != nil {
		t.Fatal(err)
	}
	got := Summarize(append(first, rerun...), nil)
	want := []File{{Name: "fail_test.go", Ran: true, Total: 3, Passed: 2, Skipped: 1, RunTime: 17 * time.Second}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Summarize (-want +got):\n%s", diff)
	}
}

// Two specs of a file with the same texts, at two lines, are two specs.
func TestSummarizeSameTexts(t *testing.T) {
	reports, err := ParseReports([]byte(`[{"SpecReports": [
 {"LeafNodeType": "It", "State": "passed", "RunTime": 1000000000, "ContainerHierarchyTexts": ["fly execute"], "LeafNodeText": "runs", "LeafNodeLocation": {"FileName": "github.com/concourse/concourse/testflight/task_vars_test.go", "LineNumber": 10}},
 {"LeafNodeType": "It", "State": "passed", "RunTime": 1000000000, "ContainerHierarchyTexts": ["fly execute"], "LeafNodeText": "runs", "LeafNodeLocation": {"FileName": "github.com/concourse/concourse/testflight/task_vars_test.go", "LineNumber": 20}}
]}]`))
	if err != nil {
		t.Fatal(err)
	}
	got := Summarize(reports, nil)
	want := []File{{Name: "task_vars_test.go", Ran: true, Total: 2, Passed: 2, RunTime: 2 * time.Second}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Summarize (-want +got):\n%s", diff)
	}
}

// A dry run's report gives each file's number of specs: those not reached count as not
// passed, and files without a run show as not run.
func TestDeclared(t *testing.T) {
	dry, err := ParseReports([]byte(`[{"SuiteConfig": {"DryRun": true}, "SpecReports": [
 {"LeafNodeType": "It", "State": "passed", "LeafNodeLocation": {"FileName": "github.com/concourse/concourse/testflight/fail_test.go"}},
 {"LeafNodeType": "It", "State": "passed", "LeafNodeLocation": {"FileName": "github.com/concourse/concourse/testflight/fail_test.go"}},
 {"LeafNodeType": "It", "State": "passed", "LeafNodeLocation": {"FileName": "github.com/concourse/concourse/testflight/fail_test.go"}},
 {"LeafNodeType": "It", "State": "passed", "LeafNodeLocation": {"FileName": "github.com/concourse/concourse/testflight/fail_test.go"}},
 {"LeafNodeType": "It", "State": "passed", "LeafNodeLocation": {"FileName": "github.com/concourse/concourse/testflight/do_test.go"}}
]}]`))
	if err != nil {
		t.Fatal(err)
	}
	run, err := ParseReports([]byte(report))
	if err != nil {
		t.Fatal(err)
	}
	got := Markdown(Summarize(append(dry, run...), nil), nil)
	want := "| file | passed | time |\n|---|---|---|\n" +
		"| fail_test.go | 1/4 | 15s |\n" +
		"| **1 files run** | **1/4** | 15s |\n" +
		"\nNot run (1 files, 1 specs): do_test.go (1).\n" +
		"\nWhy not:\n\n" +
		"- fail_test.go (1/4): undiagnosed: \"A job aborts\" failed: Expected\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Markdown (-want +got):\n%s", diff)
	}
}

// A word that would open a list or a heading at the start of a line is not put there.
func TestWrap(t *testing.T) {
	long := strings.Repeat("x", 89)
	tests := []struct{ name, in, want string }{
		{"short", "a b c", "- a b c"},
		{"broken", long + " yy", "- " + long + "\n  yy"},
		{"a dash kept on its line", long + " - yy", "- " + long + " -\n  yy"},
		{"a number kept on its line", long + " 2. yy", "- " + long + " 2.\n  yy"},
		{"a heading kept on its line", long + " #x yy", "- " + long + " #x\n  yy"},
		{"a long word whole", strings.Repeat("z", 100), "- " + strings.Repeat("z", 100)},
	}
	if got, want := wrapWords([]string{long, "a (1)"}, "- ", "  "), "- "+long+"\n  a (1)"; got != want {
		t.Errorf("a word with a space: got %q, want %q", got, want)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, wrapWords(strings.Fields(tt.in), "- ", "  ")); diff != "" {
				t.Errorf("wrapWords (-want +got):\n%s", diff)
			}
		})
	}
}
