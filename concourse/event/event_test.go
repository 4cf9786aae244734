package event_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/event"
)

// mustPublic is the public plan of a get with a custom type's image sub-plans, the payload
// image-check and image-get events carry.
func mustPublic(t *testing.T, planJSON string) json.RawMessage {
	t.Helper()
	var p concourse.Plan
	if err := json.Unmarshal([]byte(planJSON), &p); err != nil {
		t.Fatalf("decoding plan: %v", err)
	}
	pub, err := event.Public(p)
	if err != nil {
		t.Fatalf("Public: %v", err)
	}
	return pub
}

func TestEventsWire(t *testing.T) {
	imageCheck := mustPublic(t, `{"id":"2/image-check","check":{"name":"image","type":"registry-image","source":{"repository":"busybox"},"image":{"base_type":"registry-image"}}}`)
	imageGet := mustPublic(t, `{"id":"2/image-get","get":{"name":"image","type":"registry-image","source":{"repository":"busybox"},"image":{"base_type":"registry-image"},"version_from":"2/image-check"}}`)
	substep, err := event.PublicSubstep(concourse.Plan{ID: "5/0/1", LoadVar: &concourse.LoadVarPlan{Name: "v", File: "f"}}, []any{"a", 1.0})
	if err != nil {
		t.Fatal(err)
	}
	origin := event.Origin{ID: "2"}
	config := event.TaskConfig{
		Platform: "linux",
		Image:    "docker:///busybox",
		Run:      event.TaskRunConfig{Path: "sh", Args: []string{"-c", "make"}, Dir: "src"},
		Inputs:   []event.TaskInputConfig{{Name: "repo", Path: "src"}},
	}

	// Each golden string is the envelope as the ATC writes it: the payload's keys in the
	// ATC's order, `omitempty` where the ATC has it, and the current version.
	tests := []struct {
		name  string
		event event.Event
		want  string
	}{
		{
			name:  "status",
			event: event.Status{Status: event.BuildStatusStarted, Time: 1700000000},
			want:  `{"data":{"status":"started","time":1700000000},"event":"status","version":"1.0","event_id":"%d"}`,
		},
		{
			name:  "log",
			event: event.Log{Time: 1700000001, Origin: event.Origin{ID: "2", Source: event.OriginSourceStdout}, Payload: "hello\n"},
			want:  `{"data":{"time":1700000001,"origin":{"id":"2","source":"stdout"},"payload":"hello\n"},"event":"log","version":"5.1","event_id":"%d"}`,
		},
		{
			name:  "error",
			event: event.Error{Message: "timeout exceeded", Origin: origin, Time: 1700000002},
			want:  `{"data":{"message":"timeout exceeded","origin":{"id":"2"},"time":1700000002},"event":"error","version":"4.1","event_id":"%d"}`,
		},
		{
			name:  "initialize",
			event: event.Initialize{Origin: origin, Time: 1700000003},
			want:  `{"data":{"origin":{"id":"2"},"time":1700000003},"event":"initialize","version":"1.0","event_id":"%d"}`,
		},
		{
			// The ATC leaves out a zero time here; Finish keeps it.
			name:  "start without time",
			event: event.Start{Origin: origin},
			want:  `{"data":{"origin":{"id":"2"}},"event":"start","version":"1.0","event_id":"%d"}`,
		},
		{
			name:  "finish",
			event: event.Finish{Origin: origin, Succeeded: false},
			want:  `{"data":{"origin":{"id":"2"},"time":0,"succeeded":false},"event":"finish","version":"1.0","event_id":"%d"}`,
		},
		{
			name:  "initialize-task",
			event: event.InitializeTask{Time: 1700000004, Origin: origin, TaskConfig: config},
			want:  `{"data":{"time":1700000004,"origin":{"id":"2"},"config":{"platform":"linux","image":"docker:///busybox","run":{"path":"sh","args":["-c","make"],"dir":"src"},"inputs":[{"name":"repo","path":"src"}]}},"event":"initialize-task","version":"4.0","event_id":"%d"}`,
		},
		{
			// A task config with no args and no inputs has nulls, as the ATC's has.
			name:  "start-task",
			event: event.StartTask{Time: 1700000005, Origin: origin, TaskConfig: event.TaskConfig{Platform: "linux", Run: event.TaskRunConfig{Path: "true"}}},
			want:  `{"data":{"time":1700000005,"origin":{"id":"2"},"config":{"platform":"linux","image":"","run":{"path":"true","args":null,"dir":""},"inputs":null}},"event":"start-task","version":"5.0","event_id":"%d"}`,
		},
		{
			name:  "finish-task",
			event: event.FinishTask{Time: 1700000006, ExitStatus: 1, Origin: origin},
			want:  `{"data":{"time":1700000006,"exit_status":1,"origin":{"id":"2"}},"event":"finish-task","version":"4.0","event_id":"%d"}`,
		},
		{
			name:  "initialize-get",
			event: event.InitializeGet{Origin: event.Origin{ID: "1"}, Time: 1700000007},
			want:  `{"data":{"origin":{"id":"1"},"time":1700000007},"event":"initialize-get","version":"2.0","event_id":"%d"}`,
		},
		{
			name:  "start-get",
			event: event.StartGet{Origin: event.Origin{ID: "1"}, Time: 1700000008},
			want:  `{"data":{"origin":{"id":"1"},"time":1700000008},"event":"start-get","version":"1.0","event_id":"%d"}`,
		},
		{
			name: "finish-get",
			event: event.FinishGet{
				Origin:          event.Origin{ID: "1"},
				Time:            1700000009,
				ExitStatus:      0,
				FetchedVersion:  concourse.Version{"ref": "abc123"},
				FetchedMetadata: concourse.Metadata{{Name: "author", Value: "me"}},
			},
			want: `{"data":{"origin":{"id":"1"},"time":1700000009,"exit_status":0,"version":{"ref":"abc123"},"metadata":[{"name":"author","value":"me"}]},"event":"finish-get","version":"5.1","event_id":"%d"}`,
		},
		{
			name:  "initialize-put",
			event: event.InitializePut{Origin: event.Origin{ID: "3"}, Time: 1700000010},
			want:  `{"data":{"origin":{"id":"3"},"time":1700000010},"event":"initialize-put","version":"2.0","event_id":"%d"}`,
		},
		{
			name:  "start-put",
			event: event.StartPut{Origin: event.Origin{ID: "3"}, Time: 1700000011},
			want:  `{"data":{"origin":{"id":"3"},"time":1700000011},"event":"start-put","version":"1.0","event_id":"%d"}`,
		},
		{
			// A failed put has no version: null, and no metadata at all.
			name:  "finish-put",
			event: event.FinishPut{Origin: event.Origin{ID: "3"}, Time: 1700000012, ExitStatus: 2},
			want:  `{"data":{"origin":{"id":"3"},"time":1700000012,"exit_status":2,"version":null},"event":"finish-put","version":"5.1","event_id":"%d"}`,
		},
		{
			name:  "initialize-check",
			event: event.InitializeCheck{Origin: event.Origin{ID: "2/image-check"}, Time: 1700000013, Name: "image"},
			want:  `{"data":{"origin":{"id":"2/image-check"},"time":1700000013,"name":"image"},"event":"initialize-check","version":"1.0","event_id":"%d"}`,
		},
		{
			name:  "selected-worker",
			event: event.SelectedWorker{Time: 1700000014, Origin: origin, WorkerName: "worker-0"},
			want:  `{"data":{"time":1700000014,"origin":{"id":"2"},"selected_worker":"worker-0"},"event":"selected-worker","version":"1.0","event_id":"%d"}`,
		},
		{
			name:  "waiting-for-worker",
			event: event.WaitingForWorker{Time: 1700000015, Origin: origin},
			want:  `{"data":{"time":1700000015,"origin":{"id":"2"}},"event":"waiting-for-worker","version":"1.0","event_id":"%d"}`,
		},
		{
			name:  "streaming-volume",
			event: event.StreamingVolume{Time: 1700000016, Origin: origin, Volume: "repo", SourceWorker: "worker-0", DestWorker: "worker-1"},
			want:  `{"data":{"time":1700000016,"origin":{"id":"2"},"volume":"repo","source_worker":"worker-0","dest_worker":"worker-1"},"event":"streaming-volume","version":"1.0","event_id":"%d"}`,
		},
		{
			name:  "waiting-for-streamed-volume",
			event: event.WaitingForStreamedVolume{Time: 1700000017, Origin: origin, Volume: "repo", DestWorker: "worker-1"},
			want:  `{"data":{"time":1700000017,"origin":{"id":"2"},"volume":"repo","dest_worker":"worker-1"},"event":"waiting-for-streamed-volume","version":"1.0","event_id":"%d"}`,
		},
		{
			name:  "image-check",
			event: event.ImageCheck{Time: 1700000018, Origin: origin, Plan: imageCheck},
			want:  `{"data":{"time":1700000018,"origin":{"id":"2"},"plan":{"id":"2/image-check","check":{"name":"image","type":"registry-image"}}},"event":"image-check","version":"1.1","event_id":"%d"}`,
		},
		{
			name:  "image-get",
			event: event.ImageGet{Time: 1700000019, Origin: origin, Plan: imageGet},
			want:  `{"data":{"time":1700000019,"origin":{"id":"2"},"plan":{"id":"2/image-get","get":{"name":"image","type":"registry-image"}}},"event":"image-get","version":"1.1","event_id":"%d"}`,
		},
		{
			// set-pipeline-changed has no time.
			name:  "set-pipeline-changed",
			event: event.SetPipelineChanged{Origin: event.Origin{ID: "4"}, Changed: true},
			want:  `{"data":{"origin":{"id":"4"},"changed":true},"event":"set-pipeline-changed","version":"1.0","event_id":"%d"}`,
		},
		{
			name:  "across-substeps",
			event: event.AcrossSubsteps{Time: 1700000020, Origin: event.Origin{ID: "5"}, Substeps: []json.RawMessage{substep}},
			want:  `{"data":{"time":1700000020,"origin":{"id":"5"},"substeps":[{"step":{"id":"5/0/1","load_var":{"name":"v"}},"values":["a",1]}]},"event":"across-substeps","version":"1.0","event_id":"%d"}`,
		},
	}
	seen := map[event.EventType]bool{}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			seen[tc.event.EventType()] = true
			got, err := event.Marshal(tc.event, i)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			if diff := cmp.Diff(fmt.Sprintf(tc.want, i), string(got)); diff != "" {
				t.Errorf("Marshal (-want +got):\n%s", diff)
			}
			parsed, env, err := event.Unmarshal(got)
			if err != nil {
				t.Fatalf("Unmarshal: %v", err)
			}
			if diff := cmp.Diff(tc.event, parsed); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
			wantEnv := event.Envelope{Event: tc.event.EventType(), Version: tc.event.Version(), EventID: fmt.Sprint(i)}
			env.Data = nil
			if diff := cmp.Diff(wantEnv, env); diff != "" {
				t.Errorf("envelope (-want +got):\n%s", diff)
			}
		})
	}
	// Every type of the catalogue has a golden case above.
	if len(seen) != 24 {
		t.Errorf("the table covers %d event types, want the 24 of the catalogue", len(seen))
	}
}

