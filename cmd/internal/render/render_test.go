package render

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/event"
)

// t0 is 12:34:56 UTC; tests render timestamps in UTC.
const t0 int64 = 1700051696

func origin(id string) event.Origin { return event.Origin{ID: concourse.PlanID(id)} }

func logEvent(id string, src event.OriginSource, payload string) event.Log {
	return event.Log{Time: t0, Origin: event.Origin{ID: concourse.PlanID(id), Source: src}, Payload: payload}
}

func taskConfig(path string, args ...string) event.TaskConfig {
	return event.TaskConfig{Platform: "linux", Image: "docker:///busybox", Run: event.TaskRunConfig{Path: path, Args: args}}
}

// renderAll renders events with o, in UTC, and returns the output and the Renderer.
func renderAll(t *testing.T, o Options, events ...event.Event) (string, *Renderer) {
	t.Helper()
	var out bytes.Buffer
	r := New(&out, o)
	r.loc = time.UTC
	for _, e := range events {
		if err := r.Render(e); err != nil {
			t.Fatalf("Render(%#v): %v", e, err)
		}
	}
	return out.String(), r
}

// renderCase is one event and what it renders as, without and with colours.
type renderCase struct {
	name  string
	event event.Event
	plain string
	color string
}

func TestRender(t *testing.T) {
	tests := []renderCase{{
		name:  "log payload is written raw",
		event: logEvent("1", event.OriginSourceStdout, "hi\r\npartial \x1b[32mline"),
		plain: "hi\r\npartial \x1b[32mline",
		color: "hi\r\npartial \x1b[32mline",
	}, {
		name:  "initialize-task",
		event: event.InitializeTask{Time: t0, Origin: origin("2"), TaskConfig: taskConfig("echo", "hi")},
		plain: "initializing\n",
		color: "\x1b[1minitializing\x1b[0m\n",
	}, {
		name:  "start-task runs path and args",
		event: event.StartTask{Time: t0, Origin: origin("2"), TaskConfig: taskConfig("echo", "hi", "there")},
		plain: "running echo hi there\n",
		color: "\x1b[1mrunning echo hi there\x1b[0m\n",
	}, {
		name:  "start-task without args",
		event: event.StartTask{Time: t0, Origin: origin("2"), TaskConfig: taskConfig("/bin/true")},
		plain: "running /bin/true\n",
		color: "\x1b[1mrunning /bin/true\x1b[0m\n",
	}, {
		name:  "selected-worker",
		event: event.SelectedWorker{Time: t0, Origin: origin("1"), WorkerName: "node-1"},
		plain: "selected worker: node-1\n",
		color: "\x1b[1mselected worker:\x1b[0m node-1\n",
	}, {
		name:  "waiting-for-worker",
		event: event.WaitingForWorker{Time: t0, Origin: origin("1")},
		plain: "no suitable workers found, waiting for worker...\n",
		color: "\x1b[1mno suitable workers found, waiting for worker...\x1b[0m\n",
	}, {
		name:  "initialize-check",
		event: event.InitializeCheck{Time: t0, Origin: origin("2/image-check"), Name: "image"},
		plain: "initializing check: image\n",
		color: "\x1b[1minitializing check:\x1b[0m image\n",
	}, {
		name:  "streaming-volume",
		event: event.StreamingVolume{Time: t0, Origin: origin("2"), Volume: "vol-1", SourceWorker: "node-1", DestWorker: "node-2"},
		plain: "streaming volume vol-1 from worker node-1\n",
		color: "\x1b[1mstreaming volume\x1b[0m vol-1 \x1b[1mfrom worker\x1b[0m node-1\n",
	}, {
		name:  "waiting-for-streamed-volume",
		event: event.WaitingForStreamedVolume{Time: t0, Origin: origin("2"), Volume: "vol-1", DestWorker: "node-2"},
		plain: "waiting for volume vol-1 to be streamed by another step\n",
		color: "\x1b[1mwaiting for volume\x1b[0m vol-1 \x1b[1mto be streamed by another step\x1b[0m\n",
	}, {
		name:  "error in bold red",
		event: event.Error{Message: "timeout exceeded", Origin: origin("2"), Time: t0},
		plain: "timeout exceeded\n",
		color: "\x1b[31;1mtimeout exceeded\x1b[0;22m\n",
	}, {
		name:  "status started writes nothing",
		event: event.Status{Status: event.BuildStatusStarted, Time: t0},
	}, {
		name:  "status fly does not know, without a newline",
		event: event.Status{Status: event.BuildStatusPending, Time: t0},
		plain: "unknown status: pending",
		color: "unknown status: pending",
	}}
	for _, f := range []struct {
		status event.BuildStatus
		color  string
	}{
		{event.BuildStatusSucceeded, "\x1b[32msucceeded\x1b[0m\n"},  // green
		{event.BuildStatusFailed, "\x1b[31mfailed\x1b[0m\n"},        // red
		{event.BuildStatusErrored, "\x1b[31;1merrored\x1b[0;22m\n"}, // bold red
		{event.BuildStatusAborted, "\x1b[35maborted\x1b[0m\n"},      // magenta
	} {
		tests = append(tests, renderCase{
			name:  "status " + string(f.status),
			event: event.Status{Status: f.status, Time: t0},
			plain: string(f.status) + "\n",
			color: f.color,
		})
	}
	silent := []event.Event{
		event.FinishTask{Time: t0, ExitStatus: 1, Origin: origin("2")},
		event.Initialize{Origin: origin("1"), Time: t0},
		event.Start{Origin: origin("1"), Time: t0},
		event.Finish{Origin: origin("1"), Time: t0, Succeeded: true},
		event.InitializeGet{Origin: origin("1"), Time: t0},
		event.StartGet{Origin: origin("1"), Time: t0},
		event.FinishGet{Origin: origin("1"), Time: t0, FetchedVersion: concourse.Version{"ref": "abc"}},
		event.InitializePut{Origin: origin("3"), Time: t0},
		event.StartPut{Origin: origin("3"), Time: t0},
		event.FinishPut{Origin: origin("3"), Time: t0, CreatedVersion: concourse.Version{"ref": "def"}},
		event.ImageCheck{Time: t0, Origin: origin("2"), Plan: []byte(`{"id":"2/image-check"}`)},
		event.ImageGet{Time: t0, Origin: origin("2"), Plan: []byte(`{"id":"2/image-get"}`)},
		event.SetPipelineChanged{Origin: origin("4"), Changed: true},
		event.AcrossSubsteps{Time: t0, Origin: origin("5")},
	}
	for _, e := range silent {
		tests = append(tests, renderCase{name: string(e.EventType()) + " writes nothing", event: e})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, c := range []struct {
				color bool
				want  string
			}{{false, tt.plain}, {true, tt.color}} {
				got, _ := renderAll(t, Options{Color: c.color}, tt.event)
				if diff := cmp.Diff(c.want, got); diff != "" {
					t.Errorf("Color %v (-want +got):\n%s", c.color, diff)
				}
			}
		})
	}
}

