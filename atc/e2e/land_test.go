//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/concourse-tekton/concourse-tekton/tektonrun"
)

// workerState is the state fly workers shows of a worker ("" when absent).
func workerState(t *testing.T, name string) string {
	t.Helper()
	workers, err := listWorkers(t)
	if err != nil {
		fatal(t, err)
	}
	for _, w := range workers {
		if w.Name == name {
			return w.State
		}
	}
	return ""
}

// TestLandWorker: a target landed on the cluster (concourse-tekton land) is a landed
// worker in fly workers, and a build triggered meanwhile errors at once, with no run, as
// a Concourse step with no running worker to run it does; once the target takes builds
// again, builds run; fly land-worker lands the target too.
func TestLandWorker(t *testing.T) {
	dumpOnFailure(t)
	target := tektonrun.NewTargetFromClients(web.ns, web.kube, web.tekton)
	ctx := context.Background()
	t.Cleanup(func() {
		// The next tests need the worker running: land --undo makes it so, whatever the
		// database said.
		if err := target.Resume(context.Background()); err != nil {
			fatalf(t, "resuming the target: %v", err)
		}
		eventually(t, "the worker to be running again", time.Minute, func(context.Context) (bool, error) {
			return workerState(t, "tekton-"+web.ns) == "running", nil
		})
	})
	setPipeline(t, "land", fmt.Sprintf(`
jobs:
- name: hello
  plan:
  - task: say
    config:
      platform: linux
      image_resource: %s
      run: {path: echo, args: [hello from a landed target]}
`, busybox()))

	if err := target.Land(ctx); err != nil {
		fatal(t, err)
	}
	eventually(t, "the worker to be landed", time.Minute, func(context.Context) (bool, error) {
		return workerState(t, "tekton-"+web.ns) == "landed", nil
	})
	out, code := fly(t, 2*time.Minute, "trigger-job", "-j", "land/hello", "-w")
	t.Logf("fly trigger-job -j land/hello -w: exit %d\n%s", code, out)
	if code != 2 || !strings.Contains(out, "no workers satisfying: resource type 'registry-image', version: '2.5'") || !strings.Contains(out, "errored") {
		errorf(t, "hello #1 on a landed target: exit %d; want it errored (2), no workers satisfying", code)
	}
	if l, err := web.tekton.TektonV1().PipelineRuns(web.ns).List(ctx, metav1.ListOptions{LabelSelector: "concourse-ci.org/pipeline=land"}); err != nil || len(l.Items) > 0 {
		errorf(t, "runs of a build on a landed target: %d, %v; want none", len(l.Items), err)
	}

	if err := target.Resume(ctx); err != nil {
		fatal(t, err)
	}
	eventually(t, "the worker to be running", time.Minute, func(context.Context) (bool, error) {
		return workerState(t, "tekton-"+web.ns) == "running", nil
	})
	out = flyOK(t, 5*time.Minute, "trigger-job", "-j", "land/hello", "-w")
	inOrder(t, out, "hello from a landed target", "succeeded")

	flyOK(t, time.Minute, "land-worker", "-w", "tekton-"+web.ns)
	eventually(t, "the target to land", time.Minute, func(ctx context.Context) (bool, error) {
		st, err := target.Status(ctx)
		return err == nil && st.State == tektonrun.StateLanded, err
	})
}
