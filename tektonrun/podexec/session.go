package podexec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// The pods of check sessions (runspec/session.go): made from translate.CheckSession's
// pod, each serving the checks of one resource config for as long as its owner (the
// web node's check session) wants it, each check a runner exec'd into it.

// StartSession creates the session pod name from pod and waits until its container
// runs; a pod that cannot start is deleted, and says why.
func (pe *Pods) StartSession(ctx context.Context, name string, pod *corev1.Pod) (*corev1.Pod, error) {
	if pe.Stream == nil {
		return nil, errors.New("checks in check sessions need the target's REST config (pods/exec)")
	}
	p := pod.DeepCopy()
	p.Name, p.Namespace = name, pe.Namespace
	pods := pe.Kube.CoreV1().Pods(pe.Namespace)
	if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("starting the check container %s: %w", name, err)
	}
	var started *corev1.Pod
	err := pe.awaitPod(ctx, name, func(p *corev1.Pod) (bool, error) {
		if p.DeletionTimestamp != nil {
			return false, fmt.Errorf("pod %s is being deleted", name)
		}
		for _, s := range p.Status.ContainerStatuses {
			if w := s.State.Waiting; w != nil && slices.Contains(brokenStarts, w.Reason) {
				return false, fmt.Errorf("pod %s cannot start its container: %s: %s", name, w.Reason, w.Message)
			}
		}
		started = p
		return sessionRunning(p), nil
	})
	if err != nil {
		_, derr := pe.DeleteSession(context.WithoutCancel(ctx), name)
		return nil, errors.Join(err, derr)
	}
	return started, nil
}

// brokenStarts are the reasons a container waits for that the kubelet does not get over
// by itself soon: a check does not wait minutes for them, it errors, and the next check
// tries again.
var brokenStarts = []string{"ImagePullBackOff", "ErrImagePull", "InvalidImageName", "ErrImageNeverPull", "CreateContainerConfigError", "CreateContainerError"}

// sessionRunning tells whether a session pod's container runs and can take a check.
func sessionRunning(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
		return false
	}
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == runspec.SessionContainer {
			return s.State.Running != nil
		}
	}
	return false
}

// Session is the session pod name when it can take a check of a session made of hash
// (runspec.LabelCheckSession): it runs, its container too, and it is not being deleted;
// nil when it cannot (gone, ended, of another image), for a new one to be made.
func (pe *Pods) Session(ctx context.Context, name, hash string) (*corev1.Pod, error) {
	p, err := pe.runningSession(ctx, name)
	if p == nil || p.Labels[runspec.LabelCheckSession] != hash {
		return nil, err
	}
	return p, nil
}

// runningSession is the pod name if it is a check session's that can take checks (its
// container runs, it is not being deleted), else nil.
func (pe *Pods) runningSession(ctx context.Context, name string) (*corev1.Pod, error) {
	p, err := pe.Kube.CoreV1().Pods(pe.Namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("finding the check container %s: %w", name, err)
	case p.Labels[runspec.LabelCheckSession] == "" || !sessionRunning(p):
		return nil, nil
	}
	return p, nil
}

// ExecSession runs one check in the session pod name (runspec.ModeSession): the request
// on stdin, kept open until the check ends or ctx does (which interrupts it), its log to
// log as the runner writes it, and its result read from its stdout.
func (pe *Pods) ExecSession(ctx context.Context, name, image string, request []byte, log io.Writer) (runspec.SessionResult, error) {
	if pe.Stream == nil {
		return runspec.SessionResult{}, errors.New("checks in check sessions need the target's REST config (pods/exec)")
	}
	done := make(chan struct{})
	defer close(done)
	stdin := io.MultiReader(bytes.NewReader(append(slices.Clip(request), '\n')), &openUntil{ctx: ctx, done: done})
	stdout := &runspec.SessionOutput{}
	cmd := []string{runspec.RunnerPath, string(runspec.ModeSession), "--image=" + image}
	err := pe.Stream.Stream(ctx, pe.Namespace, name, runspec.SessionContainer, cmd, remotecommand.StreamOptions{Stdin: stdin, Stdout: stdout, Stderr: log})
	if ctx.Err() != nil {
		return runspec.SessionResult{}, ctx.Err()
	}
	res, perr := runspec.ParseSessionResult(stdout.Bytes())
	if perr != nil {
		if err != nil {
			return runspec.SessionResult{}, fmt.Errorf("running the check in %s: %w", name, err)
		}
		return runspec.SessionResult{}, fmt.Errorf("running the check in %s: %w", name, perr)
	}
	// The runner exits non-zero for a check that did not succeed: its result says how.
	return res, nil
}

// openUntil is a stdin that gives nothing and ends only when the check is over: the
// runner takes its end for the backend's hanging up.
type openUntil struct {
	ctx  context.Context
	done <-chan struct{}
}

func (o *openUntil) Read([]byte) (int, error) {
	select {
	case <-o.ctx.Done():
	case <-o.done:
	}
	return 0, io.EOF
}

// DeleteSession deletes the pod name if it is a check session's, and says whether it
// was; one that is gone already is not.
func (pe *Pods) DeleteSession(ctx context.Context, name string) (bool, error) {
	pe.sessions.forget(name)
	pods := pe.Kube.CoreV1().Pods(pe.Namespace)
	p, err := pods.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("finding the check container %s: %w", name, err)
	case p.Labels[runspec.LabelCheckSession] == "":
		return false, nil
	}
	err = pods.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		return true, fmt.Errorf("deleting the check container %s: %w", name, err)
	}
	return true, nil
}

// SessionHandles are the namespace's check session pods that have not ended, by name:
// containers a worker reports.
func (pe *Pods) SessionHandles(ctx context.Context) ([]string, error) {
	list, err := pe.Kube.CoreV1().Pods(pe.Namespace).List(ctx, metav1.ListOptions{LabelSelector: runspec.LabelCheckSession})
	if err != nil {
		return nil, fmt.Errorf("listing the check containers: %w", err)
	}
	var out []string
	for _, p := range list.Items {
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			out = append(out, p.Name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// SessionName is the name of a new session pod of a check build whose Pipeline is
// pipeline, suffix making it unique: findable by its resource (the check's job).
func SessionName(pipeline, suffix string) string {
	return truncateName(strings.TrimSuffix(pipeline, "-"), "-session-"+suffix)
}

// sessionContainer is the check session pod name as a container to intercept, if it is
// one that runs: an intercept session execs into its container, as into a check's
// container on a Concourse worker.
func (pe *Pods) sessionContainer(ctx context.Context, name string) (Container, bool, error) {
	p, err := pe.runningSession(ctx, name)
	if p == nil {
		return Container{}, false, err
	}
	raw := p.Annotations[runspec.AnnotationSessionSpec]
	spec, err := runspec.Decode(raw)
	if err != nil {
		return Container{}, false, fmt.Errorf("check container %s: %w", name, err)
	}
	return Container{
		Team: p.Annotations[runspec.LabelTeam], Pipeline: p.Annotations[runspec.LabelPipeline], Job: p.Annotations[runspec.LabelJob],
		Step: spec.Name, Type: string(spec.Mode), PlanID: spec.PlanID, Pod: p.Name, Running: true, Created: p.CreationTimestamp.Time,
		spec: raw, container: runspec.SessionContainer,
	}, true, nil
}