// build is a whole build as the ATC streams it: a get, then a task that fails.
var build = []event.Event{
	event.Status{Status: event.BuildStatusStarted, Time: t0},
	event.InitializeGet{Origin: origin("1"), Time: t0},
	event.StartGet{Origin: origin("1"), Time: t0},
	event.SelectedWorker{Time: t0, Origin: origin("1"), WorkerName: "node-1"},
	logEvent("1", event.OriginSourceStderr, "Cloning into '/tmp/build/get'...\n"),
	logEvent("1", event.OriginSourceStderr, "abc123 initial commit\n"),
	event.FinishGet{Origin: origin("1"), Time: t0 + 2, ExitStatus: 0, FetchedVersion: concourse.Version{"ref": "abc123"}},
	event.InitializeTask{Time: t0 + 2, Origin: origin("2"), TaskConfig: taskConfig("echo", "hi")},
	event.SelectedWorker{Time: t0 + 3, Origin: origin("2"), WorkerName: "node-2"},
	event.StartTask{Time: t0 + 3, Origin: origin("2"), TaskConfig: taskConfig("echo", "hi")},
	logEvent("2", event.OriginSourceStdout, "hi\n"),
	logEvent("2", event.OriginSourceStderr, "oh no\n"),
	event.FinishTask{Time: t0 + 4, ExitStatus: 1, Origin: origin("2")},
	event.Error{Message: "disk full", Origin: origin("3"), Time: t0 + 5},
	event.Status{Status: event.BuildStatusFailed, Time: t0 + 5},
}

func TestRenderBuild(t *testing.T) {
	tests := []struct {
		name string
		o    Options
		want string
	}{{
		name: "plain",
		want: "selected worker: node-1\n" +
			"Cloning into '/tmp/build/get'...\n" +
			"abc123 initial commit\n" +
			"initializing\n" +
			"selected worker: node-2\n" +
			"running echo hi\n" +
			"hi\n" +
			"oh no\n" +
			"disk full\n" +
			"failed\n",
	}, {
		name: "color",
		o:    Options{Color: true},
		want: "\x1b[1mselected worker:\x1b[0m node-1\n" +
			"Cloning into '/tmp/build/get'...\n" +
			"abc123 initial commit\n" +
			"\x1b[1minitializing\x1b[0m\n" +
			"\x1b[1mselected worker:\x1b[0m node-2\n" +
			"\x1b[1mrunning echo hi\x1b[0m\n" +
			"hi\n" +
			"oh no\n" +
			"\x1b[31;1mdisk full\x1b[0;22m\n" +
			"\x1b[31mfailed\x1b[0m\n",
	}, {
		name: "plain with timestamps",
		o:    Options{Timestamps: true},
		want: "12:34:56  selected worker: node-1\n" +
			"12:34:56  Cloning into '/tmp/build/get'...\n" +
			"12:34:56  abc123 initial commit\n" +
			"12:34:58  initializing\n" +
			"12:34:59  selected worker: node-2\n" +
			"12:34:59  running echo hi\n" +
			"12:34:56  hi\n" +
			"12:34:56  oh no\n" +
			"          disk full\n" +
			"12:35:01  failed\n",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, r := renderAll(t, tt.o, build...)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
			if got := r.Status(); got != event.BuildStatusFailed {
				t.Errorf("Status() = %q, want failed", got)
			}
			if got := r.ExitCode(); got != 1 {
				t.Errorf("ExitCode() = %d, want 1", got)
			}
		})
	}
}

