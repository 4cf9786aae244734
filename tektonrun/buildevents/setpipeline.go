package buildevents

import (
	"github.com/concourse-tekton/concourse-tekton/concourse/event"
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// PipelineToSet is a set_pipeline step's pipeline, for the caller to set (Event.Pipeline):
// an ATC sets it as Concourse's set_pipeline step does (its team rules, the diff, the
// save), a caller with no ATC says what would be set (Logs).
//
// It comes from the frame the step's runner writes as the last line of its log when it
// succeeded (runspec.PipelineToSet), in place of that line: the frame of a set_pipeline
// step that did not succeed, or not on its last line, or of any other step, is an
// ordinary log line. It is delivered after the step's other log lines and before its end.
type PipelineToSet struct {
	Origin event.Origin `json:"origin"`
	// Time is when the runner wrote the frame.
	Time int64 `json:"time"`
	runspec.PipelineToSet
	// Error says why the frame could not be read (a runner of another release): the
	// other fields are then empty, and the pipeline cannot be set.
	Error string `json:"error,omitempty"`
}

// Logs are the lines a caller with no ATC shows in its place: the runner's validation
// warnings on stderr and "setting pipeline: NAME" on stdout (or why the frame could not be
// read, on stderr).
func (p PipelineToSet) Logs() []event.Log {
	stderr := event.Origin{ID: p.Origin.ID, Source: event.OriginSourceStderr}
	if p.Error != "" {
		return []event.Log{{Time: p.Time, Origin: stderr, Payload: p.Error + "\n"}}
	}
	var logs []event.Log
	for _, w := range p.Warnings {
		logs = append(logs, event.Log{Time: p.Time, Origin: stderr, Payload: w + "\n"})
	}
	stdout := event.Origin{ID: p.Origin.ID, Source: event.OriginSourceStdout}
	return append(logs, event.Log{Time: p.Time, Origin: stdout, Payload: "setting pipeline: " + p.Pipeline + "\n"})
}
