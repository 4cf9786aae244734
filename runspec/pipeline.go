package runspec

import (
	"encoding/json"
	"errors"
)

// PipelineToSet is the pipeline a set_pipeline step sets. No ATC runs in the step's pod,
// so the runner hands it to the backend that follows the build: once it has read and
// validated the child pipeline, it writes Frame as its only output on stdout, and exits
// succeeded. The backend (tektonrun) reads it back from the step's log with
// ParsePipelineFrame.
type PipelineToSet struct {
	// Team is the team the step names ("": the build's own team).
	Team string `json:"team,omitempty"`
	// Pipeline is the pipeline's name, `self` already replaced by the build's pipeline.
	Pipeline     string         `json:"pipeline"`
	InstanceVars map[string]any `json:"instance_vars,omitempty"`
	// Config is the child pipeline's document once its static vars (the step's vars,
	// var_files and instance_vars) are applied, as JSON, its top-level keys those
	// Concourse keeps: what Concourse's set_pipeline step gives atc.UnmarshalConfig.
	Config json.RawMessage `json:"config,omitempty"`
	// Warnings are the runner's validation warnings, each a line without its newline. An
	// ATC shows its own validator's instead.
	Warnings []string `json:"warnings,omitempty"`
}

// Frame is the line that hands p to the backend, newline included (see frame.go).
func (p PipelineToSet) Frame() ([]byte, error) {
	return writeFrame(frameSetPipeline, p)
}

// IsPipelineFrame tells whether a log line is meant as a set-pipeline frame (with or
// without its newline): it begins with the frame's prefix.
func IsPipelineFrame(line string) bool {
	return isFrame(frameSetPipeline, line)
}

// ParsePipelineFrame reads a line written by Frame (with or without its newline). A line
// that IsPipelineFrame but cannot be read (another version, a cut or altered payload) is
// an error.
func ParsePipelineFrame(line string) (PipelineToSet, error) {
	var p PipelineToSet
	if err := readFrame(frameSetPipeline, line, &p); err != nil {
		return PipelineToSet{}, err
	}
	if p.Pipeline == "" || len(p.Config) == 0 {
		return PipelineToSet{}, errors.New("the set-pipeline frame names no pipeline or config")
	}
	return p, nil
}