func TestRenderTimestamps(t *testing.T) {
	tests := []struct {
		name   string
		events []event.Event
		want   string
	}{{
		name:   "every line of a log event",
		events: []event.Event{logEvent("1", event.OriginSourceStdout, "a\nb\nc\n")},
		want:   "12:34:56  a\n12:34:56  b\n12:34:56  c\n",
	}, {
		name: "a line left open is continued without a timestamp",
		events: []event.Event{
			event.Log{Time: t0, Payload: "downloading"},
			event.Log{Time: t0 + 1, Payload: "... done\nnext"},
			event.SelectedWorker{Time: t0 + 2, WorkerName: "node-1"},
		},
		want: "12:34:56  downloading... done\n12:34:57  nextselected worker: node-1\n",
	}, {
		name:   "an error has a blank timestamp",
		events: []event.Event{event.Error{Message: "interrupted", Time: t0}},
		want:   "          interrupted\n",
	}, {
		name: "an event without a time has a blank timestamp",
		events: []event.Event{
			event.Initialize{Origin: origin("1")},
			event.InitializeTask{Origin: origin("1")},
		},
		want: "          initializing\n",
	}, {
		name:   "started writes nothing",
		events: []event.Event{event.Status{Status: event.BuildStatusStarted, Time: t0}, event.Status{Status: event.BuildStatusSucceeded, Time: t0 + 60}},
		want:   "12:35:56  succeeded\n",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := renderAll(t, Options{Timestamps: true}, tt.events...)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRenderStopsAtFinalStatus(t *testing.T) {
	got, r := renderAll(t, Options{},
		event.Status{Status: event.BuildStatusAborted, Time: t0},
		logEvent("1", event.OriginSourceStdout, "late\n"),
		event.Status{Status: event.BuildStatusSucceeded, Time: t0},
	)
	if diff := cmp.Diff("aborted\n", got); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
	if got := r.Status(); got != event.BuildStatusAborted {
		t.Errorf("Status() = %q, want aborted", got)
	}
}

func TestExitCode(t *testing.T) {
	tests := []struct {
		status event.BuildStatus
		want   int
	}{
		{event.BuildStatusSucceeded, 0},
		{event.BuildStatusFailed, 1},
		{event.BuildStatusErrored, 2},
		{event.BuildStatusAborted, 3},
		{"", 0},
		{event.BuildStatusStarted, 0},
		{event.BuildStatusPending, 255},
		{"exploded", 255},
	}
	for _, tt := range tests {
		name := string(tt.status)
		if name == "" {
			name = "no status"
		}
		t.Run(name, func(t *testing.T) {
			if got := ExitCode(tt.status); got != tt.want {
				t.Errorf("ExitCode(%q) = %d, want %d", tt.status, got, tt.want)
			}
		})
	}
}

func TestRendererExitCode(t *testing.T) {
	finish := func(code event.ExitStatus) event.Event { return event.FinishTask{Time: t0, ExitStatus: code} }
	status := func(s event.BuildStatus) event.Event { return event.Status{Status: s, Time: t0} }
	tests := []struct {
		name   string
		events []event.Event
		want   int
	}{
		{"nothing rendered", nil, 0},
		{"stream ended after a task", []event.Event{status(event.BuildStatusStarted), finish(7)}, 7},
		{"failed, task exited 0", []event.Event{finish(0), status(event.BuildStatusFailed)}, 1},
		{"failed, task exited 42", []event.Event{finish(42), status(event.BuildStatusFailed)}, 42},
		{"errored, no task", []event.Event{status(event.BuildStatusErrored)}, 2},
		{"aborted, no task", []event.Event{status(event.BuildStatusAborted)}, 3},
		{"succeeded after a failed task in a try", []event.Event{finish(1), status(event.BuildStatusSucceeded)}, 1},
		{"the last task counts", []event.Event{finish(1), finish(0), status(event.BuildStatusSucceeded)}, 0},
		{"unknown status", []event.Event{finish(42), status(event.BuildStatusPending)}, 255},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, r := renderAll(t, Options{}, tt.events...)
			if got := r.ExitCode(); got != tt.want {
				t.Errorf("ExitCode() = %d, want %d", got, tt.want)
			}
		})
	}
}

type failingWriter struct{}

var errDiskFull = errors.New("disk full")

func (failingWriter) Write([]byte) (int, error) { return 0, errDiskFull }

func TestRenderWriteError(t *testing.T) {
	r := New(failingWriter{}, Options{})
	err := r.Render(event.InitializeTask{Time: t0})
	if !errors.Is(err, errDiskFull) {
		t.Fatalf("Render() = %v, want an error wrapping %v", err, errDiskFull)
	}
}
