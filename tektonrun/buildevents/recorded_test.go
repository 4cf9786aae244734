package buildevents

import (
	"bytes"
	"encoding/json"
	"flag"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/pkg/apis"

	"github.com/concourse-tekton/concourse-tekton/concourse/event"
	"github.com/concourse-tekton/concourse-tekton/internal/golden"
	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/tektonrun/internal/recordedbuilds"
)

var update = flag.Bool("update", false, "rewrite the expected events of the recorded builds")

// recorded loads a build recorded from a real cluster by testdata/record.sh: its objects,
// and its logs read as the log follower reads them, whole.
func recorded(t *testing.T, dir string) Observation {
	t.Helper()
	b := recordedbuilds.Load(t, dir)
	obs := Observation{Run: b.Run, Steps: map[string]*StepObservation{}}
	for name, s := range b.Steps {
		so := &StepObservation{TaskRun: s.TaskRun, Pod: s.Pod, LogDone: true}
		if s.Log != nil {
			lines, err := readLog(s.Log)
			if err != nil {
				t.Fatal(err)
			}
			so.Log = lines
		}
		obs.Steps[name] = so
	}
	return obs
}

// readLog reads a whole log as the API serves it, the way the log follower does.
func readLog(data []byte) ([]LogLine, error) {
	var r LogReader
	var lines []LogLine
	err := r.Read(bytes.NewReader(data), true, func(l LogLine) { lines = append(lines, l) })
	return lines, err
}

// encode renders events one per line: the key, then the ATC's envelope.
func encode(t *testing.T, events []Event) []byte {
	t.Helper()
	var b strings.Builder
	for _, e := range events {
		env, err := event.Marshal(e.Event, 0)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(e.Key.String() + " " + string(env) + "\n")
	}
	return []byte(b.String())
}

func recordedCases(t *testing.T) []string {
	t.Helper()
	return recordedbuilds.Cases(t, "testdata")
}

// TestRecorded maps builds recorded from a real cluster and compares the events with the
// expected ones (testdata/<case>/events.txt; -update rewrites them).
func TestRecorded(t *testing.T) {
	for _, dir := range recordedCases(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			events, final := Map(recorded(t, dir), nil)
			if !final {
				t.Errorf("the recorded build did not map to a final status")
			}
			golden.Check(t, filepath.Join(dir, "events.txt"), encode(t, events), *update)
		})
	}
}

// TestRecordedResume checks restart safety on every recorded build: a consumer that got the
// first k events, for every k, gets exactly the rest from a new mapping (no gap, no
// duplicate), through a cursor that went through its text form.
func TestRecordedResume(t *testing.T) {
	for _, dir := range recordedCases(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			obs := recorded(t, dir)
			all, _ := Map(obs, nil)
			for k := 0; k <= len(all); k++ {
				var c Cursor
				for _, e := range all[:k] {
					if err := c.Advance(e.Key); err != nil {
						t.Fatal(err)
					}
				}
				c, err := ParseCursor(c.String())
				if err != nil {
					t.Fatal(err)
				}
				rest, final := Map(obs, &c)
				if !final {
					t.Fatalf("after %d events: not final", k)
				}
				if diff := cmp.Diff(keys(all[k:]), keys(rest)); diff != "" {
					t.Fatalf("after %d events (-want +got):\n%s", k, diff)
				}
			}
		})
	}
}

// TestRecordedGrowing maps each recorded build as it would be seen while its logs are still
// being read: with a step's log cut short, the step's events are a prefix of its events in
// the whole build, and the build is not final.
func TestRecordedGrowing(t *testing.T) {
	for _, dir := range recordedCases(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			obs := recorded(t, dir)
			all, _ := Map(obs, nil)
			for name, so := range obs.Steps {
				if len(so.Log) == 0 || !hasEvents(all, name) {
					continue
				}
				full := so.Log
				so.Log, so.LogDone = full[:len(full)/2], false
				partial, final := Map(obs, nil)
				so.Log, so.LogDone = full, true
				if final {
					t.Errorf("%s: final with half a log", name)
				}
				want := keys(all)[:len(partial)]
				if diff := cmp.Diff(want, keys(partial)); diff != "" {
					t.Errorf("%s: half a log (-want +got):\n%s", name, diff)
				}
			}
		})
	}
}

