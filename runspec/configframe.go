package runspec

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
)

// A task of an across step whose values come at run time (Spec.AcrossSlots) has its
// config only once the runner interpolated the slot's values into it. The runner writes
// that config first, on stderr, as one line framed as a PipelineToSet is (an OSC escape
// sequence, which terminals do not display):
//
//	ESC ] concourse-tekton;task-config;<version>;<base64 of the JSON> BEL \n
//
// and the backend shows it in the task's initialize-task and start-task events instead of
// the plan's template, and not as a line of the log. Only the first line of the log is
// read so: the task's process, which runs after it, cannot write one.
const configFramePrefix = "\x1b]concourse-tekton;task-config;"

// ConfigFrame is the line that hands a task's interpolated config to the backend,
// newline included.
func ConfigFrame(config map[string]any) ([]byte, error) {
	data, err := json.Marshal(config)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(configFramePrefix + FrameVersion + ";")
	b.WriteString(base64.StdEncoding.EncodeToString(data))
	b.WriteString(frameEnd + "\n")
	return b.Bytes(), nil
}

// ParseConfigFrame reads a line written by ConfigFrame; ok is false for any other line.
func ParseConfigFrame(line string) (config map[string]any, ok bool) {
	rest, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), configFramePrefix+FrameVersion+";")
	if !ok {
		return nil, false
	}
	payload, ok := strings.CutSuffix(rest, frameEnd)
	if !ok {
		return nil, false
	}
	data, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&config); err != nil || config == nil {
		return nil, false
	}
	return config, true
}
