package tektonrun

import (
	"context"
	"fmt"

	"github.com/concourse-tekton/concourse-tekton/tektonrun/podexec"
)

// The client's work inside the pods of its target's builds is podexec's.

// Abort aborts a running build the way Concourse does: running steps are interrupted,
// their on_abort and ensure hooks still run, and the build ends aborted (see
// podexec.Pods.Abort). Aborting a build that has ended does nothing.
func (c *Client) Abort(ctx context.Context, run string) error {
	return c.pods.Abort(ctx, run)
}

// Containers lists the steps of the namespace's builds (or of one) that can be
// intercepted, newest first.
func (c *Client) Containers(ctx context.Context, f podexec.ContainerFilter) ([]podexec.Container, error) {
	return c.pods.Containers(ctx, f)
}

// ContainerHandles are the TaskRuns of the namespace's steps whose pods are there, by
// name: what a worker reports as its containers.
func (c *Client) ContainerHandles(ctx context.Context) ([]string, error) {
	return c.pods.ContainerHandles(ctx)
}

// ContainerOf is the step of a TaskRun, if it can be intercepted: an error that
// apierrors.IsNotFound recognizes when there is none.
func (c *Client) ContainerOf(ctx context.Context, taskRun string) (podexec.Container, error) {
	return c.pods.ContainerOf(ctx, taskRun)
}

// Intercept runs a command in a step's container (see podexec.Pods.Intercept).
func (c *Client) Intercept(ctx context.Context, ctr podexec.Container, o podexec.InterceptOptions) error {
	return c.pods.Intercept(ctx, ctr, o)
}

// StartIntercept starts what Intercept runs and returns once the command has started.
func (c *Client) StartIntercept(ctx context.Context, ctr podexec.Container, o podexec.InterceptOptions) (*podexec.Session, error) {
	return c.pods.StartIntercept(ctx, ctr, o)
}

// Artifacts starts a transfer pod on a one-off build's volume, once the build has ended,
// to download its outputs (the names a plan's artifact outputs gave, as
// translate.Result.ArtifactOutputs lists them).
func (b *Build) Artifacts(ctx context.Context) (*podexec.Artifacts, error) {
	return b.client.pods.Artifacts(ctx, b.Name)
}

// canExec says why the target's user may not exec into pods for what doing says, if they
// may not.
func (t *Target) canExec(ctx context.Context, doing string) error {
	p := Permission{Resource: "pods", Subresource: "exec", Verb: "create"}
	allowed, failed := t.accessReviews(ctx, []Permission{p})
	if len(failed) > 0 && failed[0] != nil {
		return nil // cannot tell: the exec itself will say
	}
	if !allowed[0] {
		return fmt.Errorf("%s needs %q in namespace %s, which the cluster forbids you (kubectl auth can-i create pods/exec -n %s)", doing, p.String(), t.Namespace, t.Namespace)
	}
	return nil
}
