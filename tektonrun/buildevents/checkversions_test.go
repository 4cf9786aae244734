package buildevents

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	"knative.dev/pkg/apis"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/event"
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

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
		if diff := cmp.Diff(tt.want, EveryVersion(tt.results, tt.frame)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
}

// TestVersionsFrameMapped: the frame that is the last line of a check that succeeded is
// its versions (VersionsFound), and no event; before the check ended nothing after its
// earlier lines is shown; anywhere else, or in a check that did not succeed, it is a log
// line like any other.
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
	found := map[concourse.PlanID]runspec.CheckedVersions{"1/check": {{"ref": "a"}, {"ref": "b"}}}
	for _, tt := range []struct {
		name      string
		tr        *v1.TaskRun
		log       []LogLine
		logDone   bool
		wantLogs  []string
		wantFound map[concourse.PlanID]runspec.CheckedVersions
	}{
		{"the last line of a check that succeeded", nil, lines, true, []string{"checking\n"}, found},
		{"its log not read to its end", nil, lines, false, []string{"checking\n"}, nil},
		{"the check running", running, lines, true, []string{"checking\n"}, nil},
		{"not the last line", nil, []LogLine{lines[1], lines[0]}, true, []string{string(frame), "checking\n"}, nil},
		{"a check that failed", failed, lines, true, []string{"checking\n", string(frame)}, nil},
	} {
		obs := recorded(t, "testdata/failed-with-ensure")
		so := obs.Steps["check-thing"]
		if tt.tr != nil {
			so.TaskRun = tt.tr
		}
		so.Log, so.LogDone = tt.log, tt.logDone
		events, _ := Map(obs, nil)
		var logs []string
		for _, e := range events {
			if e.Key.Step != "check-thing" {
				continue
			}
			switch ev := e.Event.(type) {
			case event.Log:
				logs = append(logs, ev.Payload)
			case nil:
				t.Errorf("%s: %s is no event", tt.name, e.Key)
			}
		}
		if !slices.Equal(logs, tt.wantLogs) {
			t.Errorf("%s: logs %q, want %q", tt.name, logs, tt.wantLogs)
		}
		if diff := cmp.Diff(tt.wantFound, VersionsFound(obs), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: versions found (-want +got):\n%s", tt.name, diff)
		}
	}
}
