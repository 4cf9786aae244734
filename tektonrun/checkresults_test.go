package tektonrun

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/pkg/apis"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/event"
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

// TestEveryVersion: a check's frame gives its versions when its results agree with it
// (they are its newest), else the results do.
func TestEveryVersion(t *testing.T) {
	results := []concourse.Version{{"ref": "b"}, {"ref": "c"}}
	frame := runspec.CheckedVersions{{"ref": "a"}, {"ref": "b"}, {"ref": "c"}}
	all := []concourse.Version{{"ref": "a"}, {"ref": "b"}, {"ref": "c"}}
	for _, tt := range []struct {
		name    string
		results []concourse.Version
		frame   runspec.CheckedVersions
		want    []concourse.Version
	}{
		{"no frame", results, nil, results},
		{"a frame", results, frame, all},
		{"a frame of no more versions", all, frame, all},
		{"a frame whose newest are not the results'", []concourse.Version{{"ref": "c"}, {"ref": "b"}}, frame, []concourse.Version{{"ref": "c"}, {"ref": "b"}}},
		{"no results", nil, frame, nil},
	} {
		if diff := cmp.Diff(tt.want, everyVersion(tt.results, tt.frame)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
}

// TestVersionsFrameMapped: the frame that is the last line of a check that succeeded is
// its versions, for Wait alone (Events and Follow do not deliver it), and no log line;
// before the check ended nothing after its earlier lines is shown; anywhere else, or in a
// check that did not succeed, it is a log line like any other.
func TestVersionsFrameMapped(t *testing.T) {
	frame, err := runspec.CheckedVersions{{"ref": "a"}, {"ref": "b"}}.Frame()
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 27, 4, 0, 0, 0, time.UTC)
	lines := []LogLine{{Time: at, Text: "checking\n"}, {Time: at, Text: string(frame)}}
	failed := recorded(t, "testdata/failed-with-ensure").Steps["check-thing"].TaskRun.DeepCopy()
	for i, r := range failed.Status.Results {
		if r.Name == runspec.ResultOutcome {
			failed.Status.Results[i].Value = *v1.NewStructuredValues(string(runspec.Failed))
		}
	}
	running := failed.DeepCopy()
	running.Status.SetCondition(&apis.Condition{Type: apis.ConditionSucceeded, Status: corev1.ConditionUnknown})
	for _, tt := range []struct {
		name     string
		tr       *v1.TaskRun
		log      []LogLine
		logDone  bool
		wantLogs []string
		wantSeen bool
	}{
		{"the last line of a check that succeeded", nil, lines, true, []string{"checking\n"}, true},
		{"its log not read to its end", nil, lines, false, []string{"checking\n"}, false},
		{"the check running", running, lines, true, []string{"checking\n"}, false},
		{"not the last line", nil, []LogLine{lines[1], lines[0]}, true, []string{string(frame), "checking\n"}, false},
		{"a check that failed", failed, lines, true, []string{"checking\n", string(frame)}, false},
	} {
		obs := recorded(t, "testdata/failed-with-ensure")
		so := obs.Steps["check-thing"]
		if tt.tr != nil {
			so.TaskRun = tt.tr
		}
		so.Log, so.LogDone = tt.log, tt.logDone
		events, _ := Map(obs, nil)
		var logs []string
		seen := false
		var shown []Event
		deliver := withoutInternal(func(e Event) error {
			shown = append(shown, e)
			return nil
		})
		for _, e := range events {
			if e.Key.Step != "check-thing" {
				continue
			}
			switch ev := e.Event.(type) {
			case event.Log:
				logs = append(logs, ev.Payload)
			case versionsFound:
				seen = true
				if diff := cmp.Diff(runspec.CheckedVersions{{"ref": "a"}, {"ref": "b"}}, ev.Versions); diff != "" || ev.Origin.ID != "1/check" {
					t.Errorf("%s: versions of %s (-want +got):\n%s", tt.name, ev.Origin.ID, diff)
				}
			}
			deliver(e)
		}
		if !slices.Equal(logs, tt.wantLogs) || seen != tt.wantSeen {
			t.Errorf("%s: logs %q and the versions %v, want %q and %v", tt.name, logs, seen, tt.wantLogs, tt.wantSeen)
		}
		if slices.ContainsFunc(shown, func(e Event) bool { _, ok := e.Event.(versionsFound); return ok }) {
			t.Errorf("%s: the versions were delivered", tt.name)
		}
	}
}
