package buildevents

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"

	"github.com/concourse-tekton/concourse-tekton/concourse/event"
	"github.com/concourse-tekton/concourse-tekton/pvc"
)

// TestMapWaitingForWorker: a step whose pod no node can take shows what Concourse shows
// before it looks for a worker (the step's initialize, and a get's start-get), then
// waiting-for-worker; once the pod has run, the head goes on from there, with no event
// twice and the same bytes as a process that attaches only then maps (without the wait,
// which it cannot know).
func TestMapWaitingForWorker(t *testing.T) {
	whole := recorded(t, "testdata/failed-with-ensure")
	tests := []struct {
		step string
		// waiting are the step's events while its pod waits.
		waiting []string
	}{
		{"task-say", []string{"head/0 initialize-task", "wait/0 waiting-for-worker"}},
		{"task-bye", []string{"head/0 initialize-task", "wait/0 waiting-for-worker"}},
		{"get-thing", []string{"head/0 initialize-get", "head/1 start-get", "wait/0 waiting-for-worker"}},
		{"check-thing", []string{"head/0 initialize-check", "wait/0 waiting-for-worker"}},
	}
	for _, tt := range tests {
		t.Run(tt.step, func(t *testing.T) {
			so := whole.Steps[tt.step]
			waiting := withStep(whole, tt.step, &StepObservation{TaskRun: pendingTaskRun(so.TaskRun), Pod: unscheduledPod(so.Pod)})
			first, final := Map(waiting, nil)
			if final {
				t.Fatal("the build ended while a step waits for a worker")
			}
			if diff := cmp.Diff(tt.waiting, stepEvents(first, tt.step)); diff != "" {
				t.Errorf("while the pod waits (-want +got):\n%s", diff)
			}
			var cursor Cursor
			for _, e := range first {
				if err := cursor.Advance(e.Key); err != nil {
					t.Fatal(err)
				}
			}
			rest, _ := Map(whole, &cursor)
			fresh, _ := Map(whole, nil)
			// Followed through: the waiting events, then the rest of the step's.
			got := append(stepEvents(first, tt.step), stepEvents(rest, tt.step)...)
			want := stepEvents(fresh, tt.step)
			shown := len(tt.waiting) - 1
			want = append(append(want[:shown:shown], tt.waiting[shown]), want[shown:]...)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("the step's events followed through (-want +got):\n%s", diff)
			}
			// The head shown while waiting is the head a later process maps, byte for byte.
			byKey := map[Key]string{}
			for _, e := range fresh {
				byKey[e.Key] = string(encode(t, []Event{e}))
			}
			for _, e := range first {
				if e.Key.Step == tt.step && e.Key.Part == PartHead && byKey[e.Key] != string(encode(t, []Event{e})) {
					t.Errorf("while waiting: %s\nlater: %s", encode(t, []Event{e}), byKey[e.Key])
				}
			}
		})
	}
}

// stepEvents are a step's events, as "<part>/<n> <type>".
func stepEvents(events []Event, step string) []string {
	var out []string
	for _, e := range events {
		if e.Key.Step == step {
			out = append(out, strings.TrimPrefix(e.Key.String(), step+"/")+" "+string(e.Event.EventType()))
		}
	}
	return out
}

// pendingTaskRun is tr before its pod ran: started, running, with no step state or result.
func pendingTaskRun(tr *v1.TaskRun) *v1.TaskRun {
	tr = tr.DeepCopy()
	tr.Status.Conditions = duckv1.Conditions{{Type: apis.ConditionSucceeded, Status: corev1.ConditionUnknown, Reason: "Pending"}}
	tr.Status.CompletionTime = nil
	tr.Status.Steps = nil
	tr.Status.Results = nil
	return tr
}

// unscheduledPod is pod as the scheduler leaves it when no node can take it.
func unscheduledPod(pod *corev1.Pod) *corev1.Pod {
	pod = pod.DeepCopy()
	pod.Spec.NodeName = ""
	pod.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message: "0/1 nodes are available: 1 node(s) were unschedulable.",
	}}}
	return pod
}

