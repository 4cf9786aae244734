package buildevents

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"

	"github.com/concourse-tekton/concourse-tekton/concourse/event"
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// withResult is a copy of tr with the result name set to value.
func withResult(tr *v1.TaskRun, name, value string) *v1.TaskRun {
	tr = tr.DeepCopy()
	for i, r := range tr.Status.Results {
		if r.Name == name {
			tr.Status.Results[i].Value = *v1.NewStructuredValues(value)
			return tr
		}
	}
	tr.Status.Results = append(tr.Status.Results, v1.TaskRunResult{Name: name, Type: v1.ResultsTypeString, Value: *v1.NewStructuredValues(value)})
	return tr
}

// TestMapUnreadable: what the mapper cannot read of a step (a runner or a compiler of
// another release) is no event left out or made empty: the step shows an error event that
// says why, in place of the event it could not make, as Concourse shows a step that
// errored.
func TestMapUnreadable(t *testing.T) {
	base := recorded(t, "testdata/failed-with-ensure")
	say := base.Steps["task-say"].TaskRun.DeepCopy()
	spec, ok := StepSpec(say)
	if !ok {
		t.Fatal("no spec")
	}
	spec.Task.Config = "not a config"
	setSpec(t, say, spec)
	for _, tt := range []struct {
		name, step string
		tr         *v1.TaskRun
		// want is the event at the key, an error whose message starts so.
		key  Key
		want string
	}{
		{"a get's version", "get-thing", withResult(base.Steps["get-thing"].TaskRun, runspec.ResultVersion, "{not JSON"),
			Key{Step: "get-thing", Part: PartEnd, Last: true}, "reading the step's version: invalid character"},
		{"a get's metadata", "get-thing", withResult(base.Steps["get-thing"].TaskRun, runspec.ResultMetadata, `{"name":"a"}`),
			Key{Step: "get-thing", Part: PartEnd, Last: true}, "reading the step's metadata: json: cannot unmarshal object"},
		{"a task's config", "task-say", say,
			Key{Step: "task-say", Part: PartHead}, "reading the task's config: json: cannot unmarshal string"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			so := *base.Steps[tt.step]
			so.TaskRun = tt.tr
			events, _ := Map(withStep(base, tt.step, &so), nil)
			i := slices.IndexFunc(events, func(e Event) bool { return e.Key == tt.key })
			if i < 0 {
				t.Fatalf("no event %s", tt.key)
			}
			e, ok := events[i].Event.(event.Error)
			if !ok || !strings.HasPrefix(e.Message, tt.want) || e.Origin.ID == "" {
				t.Errorf("%s = %#v, want an error %q…", tt.key, events[i].Event, tt.want)
			}
		})
	}
}

// An image's fetch plan that cannot be read is an error event in place of its
// announcement, the others announced as ever.
func TestImageAnnouncementUnreadable(t *testing.T) {
	spec := runspec.Spec{Mode: runspec.ModeCheck, PlanID: "7/image-check", ImagePlans: []json.RawMessage{
		json.RawMessage(`{"id":"7/image-check"`), json.RawMessage(`{"id":"7/image-get","get":{"name":"image","type":"mock"}}`)}}
	got := imageAnnouncement(spec, 5)
	if len(got) != 2 {
		t.Fatalf("%d events, want 2: %#v", len(got), got)
	}
	if e, ok := got[0].(event.Error); !ok || !strings.HasPrefix(e.Message, "reading the plan of an image's fetch: ") || e.Origin.ID != "7/image-check" {
		t.Errorf("the unreadable plan: %#v", got[0])
	}
	if diff := cmp.Diff(event.ImageGet{Time: 5, Origin: event.Origin{ID: "7"}, Plan: spec.ImagePlans[1]}, got[1]); diff != "" {
		t.Errorf("the other plan (-want +got):\n%s", diff)
	}
}
