package buildevents

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	"knative.dev/pkg/apis"

	"github.com/concourse-tekton/concourse-tekton/concourse/event"
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// asStep makes a recorded TaskRun a step of another mode that ended with outcome.
func asStep(t *testing.T, tr *v1.TaskRun, mode runspec.Mode, outcome runspec.Outcome) *v1.TaskRun {
	t.Helper()
	tr = tr.DeepCopy()
	spec, ok := StepSpec(tr)
	if !ok {
		t.Fatal("no spec")
	}
	if mode == runspec.ModeSetPipeline {
		spec.Mode, spec.Name, spec.Task = mode, "child", nil
		spec.SetPipeline = &runspec.SetPipeline{File: "thing/pipeline.yml"}
	}
	setSpec(t, tr, spec)
	tr.Status.Results = []v1.TaskRunResult{{Name: runspec.ResultOutcome, Type: v1.ResultsTypeString, Value: *v1.NewStructuredValues(string(outcome))}}
	return tr
}

// withStep is obs with the step name observed as so.
func withStep(obs Observation, name string, so *StepObservation) Observation {
	steps := map[string]*StepObservation{}
	for k, v := range obs.Steps {
		steps[k] = v
	}
	steps[name] = so
	obs.Steps = steps
	return obs
}

// setSpec makes spec the TaskRun's runner spec.
func setSpec(t *testing.T, tr *v1.TaskRun, spec runspec.Spec) {
	t.Helper()
	raw, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	for i := range tr.Spec.Params {
		if tr.Spec.Params[i].Name == runspec.ParamSpec {
			tr.Spec.Params[i].Value.StringVal = string(raw)
		}
	}
}

func TestMapPipelineToSet(t *testing.T) {
	want := runspec.PipelineToSet{Team: "other", Pipeline: "child", Config: json.RawMessage(`{"jobs":[{"name":"j"}]}`), Warnings: []string{"WARNING: w"}}
	raw, err := want.Frame()
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 21, 2, 0, 0, 0, time.UTC)
	frame := LogLine{Time: at, Text: string(raw)}
	text := LogLine{Time: at, Text: "invalid pipeline\n"}
	base := recorded(t, "testdata/failed-with-ensure")
	say := base.Steps["task-say"].TaskRun
	running := asStep(t, say, runspec.ModeSetPipeline, "")
	running.Status.SetCondition(&apis.Condition{Type: apis.ConditionSucceeded, Status: corev1.ConditionUnknown})

	tests := []struct {
		name    string
		tr      *v1.TaskRun
		log     []LogLine
		logDone bool
		// want are the step's log-part events: "set" for the pipeline, else the payload.
		want []string
	}{
		{"set_pipeline that succeeded", asStep(t, say, runspec.ModeSetPipeline, runspec.Succeeded), []LogLine{frame}, true, []string{"set"}},
		{"held until the step ended", running, []LogLine{text, frame}, false, []string{text.Text}},
		{"held until its log is read", asStep(t, say, runspec.ModeSetPipeline, runspec.Succeeded), []LogLine{frame}, false, nil},
		{"set_pipeline that failed", asStep(t, say, runspec.ModeSetPipeline, runspec.Failed), []LogLine{frame, text}, true, []string{frame.Text, text.Text}},
		{"not the last line", asStep(t, say, runspec.ModeSetPipeline, runspec.Succeeded), []LogLine{frame, text}, true, []string{frame.Text, text.Text}},
		{"a task's output", asStep(t, say, runspec.ModeTask, runspec.Succeeded), []LogLine{frame}, true, []string{frame.Text}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			events, _ := Map(withStep(base, "task-say", &StepObservation{TaskRun: tt.tr, Log: tt.log, LogDone: tt.logDone}), nil)
			var got []string
			for _, e := range events {
				if e.Key.Step != "task-say" || e.Key.Part != PartLog {
					continue
				}
				if e.Pipeline != nil {
					got = append(got, "set")
					wantSet := &PipelineToSet{Origin: event.Origin{ID: "2"}, Time: at.Unix(), PipelineToSet: want}
					if diff := cmp.Diff(wantSet, e.Pipeline); diff != "" || e.Event != nil {
						t.Errorf("pipeline, with the event %v (-want +got):\n%s", e.Event, diff)
					}
					continue
				}
				switch ev := e.Event.(type) {
				case event.Log:
					got = append(got, ev.Payload)
				default:
					t.Errorf("%s: a %T", e.Key, e.Event)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("log events (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPipelineToSetLogs(t *testing.T) {
	p := PipelineToSet{Origin: event.Origin{ID: "2"}, Time: 7, PipelineToSet: runspec.PipelineToSet{Pipeline: "child", Warnings: []string{"WARNING: w"}}}
	want := []event.Log{
		{Time: 7, Origin: event.Origin{ID: "2", Source: event.OriginSourceStderr}, Payload: "WARNING: w\n"},
		{Time: 7, Origin: event.Origin{ID: "2", Source: event.OriginSourceStdout}, Payload: "setting pipeline: child\n"},
	}
	if diff := cmp.Diff(want, p.Logs()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	bad := PipelineToSet{Origin: event.Origin{ID: "2"}, Error: "a set-pipeline frame of version \"2\""}
	if logs := bad.Logs(); len(logs) != 1 || logs[0].Origin.Source != event.OriginSourceStderr {
		t.Errorf("logs of an unreadable frame: %+v", logs)
	}
}
