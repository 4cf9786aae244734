package tektonrun

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

func TestCheckResults(t *testing.T) {
	tests := []struct {
		name              string
		versions, version string
		want              []concourse.Version
	}{
		{"every version, in order", `[{"v":"1"},{"v":"2"}]`, `{"v":"2"}`, []concourse.Version{{"v": "1"}, {"v": "2"}}},
		{"none found", `[]`, `null`, nil},
		{"a runner that wrote only the version", ``, `{"v":"2"}`, []concourse.Version{{"v": "2"}}},
		{"an unreadable list", `[{"v":`, `{"v":"2"}`, []concourse.Version{{"v": "2"}}},
		{"a null in the list", `[null]`, `{"v":"2"}`, []concourse.Version{{"v": "2"}}},
		{"nothing", ``, ``, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, checkResults(tt.versions, tt.version)); diff != "" {
				t.Errorf("checkResults (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCheckedVersions reads the versions of the check that is the build's plan: not
// those of its type's check, nor the version of its type image's get.
func TestCheckedVersions(t *testing.T) {
	c := newMemCluster("ci")
	taskRun := func(name string, mode runspec.Mode, results map[string]string) *v1.TaskRun {
		s := runspec.Spec{Mode: mode, PlanID: "1", Name: "thing"}
		switch mode {
		case runspec.ModeCheck:
			s.Check = &runspec.Check{Type: "git"}
			if strings.Contains(name, "type") {
				s.PlanID, s.Check.Type = "2/image-check", "mock"
			}
		case runspec.ModeGet:
			s.PlanID, s.Get = "1/image-get", &runspec.Get{Type: "mock"}
		case runspec.ModeVerdict:
			s.Verdict = &runspec.Verdict{Tree: runspec.Node{ID: "1", Kind: runspec.KindLeaf}}
		}
		spec, err := s.Encode()
		if err != nil {
			t.Fatal(err)
		}
		tr := &v1.TaskRun{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ci", Labels: map[string]string{labelPipelineRun: "check-1"}},
			Spec:       v1.TaskRunSpec{Params: v1.Params{{Name: runspec.ParamSpec, Value: *v1.NewStructuredValues(spec)}}},
		}
		for k, v := range results {
			tr.Status.Results = append(tr.Status.Results, v1.TaskRunResult{Name: k, Type: v1.ResultsTypeString, Value: *v1.NewStructuredValues(v)})
		}
		return tr
	}
	for _, tr := range []*v1.TaskRun{
		taskRun("check-1-verdict", runspec.ModeVerdict, map[string]string{runspec.ResultOutcome: "succeeded"}),
		// The type's check, whose name sorts first, and its image's get.
		taskRun("check-1-check-a-type", runspec.ModeCheck, map[string]string{
			runspec.ResultOutcome:  "succeeded",
			runspec.ResultVersion:  `{"v":"type"}`,
			runspec.ResultVersions: `[{"v":"type"}]`,
		}),
		taskRun("check-1-get-type", runspec.ModeGet, map[string]string{runspec.ResultOutcome: "succeeded", runspec.ResultVersion: `{"v":"type"}`}),
		taskRun("check-1-thing", runspec.ModeCheck, map[string]string{
			runspec.ResultOutcome:  "succeeded",
			runspec.ResultVersion:  `{"ref":"c"}`,
			runspec.ResultVersions: `[{"ref":"a"},{"ref":"b"},{"ref":"c"}]`,
		}),
	} {
		if err := c.put(tr); err != nil {
			t.Fatal(err)
		}
	}
	got, err := c.client().checkedVersions(context.Background(), "check-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []concourse.Version{{"ref": "a"}, {"ref": "b"}, {"ref": "c"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("checkedVersions (-want +got):\n%s", diff)
	}
	// With the frames the build's steps wrote: the check's, not its type's.
	got, err = c.client().checkedVersions(context.Background(), "check-1", map[concourse.PlanID]runspec.CheckedVersions{
		"1":             {{"ref": "0"}, {"ref": "a"}, {"ref": "b"}, {"ref": "c"}},
		"2/image-check": {{"v": "older"}, {"v": "type"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want = append([]concourse.Version{{"ref": "0"}}, want...)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("checkedVersions with frames (-want +got):\n%s", diff)
	}
}

// TestCheckedVersionsFused: a check build whose check recorded the verdict itself has no
// verdict TaskRun; the versions are those of the check its verdict spec names.
func TestCheckedVersionsFused(t *testing.T) {
	c := newMemCluster("ci")
	check := runspec.Spec{Mode: runspec.ModeCheck, PlanID: "1", Name: "thing", Check: &runspec.Check{Type: "git"}}
	verdict := runspec.Spec{Mode: runspec.ModeVerdict, PlanID: "1", Name: runspec.VerdictTask,
		Verdict: &runspec.Verdict{Tree: runspec.Node{ID: "1", Kind: runspec.KindLeaf}, Fused: true}}
	checkJSON, err := check.Encode()
	if err != nil {
		t.Fatal(err)
	}
	verdictJSON, err := verdict.Encode()
	if err != nil {
		t.Fatal(err)
	}
	tr := &v1.TaskRun{
		ObjectMeta: metav1.ObjectMeta{Name: "check-1-check-thing", Namespace: "ci",
			Labels: map[string]string{labelPipelineRun: "check-1", runspec.LabelVerdict: runspec.VerdictFused}},
		Spec: v1.TaskRunSpec{Params: v1.Params{
			{Name: runspec.ParamSpec, Value: *v1.NewStructuredValues(checkJSON)},
			{Name: runspec.ParamVerdictSpec, Value: *v1.NewStructuredValues(verdictJSON)},
		}},
	}
	for k, v := range map[string]string{runspec.ResultOutcome: "succeeded", runspec.ResultVerdict: "succeeded", runspec.ResultVersion: `{"ref":"b"}`, runspec.ResultVersions: `[{"ref":"a"},{"ref":"b"}]`} {
		tr.Status.Results = append(tr.Status.Results, v1.TaskRunResult{Name: k, Type: v1.ResultsTypeString, Value: *v1.NewStructuredValues(v)})
	}
	if err := c.put(tr); err != nil {
		t.Fatal(err)
	}
	got, err := c.client().checkedVersions(context.Background(), "check-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]concourse.Version{{"ref": "a"}, {"ref": "b"}}, got); diff != "" {
		t.Errorf("checkedVersions (-want +got):\n%s", diff)
	}
}
