package translate

import (
	"regexp"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestObjectNamesAreReadable(t *testing.T) {
	tests := []struct {
		pipeline, job, build string
		want                 string
	}{
		{"booklit", "unit", "1", "booklit-unit-1"},
		{"app", "unit", "7", "app-unit-7"},
		{"app2", "test3", "12", "app2-test3-12"},
		{"app", "build-image", "7", "app-build-image-7"},
	}
	for _, tt := range tests {
		if got := RunName(tt.pipeline, tt.job, tt.build); got != tt.want {
			t.Errorf("RunName(%q, %q, %q) = %q, want %q", tt.pipeline, tt.job, tt.build, got, tt.want)
		}
	}
	if got := PipelineName("my-app", "unit.test"); !regexp.MustCompile(`^my-app-unit-test-[0-9a-f]{10}$`).MatchString(got) {
		t.Errorf("PipelineName(my-app, unit.test) = %q, want the sanitised names and a hash", got)
	}
}

// Distinct Concourse names never share a Pipeline or a PipelineRun, and every name is a
// DNS-1123 label that starts with a letter.
func TestObjectNamesNeverCollide(t *testing.T) {
	type build struct{ pipeline, job, build string }
	long := "long-pipeline-name-that-goes-on-and-on-and-on-and-on-and-on-and-on"
	builds := []build{
		{"app", "unit.test", "1"}, {"app", "unit-test", "1"}, {"app", "Unit_Test", "1"}, {"app", "unit test", "1"},
		{"app", "unittest", "1"}, {"app", "unit", "test-1"}, {"app-unit", "test", "1"},
		{"a-b", "c", "1"}, {"a", "b-c", "1"}, {"a", "b", "c-1"}, {"a", "b", "c"}, {"a-b-c", "x", "1"},
		{"A", "b", "c"}, {"a", "b", "C"}, {"1a", "b", "c"}, {"x1a", "b", "c"},
		{"p", "j", "1"}, {"p", "j", "1-x"}, {"p", "j-1", "x"},
		{long, "job", "1"}, {long, "job", "2"}, {long + "x", "job", "1"},
		{"", "", ""}, {"-", "-", "-"}, {"日本", "ジョブ", "1"}, {"日本語", "ジョブ", "1"},
	}
	start := regexp.MustCompile(`^[a-z]`)
	runs := map[string]build{}
	pipelines := map[string][2]string{}
	for _, b := range builds {
		run := RunName(b.pipeline, b.job, b.build)
		if prev, ok := runs[run]; ok && prev != b {
			t.Errorf("%+v and %+v share the PipelineRun name %q", prev, b, run)
		}
		runs[run] = b
		pipe := PipelineName(b.pipeline, b.job)
		key := [2]string{b.pipeline, b.job}
		if prev, ok := pipelines[pipe]; ok && prev != key {
			t.Errorf("%q and %q share the Pipeline name %q", prev, key, pipe)
		}
		pipelines[pipe] = key
		for _, name := range []string{run, pipe} {
			if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
				t.Errorf("%+v: %q is no DNS-1123 label: %v", b, name, errs)
			}
			if !start.MatchString(name) {
				t.Errorf("%+v: %q does not start with a letter", b, name)
			}
		}
	}
}

// Two teams' pipelines of one name, and two instances of a pipeline, never share a
// Pipeline or a PipelineRun; team main's pipeline that is not instanced keeps its plain
// names.
func TestScopesKeepTeamsAndInstancesApart(t *testing.T) {
	type scope struct {
		team, pipeline string
		vars           map[string]any
	}
	scopes := []scope{
		{"main", "app", nil}, {"", "app", nil}, {"ops", "app", nil}, {"main", "app", map[string]any{"branch": "main"}},
		{"main", "app", map[string]any{"branch": "dev"}}, {"ops", "app", map[string]any{"branch": "main"}},
		{"main", "app", map[string]any{"branch": "main", "v": 1}}, {"ops/app", "x", nil}, {"ops", "app/x", nil},
	}
	if got := RunName(Scope("main", "app", nil), "unit", "1"); got != "app-unit-1" {
		t.Errorf("team main's app/unit #1 is %q, want app-unit-1", got)
	}
	if got := RunName(Scope("", "app", nil), "unit", "1"); got != "app-unit-1" {
		t.Errorf("no team's app/unit #1 is %q, want app-unit-1", got)
	}
	runs := map[string]scope{}
	for _, s := range scopes[1:] {
		run := RunName(Scope(s.team, s.pipeline, s.vars), "unit", "1")
		if errs := validation.IsDNS1123Label(run); len(errs) > 0 {
			t.Errorf("%+v: %q is no DNS-1123 label: %v", s, run, errs)
		}
		if prev, ok := runs[run]; ok {
			t.Errorf("%+v and %+v share the PipelineRun name %q", prev, s, run)
		}
		runs[run] = s
	}
	if a, b := Scope("main", "app", map[string]any{"a": 1, "b": 2}), Scope("main", "app", map[string]any{"b": 2, "a": 1}); a != b {
		t.Errorf("one instance, two scopes: %q, %q", a, b)
	}
}
