package podexec

import (
	"context"
	"slices"
	"strings"
	"testing"

	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// TestWriteAbortMarker: the marker is written from a running step's container once the
// runner says so. An exec that ends with no error but without its word (client-go's
// report of a stream lost before the status came) is not taken for it: each running
// step is tried, and the failures are said.
func TestWriteAbortMarker(t *testing.T) {
	pr := &v1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Name: "b-1", Namespace: "ci"}}
	abort := []string{runspec.RunnerPath, string(runspec.ModeAbort), "--volume=" + runspec.DefaultVolume}
	for _, tc := range []struct {
		name  string
		out   string
		done  bool
		calls int
	}{
		{"written", runspec.AbortWritten + "\n", true, 1},
		{"stream lost", "", false, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exec := &fakeExecer{out: tc.out}
			c, _ := interceptClient(t, exec, nil)
			done, err := c.writeAbortMarker(context.Background(), pr)
			if done != tc.done || (err == nil) != tc.done {
				t.Errorf("writeAbortMarker = %v, %v; want done %v, and an error unless done", done, err, tc.done)
			}
			if !tc.done && (err == nil || !strings.Contains(err.Error(), "without the runner's word")) {
				t.Errorf("the error does not say the runner's word was missing: %v", err)
			}
			if len(exec.calls) != tc.calls {
				t.Fatalf("%d execs, want %d: %+v", len(exec.calls), tc.calls, exec.calls)
			}
			if got := exec.calls[0].Command; !slices.Equal(got, abort) {
				t.Errorf("exec %q, want %q", got, abort)
			}
		})
	}
}