func hasEvents(events []Event, step string) bool {
	for _, e := range events {
		if e.Key.Step == step {
			return true
		}
	}
	return false
}

func keys(events []Event) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = e.Key.String()
	}
	return out
}

// TestMapWithheldUntilDepsEnd checks the order rule: a step's events wait for the steps it
// runs after, so a sequence never interleaves.
func TestMapWithheldUntilDepsEnd(t *testing.T) {
	for _, dir := range recordedCases(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			obs := recorded(t, dir)
			all, _ := Map(obs, nil)
			spec := obs.Run.Status.PipelineSpec
			for _, pt := range spec.Tasks {
				for _, dep := range pt.Deps() {
					so := obs.Steps[dep]
					if so == nil || len(so.Log) == 0 || !hasEvents(all, dep) {
						continue
					}
					saved := so.LogDone
					so.LogDone = false
					events, _ := Map(obs, nil)
					so.LogDone = saved
					for _, e := range events {
						if e.Key.Step == pt.Name {
							t.Errorf("%s mapped before %s, which it runs after, ended: %s", pt.Name, dep, e.Key)
						}
					}
				}
			}
		})
	}
}

func TestCursorText(t *testing.T) {
	var c Cursor
	for _, k := range []Key{{Part: PartHead}, {Step: "a", Part: PartHead}, {Step: "a", Part: PartLog}, {Step: "a", Part: PartLog, N: 1}} {
		if err := c.Advance(k); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Advance(Key{Step: "a", Part: PartLog, N: 5}); err == nil {
		t.Errorf("a gap was accepted")
	}
	text := c.String()
	if want := `{"a":{"h":1,"l":2},"build":{"h":1}}`; text != want {
		t.Errorf("String() = %s, want %s", text, want)
	}
	back, err := ParseCursor(text)
	if err != nil {
		t.Fatal(err)
	}
	if !back.Covers(Key{Step: "a", Part: PartLog, N: 1}) || back.Covers(Key{Step: "a", Part: PartLog, N: 2}) || !back.Covers(Key{Part: PartHead}) {
		t.Errorf("the parsed cursor covers the wrong keys: %s", back.String())
	}
	if _, err := ParseCursor("{"); err == nil {
		t.Errorf("a bad cursor was accepted")
	}
	if back.ended("a") {
		t.Errorf("step a ended before its last event")
	}
	if err := back.Advance(Key{Step: "a", Part: PartEnd, Last: true}); err != nil {
		t.Fatal(err)
	}
	again, err := ParseCursor(back.String())
	if err != nil || !again.ended("a") || again.ended("") {
		t.Errorf("after a's last event, through %s: ended(a) = %v, ended(build) = %v (%v)", back.String(), again.ended("a"), again.ended(""), err)
	}
}

// TestHeadWaitsForTheRunner: a step is shown started once its runner began (its install
// step ended); a task, or a step of a fail-fast in_parallel, only once its runner says it
// started (runspec.StartMark), since its runner may still decide it never runs (missing
// inputs; a fired group), which Concourse never shows, however long that takes.
func TestHeadWaitsForTheRunner(t *testing.T) {
	obs := recorded(t, "testdata/failed-with-ensure")
	so := obs.Steps["task-say"]
	tr := so.TaskRun.DeepCopy()
	tr.Status.SetCondition(&apis.Condition{Type: apis.ConditionSucceeded, Status: corev1.ConditionUnknown})
	tr.Status.Results = nil
	started := metav1.NewTime(time.Date(2026, 11, 21, 2, 0, 0, 0, time.UTC))
	for i := range tr.Status.Steps {
		tr.Status.Steps[i].ContainerState = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}
	}
	installing := tr.DeepCopy()
	for i := range tr.Status.Steps {
		if tr.Status.Steps[i].Name == runspec.StepInstall {
			tr.Status.Steps[i].ContainerState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ContainerID: "containerd://x", StartedAt: started, FinishedAt: started}}
		}
	}
	ended := tr.DeepCopy()
	for i := range ended.Status.Steps {
		if ended.Status.Steps[i].Name != runspec.StepInstall {
			ended.Status.Steps[i].ContainerState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ContainerID: "containerd://y", StartedAt: started, FinishedAt: started}}
		}
	}
	failFast := tr.DeepCopy()
	spec, _ := StepSpec(failFast)
	spec.Context = append(spec.Context, runspec.Layer{Kind: runspec.LayerFailFast, ID: "p", Child: &runspec.Node{ID: "1", Kind: runspec.KindLeaf}})
	setSpec(t, failFast, spec)
	// The same step as a get: no fail-fast group, nothing to announce.
	get := tr.DeepCopy()
	getSpec, _ := StepSpec(get)
	getSpec.Mode, getSpec.Task, getSpec.Get = runspec.ModeGet, nil, &runspec.Get{Type: "mock"}
	setSpec(t, get, getSpec)
	getInstalling := installing.DeepCopy()
	setSpec(t, getInstalling, getSpec)
	// The same get in a pod that has the runner's image as a volume: no install step, its
	// runner began with its container.
	getImageVolume := getInstalling.DeepCopy()
	getImageVolume.Status.Steps = slices.DeleteFunc(getImageVolume.Status.Steps, func(s v1.StepState) bool { return s.Name == runspec.StepInstall })
	obs.Steps = map[string]*StepObservation{"check-thing": obs.Steps["check-thing"], "get-thing": obs.Steps["get-thing"], "task-say": {}}
	obs.Run = obs.Run.DeepCopy()
	obs.Run.Status.SetCondition(&apis.Condition{Type: apis.ConditionSucceeded, Status: corev1.ConditionUnknown})
	// A task shown started: initialize-task, its image's check and get (ten events, as
	// its image_resource is a registry image), selected-worker, start-task.
	const shown = 13
	heads := func(tr *v1.TaskRun, log []LogLine) (head int, logs []string) {
		obs.Steps["task-say"] = &StepObservation{TaskRun: tr, Log: log}
		events, _ := Map(obs, nil)
		for _, e := range events {
			switch {
			case e.Key.Step != "task-say":
			case e.Key.Part == PartHead:
				head++
			case e.Key.Part == PartLog:
				// Numbered without the mark: a cursor takes them in order.
				if e.Key.N != len(logs) {
					t.Errorf("log event %s after %d others", e.Key, len(logs))
				}
				logs = append(logs, e.Event.(event.Log).Payload)
			}
		}
		return head, logs
	}
	at := started.Time
	mark := []LogLine{{Time: at, Text: runspec.StartMark}}
	markThenLine := []LogLine{{Time: at, Text: runspec.StartMark}, {Time: at, Text: "hi\n"}, {Time: at, Text: runspec.StartMark}}
	runnerLineThenMark := []LogLine{{Time: at, Text: "INFO: a note\n"}, {Time: at, Text: runspec.StartMark}, {Time: at, Text: "hi\n"}}
	line := []LogLine{{Time: at, Text: "hi\n"}}
	for _, tt := range []struct {
		name     string
		tr       *v1.TaskRun
		log      []LogLine
		want     int
		wantLogs []string
	}{
		{"installing", installing, nil, 0, nil},
		// A task may stop before its process (missing inputs): it is shown running once
		// its runner says so, however long it is quiet, and whatever it wrote before.
		{"task, runner began", tr, nil, 0, nil},
		{"task, runner wrote", tr, line, 0, nil},
		{"task, container ended, not the TaskRun", ended, nil, 0, nil},
		{"task, started", tr, mark, shown, nil},
		// The runner's mark is not output; the process's own line of the same text is.
		{"task, started and wrote", tr, markThenLine, shown, []string{"hi\n", runspec.StartMark}},
		{"task, the runner wrote, then started", tr, runnerLineThenMark, shown, []string{"INFO: a note\n", "hi\n"}},
		{"fail-fast, quiet", failFast, nil, 0, nil},
		{"fail-fast, started", failFast, mark, shown, nil},
		// A get of no fail-fast group is shown once its runner began, and its mark-like
		// line is output like any other.
		{"get, installing", getInstalling, nil, 0, nil},
		{"get, runner began", get, nil, 3, nil},
		{"get, runner from its image, began", getImageVolume, nil, 3, nil},
		{"get, wrote a mark", get, mark, 3, []string{runspec.StartMark}},
	} {
		n, logs := heads(tt.tr, tt.log)
		if n != tt.want || !slices.Equal(logs, tt.wantLogs) {
			t.Errorf("%s: %d head events and logs %q, want %d and %q", tt.name, n, logs, tt.want, tt.wantLogs)
		}
	}

	// A task that errored with no exit status never ran its process: initialized, and its
	// image fetched, as Concourse's task step stops before selecting a worker.
	errored := so.TaskRun.DeepCopy()
	errored.Status.Results = []v1.TaskRunResult{
		{Name: runspec.ResultOutcome, Type: v1.ResultsTypeString, Value: *v1.NewStructuredValues(string(runspec.Errored))},
		{Name: runspec.ResultError, Type: v1.ResultsTypeString, Value: *v1.NewStructuredValues("missing inputs: data")},
	}
	obs.Steps["task-say"] = &StepObservation{TaskRun: errored, LogDone: true}
	events, _ := Map(obs, nil)
	var got []string
	for _, e := range events {
		if e.Key.Step == "task-say" {
			env, _ := event.Marshal(e.Event, 0)
			var typ struct{ Event string }
			_ = json.Unmarshal(env, &typ)
			got = append(got, typ.Event)
		}
	}
	if diff := cmp.Diff([]string{"initialize-task", "image-check", "image-get",
		"initialize-check", "selected-worker", "start", "finish",
		"initialize-get", "start-get", "selected-worker", "finish-get", "error"}, got); diff != "" {
		t.Errorf("a task stopped before its process (-want +got):\n%s", diff)
	}

	// Before its TaskRun ends (a fused verdict runs after it in the pod), a task whose
	// container ended is not shown yet: whether its process ran comes with the results.
	ending := errored.DeepCopy()
	ending.Status.Results = nil
	ending.Status.CompletionTime = nil
	ending.Status.SetCondition(&apis.Condition{Type: apis.ConditionSucceeded, Status: corev1.ConditionUnknown})
	for i := range ending.Status.Steps {
		if ending.Status.Steps[i].Name == runspec.StepRun {
			ending.Status.Steps[i].Running = nil
			ending.Status.Steps[i].Terminated = &corev1.ContainerStateTerminated{ExitCode: 2, ContainerID: "containerd://run"}
		}
	}
	obs.Steps["task-say"] = &StepObservation{TaskRun: ending, LogDone: true}
	events, _ = Map(obs, nil)
	for _, e := range events {
		if e.Key.Step == "task-say" {
			t.Errorf("a task whose container ended before its TaskRun did is shown: %+v", e)
		}
	}
}