func TestParseVersions(t *testing.T) {
	data := json.RawMessage(`{"time":1,"origin":{"id":"2","source":"stderr"},"payload":"x","added_in_5_9":true}`)
	tests := []struct {
		name    string
		env     event.Envelope
		want    event.Event
		wantErr error
	}{
		{
			// A newer minor version only adds fields: it is read with the type we know.
			name: "newer minor version",
			env:  event.Envelope{Data: &data, Event: event.EventTypeLog, Version: "5.9"},
			want: event.Log{Time: 1, Origin: event.Origin{ID: "2", Source: event.OriginSourceStderr}, Payload: "x"},
		},
		{
			name: "older minor version",
			env:  event.Envelope{Data: &data, Event: event.EventTypeLog, Version: "5.0"},
			want: event.Log{Time: 1, Origin: event.Origin{ID: "2", Source: event.OriginSourceStderr}, Payload: "x"},
		},
		{
			name:    "incompatible major version",
			env:     event.Envelope{Data: &data, Event: event.EventTypeLog, Version: "6.0"},
			wantErr: &event.UnknownEventVersionError{Type: "log", Version: "6.0", KnownVersions: []event.EventVersion{"5.1"}},
		},
		{
			name:    "deprecated major version",
			env:     event.Envelope{Data: &data, Event: event.EventTypeLog, Version: "3.0"},
			wantErr: &event.UnknownEventVersionError{Type: "log", Version: "3.0", KnownVersions: []event.EventVersion{"5.1"}},
		},
		{
			name:    "unknown type",
			env:     event.Envelope{Data: &data, Event: "input", Version: "2.0"},
			wantErr: &event.UnknownEventTypeError{Type: "input"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := event.Parse(tc.env)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Parse (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantErr, err); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	t.Run("typed errors", func(t *testing.T) {
		_, _, err := event.Unmarshal([]byte(`{"data":{},"event":"finish-task","version":"3.0","event_id":"1"}`))
		var verr *event.UnknownEventVersionError
		if !errors.As(err, &verr) {
			t.Fatalf("got %v, want an *UnknownEventVersionError", err)
		}
		if want := `unsupported version 3.0 of event "finish-task" (supported: 4.0)`; err.Error() != want {
			t.Errorf("message %q, want %q", err, want)
		}
		_, _, err = event.Unmarshal([]byte(`{"data":{},"event":"nope","version":"1.0"}`))
		var terr *event.UnknownEventTypeError
		if !errors.As(err, &terr) {
			t.Fatalf("got %v, want an *UnknownEventTypeError", err)
		}
	})
	// Malformed input is an error that says which event it was, not a zero event.
	for _, tc := range []struct{ name, in, want string }{
		{"not json", `{`, "decoding event envelope"},
		{"no data", `{"event":"status","version":"1.0"}`, "status event version 1.0 has no data"},
		{"wrong payload type", `{"data":{"time":"soon"},"event":"status","version":"1.0"}`, "decoding status event version 1.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := event.Unmarshal([]byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error %v, want one containing %q", err, tc.want)
			}
		})
	}
	if _, err := event.Marshal(nil, 0); err == nil {
		t.Error("Marshal(nil) succeeded, want an error")
	}
}

