package runner

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// maxSessionRequest bounds the request a check session's runner reads: a check's spec
// (its source) and its credentials, which the backend never makes larger than a build's
// objects may be.
const maxSessionRequest = 4 << 20

// checkSession runs one check in a check session's container (runspec.ModeSession): the
// request is the first line of stdin; the check runs in directories of its own under
// root (its build volume and results) and credsRoot (its credentials, 0600), which are
// removed when it ends; its log goes to stderr, redacted, and its result, the last line
// of stdout, says how it ended (runspec.SessionResult). When stdin closes before the
// check has ended, the check is interrupted.
func checkSession(ctx context.Context, root, credsRoot string, opts options, stdin io.Reader, stdout, stderr io.Writer) int {
	in := bufio.NewReader(io.LimitReader(stdin, maxSessionRequest+1))
	line, err := in.ReadBytes('\n')
	switch {
	case len(line) > maxSessionRequest:
		err = fmt.Errorf("more than %d bytes", maxSessionRequest)
	case errors.Is(err, io.EOF) && len(line) > 0:
		err = nil // a last line without its newline
	}
	if err != nil {
		fmt.Fprintf(stderr, "error: reading the check's request: %v\n", err)
		return runspec.Errored.ExitCode()
	}
	req, err := runspec.DecodeSessionRequest(line)
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return runspec.Errored.ExitCode()
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		// Anything after the request is nothing; its end is the backend's hanging up.
		_, _ = io.Copy(io.Discard, stdin)
		cancel(errInterrupted)
	}()
	dir, err := os.MkdirTemp(root, "check-")
	if err != nil {
		fmt.Fprintf(stderr, "error: making the check's directory: %v\n", err)
		return runspec.Errored.ExitCode()
	}
	defer os.RemoveAll(dir)
	creds, err := os.MkdirTemp(credsRoot, "check-")
	if err != nil {
		fmt.Fprintf(stderr, "error: making the check's directory of credentials: %v\n", err)
		return runspec.Errored.ExitCode()
	}
	defer os.RemoveAll(creds)
	if err := writeCredentials(creds, req.Credentials); err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return runspec.Errored.ExitCode()
	}
	spec := req.Spec
	spec.Paths = runspec.Paths{Volume: filepath.Join(dir, "volume"), Results: filepath.Join(dir, "results"), Creds: creds}
	if err := spec.Build.Complete(string(req.Context)); err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return runspec.Errored.ExitCode()
	}
	opts.framedVersions = true
	// The step's own stdout (its start mark, its versions' frame) is read here.
	var out bytes.Buffer
	code := runStep(ctx, spec, opts, &out, stderr)
	result, err := sessionResult(spec.Paths.Results, out.Bytes())
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return runspec.Errored.ExitCode()
	}
	enc, err := result.Line()
	if err == nil {
		_, err = stdout.Write(enc)
	}
	if err != nil {
		fmt.Fprintf(stderr, "error: writing the check's result: %v\n", err)
		return runspec.Errored.ExitCode()
	}
	return code
}

// writeCredentials writes each credential of a check into dir, a file per key, readable
// by the check's user alone.
func writeCredentials(dir string, creds map[string]json.RawMessage) error {
	for key, value := range creds {
		if key == "" || key == "." || key == ".." || strings.ContainsAny(key, "/\x00") {
			return fmt.Errorf("the check's request has a credential key %q, which is no file name", key)
		}
		if err := os.WriteFile(filepath.Join(dir, key), value, 0o600); err != nil {
			return fmt.Errorf("writing the check's credentials: %w", err)
		}
	}
	return nil
}

// sessionResult is how the check ended, from its results and its stdout.
func sessionResult(results string, stdout []byte) (runspec.SessionResult, error) {
	read := func(name string) (string, error) {
		b, err := os.ReadFile(filepath.Join(results, name))
		if errors.Is(err, os.ErrNotExist) {
			return "", nil
		}
		return string(b), err
	}
	var r runspec.SessionResult
	outcome, err := read(runspec.ResultOutcome)
	if err != nil {
		return r, fmt.Errorf("reading the check's outcome: %w", err)
	}
	o, ok := runspec.ParseOutcome(outcome)
	if !ok {
		return r, fmt.Errorf("the check recorded no outcome (%q)", outcome)
	}
	r.Outcome = o
	if r.Error, err = read(runspec.ResultError); err != nil {
		return r, fmt.Errorf("reading the check's error: %w", err)
	}
	status, err := read(runspec.ResultExitStatus)
	if err != nil {
		return r, fmt.Errorf("reading the check's exit status: %w", err)
	}
	if status != "" {
		n, err := strconv.Atoi(status)
		if err != nil {
			return r, fmt.Errorf("reading the check's exit status: %w", err)
		}
		r.ExitStatus = &n
	}
	if o != runspec.Succeeded {
		return r, nil
	}
	for l := range bytes.Lines(stdout) {
		if !runspec.IsVersionsFrame(string(l)) {
			continue
		}
		v, err := runspec.ParseVersionsFrame(string(l))
		if err != nil {
			return r, err
		}
		r.Versions = v
	}
	return r, nil
}
