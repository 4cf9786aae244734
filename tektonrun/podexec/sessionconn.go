package podexec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// A check reaches its session's runner over the pod network where it can
// (runspec/sessionwire.go): the pod is looked up, and its key read by an exec, once; every
// later check is a connection to the pod's IP, with no request to the API server or the
// kubelet. A pod that cannot be reached so (a web node outside the cluster's network, a
// pod of a runner that serves no checks) is reached through pods/exec, looked up for each
// check, as a pod whose connection fails is looked up again.

// SessionConn is a session pod ready to take one check.
type SessionConn struct {
	// Pod is what a check's events need of the pod: its name, its node, its
	// containers' statuses.
	Pod    *corev1.Pod
	pe     *Pods
	client *runspec.SessionClient // nil: over pods/exec
	token  string
}

// sessionEntry is what is kept of a session pod that was reached over the network.
type sessionEntry struct {
	pod     *corev1.Pod
	hash    string
	host    string
	key     runspec.SessionKey
	expires time.Time
}

// sessionCache is the session pods reached over the network, by name.
type sessionCache struct {
	mu    sync.Mutex
	pods  map[string]*sessionEntry
	swept time.Time
}

func (c *sessionCache) get(name string) *sessionEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pods[name]
}

func (c *sessionCache) put(name string, e *sessionEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pods == nil {
		c.pods = map[string]*sessionEntry{}
	}
	now := time.Now()
	if now.Sub(c.swept) > time.Minute {
		// Pods past their deadline, deleted by no one this process told.
		for n, e := range c.pods {
			if now.After(e.expires) {
				delete(c.pods, n)
			}
		}
		c.swept = now
	}
	c.pods[name] = e
}

func (c *sessionCache) forget(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pods, name)
}

// OpenSession readies the session pod name, made of hash, for a check: nil when it can
// take none (gone, ended, being deleted, of another image), for a new one to be made.
func (pe *Pods) OpenSession(ctx context.Context, name, hash string) (*SessionConn, error) {
	if e := pe.sessions.get(name); e != nil && e.hash == hash {
		client, err := runspec.DialSession(ctx, e.host, e.key)
		if err == nil {
			return &SessionConn{Pod: e.pod, pe: pe, client: client, token: e.key.Token}, nil
		}
		// Gone, or its IP another's: looked up again.
		pe.sessions.forget(name)
	}
	p, err := pe.Session(ctx, name, hash)
	if p == nil {
		return nil, err
	}
	// What the events need: the whole pod is not kept for each session.
	kept := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.Name, UID: p.UID}, Spec: corev1.PodSpec{NodeName: p.Spec.NodeName}, Status: corev1.PodStatus{ContainerStatuses: p.Status.ContainerStatuses}}
	conn := &SessionConn{Pod: kept, pe: pe}
	host := p.Status.PodIP
	if pe.SessionHost != nil {
		host = pe.SessionHost(p)
	}
	if pe.ExecChecks || !servesChecks(p) || host == "" {
		return conn, nil
	}
	key, err := pe.sessionKey(ctx, name)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// Its checks go through pods/exec, which will say what is wrong if anything is.
		return conn, nil
	}
	client, err := runspec.DialSession(ctx, host, key)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return conn, nil
	}
	expires := p.CreationTimestamp.Add(2 * time.Hour)
	if d := p.Spec.ActiveDeadlineSeconds; d != nil && p.Status.StartTime != nil {
		expires = p.Status.StartTime.Add(time.Duration(*d) * time.Second)
	}
	pe.sessions.put(name, &sessionEntry{pod: kept, hash: hash, host: host, key: key, expires: expires})
	conn.client, conn.token = client, key.Token
	return conn, nil
}

// Direct says whether the check goes over the pod network, not through pods/exec.
func (c *SessionConn) Direct() bool { return c.client != nil }

// Check runs one check in the pod: its request (which may carry credentials) sent, its
// log to log as the runner writes it, its result read from its stdout; ctx ending
// interrupts it.
func (c *SessionConn) Check(ctx context.Context, image string, request []byte, log io.Writer) (runspec.SessionResult, error) {
	if c.client == nil {
		return c.pe.ExecSession(ctx, c.Pod.Name, image, request, log)
	}
	res, err := c.client.Check(ctx, c.token, request, log)
	if err != nil && ctx.Err() == nil {
		// Looked up again by the next check.
		c.pe.sessions.forget(c.Pod.Name)
		return res, fmt.Errorf("running the check in %s: %w", c.Pod.Name, err)
	}
	return res, err
}

// Close lets go of a session pod that took no check.
func (c *SessionConn) Close() {
	if c.client != nil {
		c.client.Close()
	}
}

// servesChecks tells whether a session pod's runner serves checks over the network
// (runspec.ModeServe): one made before it did is reached through pods/exec.
func servesChecks(p *corev1.Pod) bool {
	for _, c := range p.Spec.Containers {
		if c.Name == runspec.SessionContainer {
			return slices.ContainsFunc(c.Ports, func(port corev1.ContainerPort) bool { return port.ContainerPort == runspec.SessionPort })
		}
	}
	return false
}

// sessionKey reads the key of the session pod name's serving runner
// (runspec.ModeSessionKey).
func (pe *Pods) sessionKey(ctx context.Context, name string) (runspec.SessionKey, error) {
	if pe.Stream == nil {
		return runspec.SessionKey{}, errors.New("reading a check container's key needs the target's REST config (pods/exec)")
	}
	var stdout, stderr bytes.Buffer
	cmd := []string{runspec.RunnerPath, string(runspec.ModeSessionKey)}
	err := pe.Stream.Stream(ctx, pe.Namespace, name, runspec.SessionContainer, cmd, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr})
	if err != nil {
		return runspec.SessionKey{}, fmt.Errorf("reading the key of %s: %w: %s", name, err, bytes.TrimSpace(stderr.Bytes()))
	}
	return runspec.ParseSessionKey(stdout.Bytes())
}