// TestRecordedCompletionRewritten: Tekton may write a TaskRun's or a PipelineRun's
// completion time again, later (a status update whose answer an apiserver restart lost is
// made once more); a process that maps the build after that maps the same events.
func TestRecordedCompletionRewritten(t *testing.T) {
	for _, dir := range recordedCases(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			obs := recorded(t, dir)
			before := encode(t, first(Map(obs, nil)))
			later := func(tm *metav1.Time) {
				if tm != nil {
					*tm = metav1.NewTime(tm.Add(3 * time.Second))
				}
			}
			for _, so := range obs.Steps {
				later(so.TaskRun.Status.CompletionTime)
			}
			later(obs.Run.Status.CompletionTime)
			if diff := cmp.Diff(string(before), string(encode(t, first(Map(obs, nil))))); diff != "" {
				t.Errorf("events after completion times were rewritten (-before +after):\n%s", diff)
			}
		})
	}
}

// TestRecordedRunStartRewritten: Tekton's controller, reconciling a new PipelineRun from
// a cache that has not yet seen its first status write, sets the run's start time again,
// a second later (seen in CI: a follower showed the first, `events` after the build the
// second); a process that maps the build after that maps the same events.
func TestRecordedRunStartRewritten(t *testing.T) {
	for _, dir := range recordedCases(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			obs := recorded(t, dir)
			before := encode(t, first(Map(obs, nil)))
			obs.Run.Status.StartTime = &metav1.Time{Time: obs.Run.Status.StartTime.Add(time.Second)}
			if diff := cmp.Diff(string(before), string(encode(t, first(Map(obs, nil))))); diff != "" {
				t.Errorf("events after the run's start time was rewritten (-before +after):\n%s", diff)
			}
		})
	}
}

