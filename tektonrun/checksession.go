package tektonrun

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/vars"
	"github.com/concourse-tekton/concourse-tekton/runner/redact"
	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/tektonrun/buildevents"
	"github.com/concourse-tekton/concourse-tekton/tektonrun/podexec"
	"github.com/concourse-tekton/concourse-tekton/translate"
)

// ErrNoSession says a check cannot run in a check session (its reason wrapped with it):
// it runs as a build of its own (Backend.Run).
var ErrNoSession = errors.New("the check cannot run in a check container")

// ErrSessionGone says a check session's pod can take no check (gone, ended, being
// deleted, made for another image): a new one is started.
var ErrSessionGone = errors.New("the check container is gone")

// SessionCheck is a check build compiled to run in a check session's container
// (runspec/session.go) instead of as a PipelineRun of its own: where Concourse runs a
// resource's checks in the container of its resource config's check session, checks
// run here in the session's pod, served by its runner over the pod network (or exec'd
// into it, where the network does not reach it), which its owner (the web node's check
// session) keeps for as long as it wants it. A check costs no pod, no TaskRun, no
// build volume, no Secret.
type SessionCheck struct {
	client  *Client
	session *translate.CheckSession
	// request is the check's request with its credentials: it goes to the runner's stdin
	// and nowhere else.
	request []byte
	secrets *redact.Secrets
	step    string
	// pipeline is the check's Pipeline's name (<pipeline>-check-<resource>), which its
	// session pods' are made of.
	pipeline string
}

// PrepareCheck compiles a check build (meta.Check: the web node's check of a resource)
// whose credentials creds supplies, to run in a check session; an error wrapping
// ErrNoSession says why it cannot, for it to run as a build of its own.
func (b *Backend) PrepareCheck(ctx context.Context, plan concourse.Plan, meta BuildMeta, creds vars.Variables) (*SessionCheck, error) {
	if !meta.Check || creds == nil {
		return nil, fmt.Errorf("%w: it is no check build with supplied credentials", ErrNoSession)
	}
	r, _, err := b.compile(ctx, plan, meta, runConfig{creds: creds})
	if err != nil {
		return nil, err
	}
	session, err := r.CheckSession()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoSession, err)
	}
	c := b.client
	if err := c.target.acceptsBuilds(ctx); err != nil {
		return nil, err
	}
	if err := c.checkNodes(ctx, r); err != nil {
		return nil, err
	}
	req := session.Request
	secrets := &redact.Secrets{}
	if r.CredentialSecret != nil {
		s, err := resolveCredentials(r.CredentialSecret, r.Credentials, creds)
		if err != nil {
			return nil, err
		}
		req.Credentials = make(map[string]json.RawMessage, len(s.Data))
		for k, v := range s.Data {
			req.Credentials[k] = v
			if err := addSupplied(secrets, v); err != nil {
				return nil, fmt.Errorf("reading credential %s to redact it: %w", k, err)
			}
		}
	}
	enc, err := json.Marshal(req)
	if err != nil {
		// Not the error's text: it may quote a credential.
		return nil, errors.New("the check's request cannot be encoded")
	}
	return &SessionCheck{client: c, session: session, request: enc, secrets: secrets, step: r.Pipeline.Spec.Tasks[0].Name, pipeline: r.Pipeline.Name}, nil
}

// Hash is what the check's session pod is made of: a session pod of another hash is
// another image's, or another node selection's.
func (s *SessionCheck) Hash() string { return s.session.Hash }

// NewName is a name for a new session pod of the check, unique, findable by its
// resource.
func (s *SessionCheck) NewName() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return podexec.SessionName(s.pipeline, hex.EncodeToString(b[:]))
}

// Start starts the session pod name for the check, and waits until it runs.
func (s *SessionCheck) Start(ctx context.Context, name string) error {
	_, err := s.client.pods.StartSession(ctx, name, s.session.Pod)
	return err
}

// Run runs the check in the session pod name, handing emit its events as they come:
// its head (its type's image's fetch, its worker: the pod's node, its start), each line
// of its log, its end, each redacted. It returns how it ended, as the runner said; an
// error wrapping ErrSessionGone when the pod can take no check (before anything was
// emitted), ctx's error when ctx ended (a timeout) first.
func (s *SessionCheck) Run(ctx context.Context, name string, emit func(buildevents.Event) error) (runspec.SessionResult, error) {
	conn, err := s.client.pods.OpenSession(ctx, name, s.session.Hash)
	if err != nil {
		return runspec.SessionResult{}, err
	}
	if conn == nil {
		return runspec.SessionResult{}, fmt.Errorf("%w: %s", ErrSessionGone, name)
	}
	spec := s.session.Request.Spec
	digest := buildevents.ImageDigest(conn.Pod, runspec.SessionContainer)
	for _, e := range buildevents.SessionHead(s.step, spec, time.Now().Unix(), conn.Pod.Spec.NodeName, digest) {
		if err := emit(e); err != nil {
			conn.Close()
			return runspec.SessionResult{}, err
		}
	}
	n := 0
	log := &lineWriter{emit: func(line string) error {
		e := buildevents.SessionLog(s.step, spec, n, line, time.Now().Unix())
		e.Event = buildevents.Redact(s.secrets, e.Event)
		n++
		return emit(e)
	}}
	res, err := conn.Check(ctx, s.session.Image, s.request, log)
	if err != nil {
		return runspec.SessionResult{}, err
	}
	if err := log.Flush(); err != nil {
		return runspec.SessionResult{}, err
	}
	end := buildevents.SessionEnd(s.step, spec, res, time.Now().Unix())
	end.Event = buildevents.Redact(s.secrets, end.Event)
	if err := emit(end); err != nil {
		return runspec.SessionResult{}, err
	}
	return res, nil
}

// DeleteSession deletes the check session pod name, and says whether it was one; a
// pod of anything else it leaves alone.
func (c *Client) DeleteSession(ctx context.Context, name string) (bool, error) {
	return c.pods.DeleteSession(ctx, name)
}

// maxLogLine is the longest line of a check's log that is one event: a longer one is
// cut into events of this size.
const maxLogLine = 64 << 10

// lineWriter hands emit each line written to it, newline included; Flush hands it what
// is left of a last line without one.
type lineWriter struct {
	emit func(string) error
	buf  []byte
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 && len(w.buf) < maxLogLine {
			return len(p), nil
		}
		end := min(i+1, maxLogLine)
		if i < 0 {
			end = maxLogLine
		}
		if err := w.emit(string(w.buf[:end])); err != nil {
			return 0, err
		}
		w.buf = w.buf[end:]
	}
}

// Flush hands emit the rest of the last line, if there is any.
func (w *lineWriter) Flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	line := string(w.buf)
	w.buf = nil
	return w.emit(line)
}
