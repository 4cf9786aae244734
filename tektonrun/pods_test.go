package tektonrun

import (
	"context"
	"strings"
	"testing"

	"k8s.io/client-go/tools/remotecommand"

	"github.com/concourse-tekton/concourse-tekton/tektonrun/podexec"
)

// noStreams is a podexec.Streamer that must not be used.
type noStreams struct{ t *testing.T }

func (n noStreams) Stream(context.Context, string, string, string, []string, remotecommand.StreamOptions) error {
	n.t.Error("exec'd although pods/exec is forbidden")
	return nil
}

func TestInterceptForbidden(t *testing.T) {
	target := fakeTarget(t, fakeCluster{denied: []Permission{{"", "pods", "exec", "create"}}})
	c := NewClient(target)
	c.pods.Stream = noStreams{t}
	err := c.Intercept(context.Background(), podexec.Container{Step: "test", Pod: "p", Running: true}, podexec.InterceptOptions{})
	if err == nil || !strings.Contains(err.Error(), `needs "create pods/exec" in namespace ci`) {
		t.Errorf("err = %v, want it to name the permission", err)
	}
}