// TestMapAbortedWhileWaiting: a step whose pod never started, cancelled by the build's
// abort, is interrupted, as Concourse interrupts a step that waits for a worker: what it
// showed before it looked for one, then error "interrupted", with no diagnostic; a
// process attaching afterwards maps the same. Cancelled otherwise (the build not
// aborted), it is a step that broke. A build whose verdict never ran ends aborted.
func TestMapAbortedWhileWaiting(t *testing.T) {
	whole := recorded(t, "testdata/failed-with-ensure")
	cancelled := func(step string) *v1.TaskRun {
		tr := pendingTaskRun(whole.Steps[step].TaskRun)
		tr.Spec.Status = v1.TaskRunSpecStatusCancelled
		tr.Status.Conditions = duckv1.Conditions{{Type: apis.ConditionSucceeded, Status: corev1.ConditionFalse, Reason: "TaskRunCancelled", Message: "TaskRun was cancelled"}}
		tr.Status.CompletionTime = tr.Status.StartTime
		return tr
	}
	aborted := whole
	aborted.Run = whole.Run.DeepCopy()
	aborted.Run.Annotations = map[string]string{pvc.AnnotationAborted: "true"}
	for _, tt := range []struct {
		step string
		want []string
	}{
		{"task-say", []string{"head/0 initialize-task", "end/0 error interrupted"}},
		{"get-thing", []string{"head/0 initialize-get", "head/1 start-get", "end/0 error interrupted"}},
	} {
		t.Run(tt.step, func(t *testing.T) {
			so := whole.Steps[tt.step]
			waiting := withStep(aborted, tt.step, &StepObservation{TaskRun: pendingTaskRun(so.TaskRun), Pod: unscheduledPod(so.Pod)})
			first, _ := Map(waiting, nil)
			var cursor Cursor
			for _, e := range first {
				if err := cursor.Advance(e.Key); err != nil {
					t.Fatal(err)
				}
			}
			ended := withStep(aborted, tt.step, &StepObservation{TaskRun: cancelled(tt.step), Pod: unscheduledPod(so.Pod), LogDone: true})
			rest, _ := Map(ended, &cursor)
			later, _ := Map(ended, nil)
			got := withMessages(append(slices.Clone(first), rest...), tt.step)
			if want := slices.Insert(slices.Clone(tt.want), len(tt.want)-1, "wait/0 waiting-for-worker"); !slices.Equal(got, want) {
				t.Errorf("followed through: %v, want %v", got, want)
			}
			if got := withMessages(later, tt.step); !slices.Equal(got, tt.want) {
				t.Errorf("attached afterwards: %v, want %v", got, tt.want)
			}
			// Not aborted: a step that broke, with its diagnostic.
			broke, _ := Map(withStep(whole, tt.step, &StepObservation{TaskRun: cancelled(tt.step), Pod: unscheduledPod(so.Pod), LogDone: true}), nil)
			if got := withMessages(broke, tt.step); slices.Contains(got, "end/0 error interrupted") || len(got) == 0 || !strings.HasPrefix(got[len(got)-1], "end/1 error ") {
				t.Errorf("cancelled, the build not aborted: %v, want a diagnostic and its error", got)
			}
		})
	}

	run := whole.Run.DeepCopy()
	if status, _ := finalStatus(run, nil, nil); status != event.BuildStatusErrored {
		t.Errorf("no verdict: %s, want errored", status)
	}
	run.Annotations = map[string]string{pvc.AnnotationAborted: "true"}
	if status, _ := finalStatus(run, nil, nil); status != event.BuildStatusAborted {
		t.Errorf("no verdict, the build aborted: %s, want aborted", status)
	}
}

// withMessages are a step's events as stepEvents has them, an error's with its message.
func withMessages(events []Event, step string) []string {
	out := stepEvents(events, step)
	i := 0
	for _, e := range events {
		if e.Key.Step != step {
			continue
		}
		if ev, ok := e.Event.(event.Error); ok {
			out[i] += " " + ev.Message
		}
		i++
	}
	return out
}
