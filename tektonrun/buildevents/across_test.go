package buildevents

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"

	"github.com/concourse-tekton/concourse-tekton/concourse/event"
	"github.com/concourse-tekton/concourse-tekton/runner/eval"
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// TestMapAcrossResolver: an across step's resolver is the across step's beginning, at its
// origin: initialize, its warnings, start, and its error if it could not find the values;
// no finish of its own (the across step's end comes after its substeps).
func TestMapAcrossResolver(t *testing.T) {
	base := recorded(t, "testdata/failed-with-ensure")
	at := time.Date(2026, 11, 21, 2, 0, 0, 0, time.UTC)
	warning := LogLine{Time: at, Text: "\x1b[1;33mWARNING: the across step is experimental and subject to change!\x1b[0m\n"}
	resolver := func(outcome runspec.Outcome, failure string) *v1.TaskRun {
		tr := base.Steps["task-say"].TaskRun.DeepCopy()
		spec, _ := StepSpec(tr)
		spec.Mode, spec.PlanID, spec.Name, spec.Task = runspec.ModeAcross, "9", "v", nil
		spec.Across = &runspec.Across{Vars: []runspec.AcrossVar{{Name: "v", Values: "((.:vs))"}}, Slots: 2}
		setSpec(t, tr, spec)
		tr.Status.Results = []v1.TaskRunResult{{Name: runspec.ResultOutcome, Type: v1.ResultsTypeString, Value: *v1.NewStructuredValues(string(outcome))}}
		if failure != "" {
			tr.Status.Results = append(tr.Status.Results, v1.TaskRunResult{Name: runspec.ResultError, Type: v1.ResultsTypeString, Value: *v1.NewStructuredValues(failure)})
		}
		return tr
	}
	tests := []struct {
		name string
		tr   *v1.TaskRun
		want []string
	}{
		{"succeeded", resolver(runspec.Succeeded, ""), []string{`initialize {"id":"9"}`, `log {"id":"9","source":"stderr"}`, `start {"id":"9"}`}},
		{"errored", resolver(runspec.Errored, "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal string into Go value of type []interface {}"),
			[]string{`initialize {"id":"9"}`, `log {"id":"9","source":"stderr"}`, `start {"id":"9"}`, `error {"id":"9"} error unmarshaling JSON: while decoding JSON: json: cannot unmarshal string into Go value of type []interface {}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			events, _ := Map(withStep(base, "task-say", &StepObservation{TaskRun: tt.tr, Log: []LogLine{warning}, LogDone: true}), nil)
			var got []string
			for _, e := range events {
				if e.Key.Step != "task-say" {
					continue
				}
				env, err := json.Marshal(e.Event)
				if err != nil {
					t.Fatal(err)
				}
				var ev struct {
					Origin  json.RawMessage `json:"origin"`
					Message string          `json:"message"`
				}
				_ = json.Unmarshal(env, &ev)
				line := string(e.Event.EventType()) + " " + string(ev.Origin)
				if ev.Message != "" {
					line += " " + ev.Message
				}
				got = append(got, line)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("the resolver's events (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMapAbsentSlot: a slot the build does not use is a skipped task: it shows nothing,
// and the build ends without it.
func TestMapAbsentSlot(t *testing.T) {
	obs := recorded(t, "testdata/failed-with-ensure")
	want, final := Map(obs, nil)
	run := obs.Run.DeepCopy()
	slot := *run.Status.PipelineSpec.Tasks[len(run.Status.PipelineSpec.Tasks)-1].DeepCopy()
	slot.Name = "task-slot"
	run.Status.PipelineSpec.Tasks = append(run.Status.PipelineSpec.Tasks, slot)
	run.Status.SkippedTasks = append(run.Status.SkippedTasks, v1.SkippedTask{Name: slot.Name, Reason: v1.WhenExpressionsSkip})
	obs.Run = run
	got, gotFinal := Map(obs, nil)
	if gotFinal != final || len(got) != len(want) {
		t.Fatalf("with an absent slot: %d events (final %t), want %d (final %t)", len(got), gotFinal, len(want), final)
	}
	for i := range want {
		if got[i].Key != want[i].Key {
			t.Errorf("event %d: %s, want %s", i, got[i].Key, want[i].Key)
		}
	}
}

// The errors that come out of an across step's substeps, as Concourse's steps pass them
// on, and their go-multierror text.
func TestAcrossPropagatedErrors(t *testing.T) {
	leaf := func(id string) runspec.Node { return runspec.Node{ID: id, Kind: runspec.KindLeaf} }
	hooked := func(kind runspec.Kind, step, hook runspec.Node) runspec.Node {
		return runspec.Node{ID: "h" + step.ID, Kind: kind, Step: &step, Hook: &hook}
	}
	leaves := map[string]acrossLeaf{
		"ok":      {outcome: runspec.Succeeded},
		"fail":    {outcome: runspec.Failed},
		"err1":    {outcome: runspec.Errored, err: "boom 1"},
		"err2":    {outcome: runspec.Errored, err: "boom 2"},
		"aborted": {outcome: runspec.Aborted, err: "interrupted"},
	}
	tests := []struct {
		name string
		node runspec.Node
		want []string
	}{
		{"a do stops at its first step that did not succeed", runspec.Node{ID: "d", Kind: runspec.KindDo, Steps: []runspec.Node{leaf("ok"), leaf("fail"), leaf("err1")}}, nil},
		{"a do passes its errored step's error", runspec.Node{ID: "d", Kind: runspec.KindDo, Steps: []runspec.Node{leaf("ok"), leaf("err1"), leaf("err2")}}, []string{"boom 1"}},
		{"in_parallel gathers", runspec.Node{ID: "p", Kind: runspec.KindInParallel, Steps: []runspec.Node{leaf("err1"), leaf("ok"), leaf("err2")}}, []string{"boom 1", "boom 2"}},
		{"try swallows", runspec.Node{ID: "t", Kind: runspec.KindTry, Step: &runspec.Node{ID: "err1", Kind: runspec.KindLeaf}}, nil},
		{"an abort is no error", runspec.Node{ID: "p", Kind: runspec.KindInParallel, Steps: []runspec.Node{leaf("aborted")}}, nil},
		{"ensure adds its hook's", hooked(runspec.KindEnsure, leaf("err1"), leaf("err2")), []string{"boom 1", "boom 2"}},
		{"on_failure's hook runs on a failure", hooked(runspec.KindOnFailure, leaf("fail"), leaf("err2")), []string{"boom 2"}},
		{"on_error passes the step's", hooked(runspec.KindOnError, leaf("err1"), leaf("err2")), []string{"boom 1"}},
		{"a retry has its last attempt's", runspec.Node{ID: "r", Kind: runspec.KindRetry, Steps: []runspec.Node{leaf("err1"), leaf("err2")}}, []string{"boom 2"}},
	}
	facts := eval.Facts{Outcomes: map[string]runspec.Outcome{}}
	for id, l := range leaves {
		facts.Outcomes[id] = l.outcome
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, propagated(tt.node, leaves, facts)); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
	if got, want := multiError([]string{"a", "b"}), "2 errors occurred:\n\t* a\n\t* b\n\n"; got != want {
		t.Errorf("multiError = %q, want %q", got, want)
	}
}

// TestMapAcrossSubsteps: an across step whose values were known when it was compiled
// lists its substeps (across-substeps, at its origin) right after its start, as
// Concourse's engine does once it has the values; a cursor past its start still gets it.
func TestMapAcrossSubsteps(t *testing.T) {
	obs := recorded(t, "testdata/across-errored")
	substeps := []json.RawMessage{
		json.RawMessage(`{"step":{"id":"4/0/0","task":{"name":"sub","privileged":false,"hermetic":false}},"values":["ok"]}`),
		json.RawMessage(`{"step":{"id":"4/1/0","task":{"name":"sub","privileged":false,"hermetic":false}},"values":["bad"]}`),
	}
	run := obs.Run.DeepCopy()
	run.UID = "with-substeps" // the walk order is cached by UID
	set := false
	for i, pt := range run.Status.PipelineSpec.Finally {
		spec, ok := ParamsSpec(pt.Params)
		if !ok || spec.Mode != runspec.ModeVerdict {
			continue
		}
		set = setSubsteps(&spec.Verdict.Tree, "4", substeps)
		raw, err := json.Marshal(spec)
		if err != nil {
			t.Fatal(err)
		}
		for k := range pt.Params {
			if pt.Params[k].Name == runspec.ParamSpec {
				run.Status.PipelineSpec.Finally[i].Params[k].Value.StringVal = string(raw)
			}
		}
	}
	if !set {
		t.Fatal("no across step in the recorded build's verdict")
	}
	obs.Run = run
	events, _ := Map(obs, nil)
	var head []Event
	for _, e := range events {
		if e.Key.Step == `across "4" head` {
			head = append(head, e)
		}
	}
	if len(head) < 2 {
		t.Fatalf("the across step's head: %d events", len(head))
	}
	start, last := head[len(head)-2], head[len(head)-1]
	if _, ok := start.Event.(event.Start); !ok || start.Key.Last {
		t.Errorf("second to last event of the head: %s %T, want a start that is not the last", start.Key, start.Event)
	}
	got, ok := last.Event.(event.AcrossSubsteps)
	if !ok || !last.Key.Last {
		t.Fatalf("last event of the head: %s %T, want across-substeps", last.Key, last.Event)
	}
	if got.Origin.ID != "4" || got.Time != start.Event.(event.Start).Time || !cmp.Equal(got.Substeps, substeps) {
		t.Errorf("across-substeps: %+v", got)
	}
	var c Cursor
	for _, e := range events {
		if err := c.Advance(e.Key); err != nil {
			t.Fatal(err)
		}
		if e.Key == start.Key {
			break
		}
	}
	rest, _ := Map(obs, &c)
	if len(rest) == 0 || rest[0].Key != last.Key {
		t.Errorf("after the start, the mapping goes on with %v, want %s", keys(rest), last.Key)
	}
}

// setSubsteps gives the across node id of tree its substeps.
func setSubsteps(n *runspec.Node, id string, substeps []json.RawMessage) bool {
	if n.ID == id && n.Kind == runspec.KindAcross {
		n.Substeps = substeps
		return true
	}
	for _, c := range n.Children() {
		if setSubsteps(c, id, substeps) {
			return true
		}
	}
	return false
}
