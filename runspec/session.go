package runspec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// A check session is a resource's check container that lasts (Concourse's check session:
// one container per resource config, serving every check of it for up to an hour). Its
// pod's main process is the runner serving its checks (ModeServe, sessionwire.go); each
// check is a ModeSession runner, started by it or exec'd into the pod, which reads one
// SessionRequest on stdin, runs the step in a directory of its own under SessionRoot,
// and writes one SessionResult on stdout, as its last line. The step's log goes to stderr, redacted, as a step's does. The request is
// never on a command line (the API server's audit log and the node's process table
// would show it): it may carry credentials.
//
// Stdin stays open while the step runs: when it closes (the backend hung up: a check's
// timeout, the web node going away) the step is interrupted, as a step whose
// build is aborted, so that nothing of a check outlives the check.
const (
	// SessionRoot is where a check session's pod mounts the directory of its checks'
	// build volumes; SessionCreds where it mounts the memory-backed one of their
	// credentials. Each check makes a directory of its own in both and removes it.
	SessionRoot  = "/concourse-checks"
	SessionCreds = "/concourse-check-creds"
	// SessionContainer is the name of the container checks are run in.
	SessionContainer = "check"
)

// LabelCheckSession marks the pod of a check session; its value is the hash of what the
// pod was made of (the session's image, user, node selection: SessionRequest's
// compiled pod), so that a check whose container would differ (its type's image changed)
// is never run in it.
const LabelCheckSession = LabelPrefix + "check-session"

// AnnotationSessionSpec on a check session's pod is the spec of the check it was made
// for, without credentials (their references only): what an intercept session of the
// container starts from.
const AnnotationSessionSpec = LabelPrefix + "session-spec"

// SessionRequest is what a check session's runner is given on stdin for one check.
type SessionRequest struct {
	// Spec is the step, a check; its Paths are the runner's to choose.
	Spec Spec `json:"spec"`
	// Context is the build's context (AnnotationBuildContext's JSON), which completes
	// Spec.Build.
	Context json.RawMessage `json:"context,omitempty"`
	// Credentials are the values of the vars the step reads, with
	// Spec.SuppliedCredentials: by CredentialKey, each value as JSON.
	Credentials map[string]json.RawMessage `json:"credentials,omitempty"`
}

// DecodeSessionRequest decodes the request a check session's runner read, as Decode
// decodes a spec: numbers kept exact, unknown fields an error, the spec validated.
func DecodeSessionRequest(data []byte) (SessionRequest, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	var r SessionRequest
	if err := dec.Decode(&r); err != nil {
		return SessionRequest{}, fmt.Errorf("decoding the check's request: %w", err)
	}
	if r.Spec.Mode != ModeCheck {
		return SessionRequest{}, fmt.Errorf("a check session runs checks, and was asked to run a %q step", r.Spec.Mode)
	}
	if err := r.Spec.Validate(); err != nil {
		return SessionRequest{}, err
	}
	return r, nil
}

// SessionResult is how one check of a check session ended: the last line of the
// runner's stdout (SessionResult.Line).
type SessionResult struct {
	Outcome Outcome `json:"outcome"`
	// Versions are every version the check found, oldest first, when it succeeded.
	Versions []map[string]string `json:"versions,omitempty"`
	// Error says why the step did not finish (interrupted, timeout exceeded, a message),
	// redacted.
	Error string `json:"error,omitempty"`
	// ExitStatus is the check script's, when it ran to its end.
	ExitStatus *int `json:"exit_status,omitempty"`
}

// Line is the result as the runner writes it: a frame (see frame.go), newline
// included, which no output of the check's script can be taken for, since the script's
// stdout is its versions and never reaches the runner's.
func (r SessionResult) Line() ([]byte, error) {
	return writeFrame(frameSessionResult, r)
}

// frameSessionResult is a check session's result (SessionResult.Line).
const frameSessionResult = "session-result"

// ParseSessionResult reads the result a check session's runner wrote as the last line of
// its stdout (the whole stdout may be given: its last line is read).
func ParseSessionResult(stdout []byte) (SessionResult, error) {
	line := bytes.TrimRight(stdout, "\n")
	if i := bytes.LastIndexByte(line, '\n'); i >= 0 {
		line = line[i+1:]
	}
	if len(line) == 0 {
		return SessionResult{}, errors.New("the check's runner said nothing of how it ended")
	}
	var r SessionResult
	if err := readFrame(frameSessionResult, string(line), &r); err != nil {
		return SessionResult{}, err
	}
	if _, ok := ParseOutcome(string(r.Outcome)); !ok {
		return SessionResult{}, fmt.Errorf("the check's runner said it ended %q", r.Outcome)
	}
	return r, nil
}
