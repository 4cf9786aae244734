package runspec

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// A frame hands the backend what the runner cannot put in the step's results, in the
// step's log: one line that is an OSC escape sequence, which terminals do not display,
//
//	ESC ] concourse-tekton;<kind>;<version>;<base64 of the JSON> BEL \n
//
// The payload is standard base64 (no ';', BEL or newline in it), so the line cannot be
// cut or mistaken for another; the version says how to read the JSON. A backend honours
// a frame only as the last line of a step that succeeded (no process of the user's writes
// after the runner's last line), and shows it to no one.
const (
	framePrefix = "\x1b]concourse-tekton;"
	frameEnd    = "\x07"
	// FrameVersion is the version of the frames the runner writes.
	FrameVersion = "1"

	// frameSetPipeline is a set_pipeline step's pipeline (PipelineToSet.Frame).
	frameSetPipeline = "set-pipeline"
	// frameCheckedVersions are a check's versions (CheckedVersions.Frame).
	frameCheckedVersions = "check-versions"
)

// writeFrame encodes v as a frame of kind, newline included.
func writeFrame(kind string, v any) ([]byte, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding the %s frame: %w", kind, err)
	}
	var b bytes.Buffer
	b.WriteString(framePrefix + kind + ";" + FrameVersion + ";")
	b.WriteString(base64.StdEncoding.EncodeToString(data))
	b.WriteString(frameEnd + "\n")
	return b.Bytes(), nil
}

// isFrame tells whether a log line is meant as a frame of kind.
func isFrame(kind, line string) bool {
	return strings.HasPrefix(line, framePrefix+kind+";")
}

// readFrame decodes a frame of kind (with or without its newline) into v, numbers as
// json.Number.
func readFrame(kind, line string, v any) error {
	rest, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), framePrefix+kind+";")
	if !ok {
		return fmt.Errorf("not a %s frame", kind)
	}
	rest, ok = strings.CutSuffix(rest, frameEnd)
	if !ok {
		return fmt.Errorf("the %s frame is cut short", kind)
	}
	version, payload, ok := strings.Cut(rest, ";")
	if !ok {
		return fmt.Errorf("the %s frame has no version", kind)
	}
	if version != FrameVersion {
		return fmt.Errorf("a %s frame of version %q, which this backend does not read (it reads %s): use a runner image and a backend of the same release", kind, version, FrameVersion)
	}
	data, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		return fmt.Errorf("reading the %s frame: %w", kind, err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("reading the %s frame: %w", kind, err)
	}
	return nil
}

// CheckedVersions are every version a check found, oldest first, when they are more than
// the step's results carry (Tekton's 4 KiB termination message: ResultVersions keeps the
// newest that fit). The runner then writes their frame as the last line of the step's
// log, on stdout, and a backend reads the versions from it.
type CheckedVersions []map[string]string

// Frame is the line that hands v to the backend, newline included.
func (v CheckedVersions) Frame() ([]byte, error) {
	return writeFrame(frameCheckedVersions, v)
}

// IsVersionsFrame tells whether a log line is meant as a check-versions frame (with or
// without its newline).
func IsVersionsFrame(line string) bool {
	return isFrame(frameCheckedVersions, line)
}

// ParseVersionsFrame reads a line written by CheckedVersions.Frame (with or without its
// newline); a frame of no version is an error.
func ParseVersionsFrame(line string) (CheckedVersions, error) {
	var v CheckedVersions
	if err := readFrame(frameCheckedVersions, line, &v); err != nil {
		return nil, err
	}
	if len(v) == 0 || slices.ContainsFunc(v, func(m map[string]string) bool { return m == nil }) {
		return nil, errors.New("the check-versions frame has no versions, or a null one")
	}
	return v, nil
}

// A step that may still end without having started (a task whose inputs are missing or
// whose user is unknown, which Concourse only initializes; a step of a fail-fast group
// that fired, which Concourse never shows) announces its start: right before its process
// (a task's) or its body (any other step) begins, the runner writes StartMark on stdout, as
// the first line of its own, so that a backend shows the step started when it started and
// no sooner, however long the runner took to decide on a loaded node. Like a frame, the
// line is an OSC escape sequence, which terminals do not display; a backend does not show
// it as output.
const StartMark = framePrefix + "started" + frameEnd + "\n"

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