func first[A, B any](a A, _ B) A { return a }

// TestMapFusedVerdict: when the build's last step recorded the verdict
// (runspec.Verdict.Fused), its verdict task was skipped, and the build's status is the
// step's verdict result, at the step's end; a verdict task that ran wins.
func TestMapFusedVerdict(t *testing.T) {
	base := recorded(t, "testdata/failed-with-ensure")
	withoutVerdictTask := func(result string) Observation {
		obs := base
		run := base.Run.DeepCopy()
		run.Status.ChildReferences = slices.DeleteFunc(run.Status.ChildReferences, func(c v1.ChildStatusReference) bool { return c.PipelineTaskName == runspec.VerdictTask })
		run.Status.SkippedTasks = append(run.Status.SkippedTasks, v1.SkippedTask{Name: runspec.VerdictTask, Reason: v1.WhenExpressionsSkip})
		obs.Run = run
		obs.Steps = maps.Clone(base.Steps)
		delete(obs.Steps, runspec.VerdictTask)
		if result != "" {
			last := base.Steps["task-bye"].TaskRun.DeepCopy()
			// Tekton gives the TaskRun its Task's labels.
			last.Labels[runspec.LabelVerdict] = runspec.VerdictFused
			last.Status.Results = append(last.Status.Results, v1.TaskRunResult{Name: runspec.ResultVerdict, Type: v1.ResultsTypeString, Value: *v1.NewStructuredValues(result)})
			obs = withStep(obs, "task-bye", &StepObservation{TaskRun: last, Pod: base.Steps["task-bye"].Pod, Log: base.Steps["task-bye"].Log, LogDone: true})
		}
		return obs
	}
	end := base.Steps["task-bye"].TaskRun.Status.CompletionTime.Unix()
	baseEvents, _ := Map(base, nil)
	recordedStatus := baseEvents[len(baseEvents)-1].Event
	for _, tt := range []struct {
		name string
		obs  Observation
		want event.Status
	}{
		{"the step's verdict", withoutVerdictTask("succeeded"), event.Status{Status: event.BuildStatusSucceeded, Time: end}},
		{"no verdict at all", withoutVerdictTask(""), event.Status{Status: event.BuildStatusErrored, Time: base.Run.Status.CompletionTime.Unix()}},
		{"the verdict task's first", withStep(base, "task-bye", withoutVerdictTask("succeeded").Steps["task-bye"]), recordedStatus.(event.Status)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			events, done := Map(tt.obs, nil)
			if !done || len(events) == 0 || events[len(events)-1].Key.Part != PartEnd {
				t.Fatalf("the build did not end (done %v, %d events)", done, len(events))
			}
			if diff := cmp.Diff(tt.want, events[len(events)-1].Event); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
			// Followed: every step's events were delivered before the run ended, and its
			// steps are not mapped again.
			var c Cursor
			for _, e := range events[:len(events)-1] {
				if err := c.Advance(e.Key); err != nil {
					t.Fatal(err)
				}
			}
			rest, _ := Map(tt.obs, &c)
			if len(rest) != 1 {
				t.Fatalf("resumed before the status: %d events, want the status alone", len(rest))
			}
			if diff := cmp.Diff(tt.want, rest[0].Event); diff != "" {
				t.Errorf("status when resumed (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMapEventsTaskRun checks that a step's events carry its TaskRun's name and the
// build's own events none.
func TestMapEventsTaskRun(t *testing.T) {
	obs := recorded(t, "testdata/failed-with-ensure")
	events, _ := Map(obs, nil)
	var steps, builds int
	for _, e := range events {
		want := ""
		if e.Key.Step == "" {
			builds++
		} else if so := obs.Steps[e.Key.Step]; so != nil && so.TaskRun != nil {
			want = so.TaskRun.Name
			steps++
		}
		if e.TaskRun != want {
			t.Errorf("%s: TaskRun = %q, want %q", e.Key, e.TaskRun, want)
		}
	}
	if steps == 0 || builds == 0 {
		t.Errorf("%d step events and %d build events: want some of each", steps, builds)
	}
}