func TestIsCompatibleWith(t *testing.T) {
	tests := []struct {
		v, other event.EventVersion
		want     bool
	}{
		{"5.1", "5.1", true},
		{"5.1", "5.0", true},
		{"5.1", "5.12", true},
		{"5.1", "6.0", false},
		{"5.1", "50.1", false},
		{"1.0", "1", true},
		{"1.0", "", false},
		{"", "", false},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s~%s", tc.v, tc.other), func(t *testing.T) {
			if got := tc.v.IsCompatibleWith(tc.other); got != tc.want {
				t.Errorf("IsCompatibleWith = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestBuildStatusIsRunning(t *testing.T) {
	tests := []struct {
		status event.BuildStatus
		want   bool
	}{
		{event.BuildStatusPending, true},
		{event.BuildStatusStarted, true},
		{event.BuildStatusSucceeded, false},
		{event.BuildStatusFailed, false},
		{event.BuildStatusErrored, false},
		{event.BuildStatusAborted, false},
	}
	for _, tc := range tests {
		t.Run(string(tc.status), func(t *testing.T) {
			if got := tc.status.IsRunning(); got != tc.want {
				t.Errorf("IsRunning = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNewTaskConfig(t *testing.T) {
	cfg, err := concourse.ParseTaskConfig([]byte(`
platform: linux
rootfs_uri: docker:///busybox
image_resource: {type: registry-image, source: {repository: busybox}}
params: {TOKEN: s3cr3t}
inputs: [{name: repo, path: src, optional: true}, {name: cache}]
outputs: [{name: out}]
run: {path: sh, args: [-c, "echo s3cr3t"], dir: src, user: root}
`))
	if err != nil {
		t.Fatal(err)
	}
	got := event.NewTaskConfig(cfg)
	// Params, outputs, the image resource and the user are not part of the event.
	want := event.TaskConfig{
		Platform: "linux",
		Image:    "docker:///busybox",
		Run:      event.TaskRunConfig{Path: "sh", Args: []string{"-c", "echo s3cr3t"}, Dir: "src"},
		Inputs:   []event.TaskInputConfig{{Name: "repo", Path: "src"}, {Name: "cache"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("NewTaskConfig (-want +got):\n%s", diff)
	}

	redacted := got.Redacted(func(s string) string { return strings.ReplaceAll(s, "s3cr3t", "((redacted))") })
	want.Run.Args = []string{"-c", "echo ((redacted))"}
	if diff := cmp.Diff(want, redacted); diff != "" {
		t.Errorf("Redacted (-want +got):\n%s", diff)
	}
	// Redacted works on a copy: the config it was called on keeps its args.
	if got.Run.Args[1] != "echo s3cr3t" {
		t.Errorf("Redacted changed its receiver's args: %q", got.Run.Args)
	}
}

// samplePlan has every plan type, with sources, params, vars and configs that the public
// plan must drop.
const samplePlan = `{
  "id": "20",
  "ensure": {
    "step": {
      "id": "1e",
      "on_success": {
        "step": {
          "id": "1d",
          "do": [
            {"id": "3", "get": {
              "name": "repo", "resource": "repo", "type": "git",
              "source": {"uri": "https://example.com/repo.git", "private_key": "secret"},
              "params": {"depth": 1},
              "image": {
                "check_plan": {"id": "3/image-check", "check": {"name": "git", "type": "registry-image", "source": {"repository": "concourse/git-resource"}, "image": {"base_type": "registry-image"}, "tags": ["t"]}},
                "get_plan": {"id": "3/image-get", "get": {"name": "git", "type": "registry-image", "source": {"repository": "concourse/git-resource"}, "image": {"base_type": "registry-image"}, "version_from": "3/image-check"}}
              },
              "version": {"ref": "abc"}
            }},
            {"id": "9", "in_parallel": {"steps": [
              {"id": "4", "task": {"name": "unit", "privileged": true, "hermetic": false, "config": {"platform": "linux", "run": {"path": "make"}, "params": {"TOKEN": "secret"}}, "params": {"X": "1"}, "vars": {"v": "secret"}}},
              {"id": "7", "retry": [
                {"id": "5", "attempts": [1], "task": {"name": "flaky", "privileged": false, "hermetic": true, "config_path": "ci/flaky.yml"}},
                {"id": "6", "attempts": [2], "task": {"name": "flaky", "privileged": false, "hermetic": true, "config_path": "ci/flaky.yml"}}
              ]},
              {"id": "8", "timeout": {"duration": "1m", "step": {"id": "a", "try": {"step": {"id": "b", "run": {"message": "go", "type": "proto", "object": {"k": "secret"}, "privileged": true}}}}}}
            ], "limit": 2, "fail_fast": true}},
            {"id": "10", "across": {"vars": [{"name": "env", "values": ["dev", "prod"], "max_in_flight": "all"}], "substep_template": "{\"id\":\"c\",\"load_var\":{\"name\":\"v\",\"file\":\"f\"}}", "fail_fast": true}},
            {"id": "11", "set_pipeline": {"name": "child", "file": "ci/child.yml", "team": "main", "vars": {"password": "secret"}, "instance_vars": {"branch": "main"}}},
            {"id": "12", "load_var": {"name": "version", "file": "repo/version", "format": "trim", "reveal": true}},
            {"id": "13", "on_failure": {"step": {"id": "14", "put": {"name": "out", "resource": "out", "type": "s3", "source": {"secret": "secret"}, "params": {"file": "x"}, "inputs": "detect", "image": {"base_type": "s3"}}}, "on_failure": {"id": "15", "artifact_output": {"name": "out"}}}},
            {"id": "16", "on_error": {"step": {"id": "17", "artifact_input": {"artifact_id": 42, "name": "in"}}, "on_error": {"id": "18", "do": []}}},
            {"id": "19", "on_abort": {"step": {"id": "1a", "dependent_get": {"name": "out", "resource": "out"}}, "on_abort": {"id": "1b", "check": {"name": "c", "type": "git", "source": {"k": "secret"}, "image": {"base_type": "git"}}}}}
          ]
        },
        "on_success": {"id": "1c", "retry": []}
      }
    },
    "ensure": {"id": "1f", "in_parallel": {"steps": []}}
  }
}`

const samplePublic = `{"id":"20","ensure":{"step":{"id":"1e","on_success":{"step":{"id":"1d","do":[` +
	`{"id":"3","get":{"name":"repo","type":"git","resource":"repo","version":{"ref":"abc"},` +
	`"image_get_plan":{"id":"3/image-get","get":{"name":"git","type":"registry-image"}},` +
	`"image_check_plan":{"id":"3/image-check","check":{"name":"git","type":"registry-image"}}}},` +
	`{"id":"9","in_parallel":{"steps":[` +
	`{"id":"4","task":{"name":"unit","privileged":true,"hermetic":false}},` +
	`{"id":"7","retry":[{"id":"5","task":{"name":"flaky","privileged":false,"hermetic":true}},{"id":"6","task":{"name":"flaky","privileged":false,"hermetic":true}}]},` +
	`{"id":"8","timeout":{"step":{"id":"a","try":{"step":{"id":"b","run":{"message":"go","type":"proto","privileged":true}}}},"duration":"1m"}}` +
	`],"limit":2,"fail_fast":true}},` +
	`{"id":"10","across":{"vars":[{"name":"env"}],"fail_fast":true}},` +
	`{"id":"11","set_pipeline":{"name":"child","team":"main","instance_vars":{"branch":"main"}}},` +
	`{"id":"12","load_var":{"name":"version"}},` +
	`{"id":"13","on_failure":{"step":{"id":"14","put":{"name":"out","type":"s3","resource":"out"}},"on_failure":{"id":"15","artifact_output":{"name":"out"}}}},` +
	`{"id":"16","on_error":{"step":{"id":"17","artifact_input":{"artifact_id":42,"name":"in"}},"on_error":{"id":"18","do":[]}}},` +
	`{"id":"19","on_abort":{"step":{"id":"1a","dependent_get":{"name":"out","type":"","resource":"out"}},"on_abort":{"id":"1b","check":{"name":"c","type":"git"}}}}` +
	`]},"on_success":{"id":"1c","retry":[]}}},"ensure":{"id":"1f","in_parallel":{"steps":[]}}}}`

func TestPublic(t *testing.T) {
	got := mustPublic(t, samplePlan)
	if diff := cmp.Diff(samplePublic, string(got)); diff != "" {
		t.Errorf("Public (-want +got):\n%s", diff)
	}
	// Nothing secret survives, wherever it was in the plan.
	if strings.Contains(string(got), "secret") {
		t.Errorf("the public plan leaks a secret: %s", got)
	}
}

func TestPublicSubstep(t *testing.T) {
	tests := []struct {
		name   string
		step   concourse.Plan
		values []any
		want   string
	}{
		{
			name:   "values of every JSON type",
			step:   concourse.Plan{ID: "5/1/2", Task: &concourse.TaskPlan{Name: "deploy", Params: concourse.TaskEnv{"ENV": "prod"}}},
			values: []any{"prod", 2.0, true, map[string]any{"region": "eu"}},
			want:   `{"step":{"id":"5/1/2","task":{"name":"deploy","privileged":false,"hermetic":false}},"values":["prod",2,true,{"region":"eu"}]}`,
		},
		{
			name: "no values",
			step: concourse.Plan{ID: "5/0/1", ArtifactOutput: &concourse.ArtifactOutputPlan{Name: "o"}},
			want: `{"step":{"id":"5/0/1","artifact_output":{"name":"o"}},"values":null}`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := event.PublicSubstep(tc.step, tc.values)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("PublicSubstep (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := event.PublicSubstep(concourse.Plan{ID: "1"}, []any{func() {}}); err == nil {
		t.Error("PublicSubstep with a value JSON cannot encode succeeded, want an error")
	}
}
