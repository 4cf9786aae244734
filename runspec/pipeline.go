package runspec

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
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

// The frame of a PipelineToSet: one line that is an OSC escape sequence, which terminals
// do not display,
//
//	ESC ] concourse-tekton;set-pipeline;<version>;<base64 of the JSON> BEL \n
//
// The payload is standard base64 (no ';', BEL or newline in it), so the line cannot be
// cut or mistaken for another; the version says how to read the JSON.
const (
	framePrefix = "\x1b]concourse-tekton;set-pipeline;"
	frameEnd    = "\x07"
	// FrameVersion is the version of the frames the runner writes.
	FrameVersion = "1"
)

// Frame is the line that hands p to the backend, newline included.
func (p PipelineToSet) Frame() ([]byte, error) {
	data, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("encoding the pipeline to set: %w", err)
	}
	var b bytes.Buffer
	b.WriteString(framePrefix + FrameVersion + ";")
	b.WriteString(base64.StdEncoding.EncodeToString(data))
	b.WriteString(frameEnd + "\n")
	return b.Bytes(), nil
}

// IsPipelineFrame tells whether a log line is meant as a frame (with or without its
// newline): it begins with the frame's prefix.
func IsPipelineFrame(line string) bool {
	return strings.HasPrefix(line, framePrefix)
}

// ParsePipelineFrame reads a line written by Frame (with or without its newline). A line
// that IsPipelineFrame but cannot be read (another version, a cut or altered payload) is
// an error.
func ParsePipelineFrame(line string) (PipelineToSet, error) {
	rest, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), framePrefix)
	if !ok {
		return PipelineToSet{}, errors.New("not a set-pipeline frame")
	}
	rest, ok = strings.CutSuffix(rest, frameEnd)
	if !ok {
		return PipelineToSet{}, errors.New("the set-pipeline frame is cut short")
	}
	version, payload, ok := strings.Cut(rest, ";")
	if !ok {
		return PipelineToSet{}, errors.New("the set-pipeline frame has no version")
	}
	if version != FrameVersion {
		return PipelineToSet{}, fmt.Errorf("a set-pipeline frame of version %q, which this backend does not read (it reads %s): use a runner image and a backend of the same release", version, FrameVersion)
	}
	data, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		return PipelineToSet{}, fmt.Errorf("reading the set-pipeline frame: %w", err)
	}
	var p PipelineToSet
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&p); err != nil {
		return PipelineToSet{}, fmt.Errorf("reading the set-pipeline frame: %w", err)
	}
	if p.Pipeline == "" || len(p.Config) == 0 {
		return PipelineToSet{}, errors.New("the set-pipeline frame names no pipeline or config")
	}
	return p, nil
}

// A step that may still end without having started (a task whose inputs are missing or
// whose user is unknown, which Concourse only initializes; a step of a fail-fast group
// that fired, which Concourse never shows) announces its start: right before its process
// (a task's) or its body (any other step) begins, the runner writes StartMark on stdout, as
// the first line of its own, so that a backend shows the step started when it started and
// no sooner, however long the runner took to decide on a loaded node. Like a frame, the
// line is an OSC escape sequence, which terminals do not display; a backend does not show
// it as output.
const StartMark = "\x1b]concourse-tekton;started\x07\n"

// AnnouncesStart tells whether the runner of spec writes StartMark when the step starts.
func AnnouncesStart(spec Spec) bool {
	if spec.Mode == ModeTask {
		return true
	}
	for _, l := range spec.Context {
		if l.Kind == LayerFailFast {
			return true
		}
	}
	return false
}

// IsStartMark tells whether a log line (with or without its newline) is StartMark.
func IsStartMark(line string) bool {
	return strings.TrimSuffix(line, "\n") == strings.TrimSuffix(StartMark, "\n")
}
