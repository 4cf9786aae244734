package tektonengine

import (
	"testing"

	"github.com/concourse/concourse/atc"
	atcevent "github.com/concourse/concourse/atc/event"
	"github.com/concourse/concourse/atc/exec"
	"github.com/concourse/concourse/vars"
	"github.com/google/go-cmp/cmp"
)

// A task's initialize-task and start-task show its run as Concourse 8 shows it: the
// build's vars interpolated, the credentials the build has interpolated redacted, a var
// the build does not have as written; with --disable-redact-secrets, the values.
func TestShownTaskConfig(t *testing.T) {
	config := atcevent.TaskConfig{Platform: "linux", Run: atcevent.TaskRunConfig{
		Path: "/bin/((shell))",
		Args: []string{"-c", `text="((vs:echo_text))"; echo ((.:local)) ((missing))`},
	}}
	for _, tt := range []struct {
		name   string
		reveal bool
		want   []string
	}{
		{"redacted", false, []string{"-c", `text="((redacted))"; echo ((.:local)) ((missing))`}},
		{"--disable-redact-secrets", true, []string{"-c", `text="text-from-var-source"; echo ((.:local)) ((missing))`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			was := atc.DisableRedactSecrets
			atc.DisableRedactSecrets = tt.reveal
			t.Cleanup(func() { atc.DisableRedactSecrets = was })
			// The credential manager's value and the var source's, both tracked once
			// the build has interpolated them.
			state := exec.NewRunState(noopStepper, sourced{"vs:echo_text": "text-from-var-source", "shell": "sh"})
			for _, e := range []atc.Event{atcevent.InitializeTask{TaskConfig: config}, atcevent.StartTask{TaskConfig: config}} {
				var got atcevent.TaskConfig
				switch shown := shownTaskConfig(e, state).(type) {
				case atcevent.InitializeTask:
					got = shown.TaskConfig
				case atcevent.StartTask:
					got = shown.TaskConfig
				default:
					t.Fatalf("%T became %T", e, shown)
				}
				if got.Run.Path != "/bin/((redacted))" && !tt.reveal || tt.reveal && got.Run.Path != "/bin/sh" {
					t.Errorf("%s: path %q", e.EventType(), got.Run.Path)
				}
				if diff := cmp.Diff(tt.want, got.Run.Args); diff != "" {
					t.Errorf("%s: args (-want +got):\n%s", e.EventType(), diff)
				}
			}
		})
	}
	// Another event is as it was, and so is any event of a build with no state.
	state := exec.NewRunState(noopStepper, sourced{"vs:echo_text": "text-from-var-source"})
	log := atcevent.Log{Payload: "((vs:echo_text))"}
	if got := shownTaskConfig(log, state); got != log {
		t.Errorf("a log became %v", got)
	}
	start := atcevent.StartTask{TaskConfig: config}
	if got := shownTaskConfig(start, nil); !cmp.Equal(got, atc.Event(start)) {
		t.Errorf("with no state, a start-task became %v", got)
	}
}

// sourced are vars by their whole reference, as the credential manager and the
// pipeline's var sources give them.
type sourced map[string]any

func (v sourced) Get(ref vars.Reference) (any, bool, error) {
	val, ok := v[ref.String()]
	return val, ok, nil
}

func (v sourced) List() ([]vars.Reference, error) { return nil, nil }
