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

// workerState is the state fly workers shows of the namespace's worker ("" when absent).
func workerState(t *testing.T) string {
	t.Helper()
	var workers []worker
	out, code := fly(t, time.Minute, "workers", "--json")
	if code != 0 {
		t.Fatalf("fly workers: exit %d\n%s", code, out)
	}
	if err := jsonUnmarshal(out, &workers); err != nil {
		t.Fatal(err)
	}
	for _, w := range workers {
		if w.Name == "tekton-"+web.ns {
			return w.State
		}
	}
	return ""
}

// TestLandWorker: a target landed on the cluster (concourse-tekton land) is a landed
// worker in fly workers, and a build triggered meanwhile waits for it, with no run, until
// it takes builds again; fly land-worker lands the target too.
func TestLandWorker(t *testing.T) {
	dumpOnFailure(t)
	target := tektonrun.NewTargetFromClients(web.ns, web.kube, web.tekton)
	ctx := context.Background()
	t.Cleanup(func() {
		// The next tests need the worker running: land --undo makes it so, whatever the
		// database said.
		if err := target.Resume(context.Background()); err != nil {
			t.Fatalf("resuming the target: %v", err)
		}
		eventually(t, "the worker to be running again", time.Minute, func(context.Context) (bool, error) {
			return workerState(t) == "running", nil
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
		t.Fatal(err)
	}
	eventually(t, "the worker to be landed", time.Minute, func(context.Context) (bool, error) {
		return workerState(t) == "landed", nil
	})
	flyOK(t, time.Minute, "trigger-job", "-j", "land/hello")
	// The build waits (however long the scheduler takes to start it) with no run.
	watchCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	watch := startFly(t, watchCtx, "watch", "-j", "land/hello", "-b", "1")
	eventually(t, "hello #1 to wait for the landed worker", 2*time.Minute, func(context.Context) (bool, error) {
		return strings.Contains(watch.output(), "waiting for worker"), nil
	})
	if b := builds(t, "land")["hello/1"]; b.Status != "started" {
		t.Errorf("hello #1 on a landed target: %+v, want it started and waiting", b)
	}
	if l, err := web.tekton.TektonV1().PipelineRuns(web.ns).List(ctx, metav1.ListOptions{LabelSelector: "concourse-ci.org/pipeline=land"}); err != nil || len(l.Items) > 0 {
		t.Errorf("runs of a build waiting for a landed target: %d, %v; want none", len(l.Items), err)
	}

	if err := target.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	out, code := watch.wait(t)
	t.Logf("fly watch -j land/hello -b 1: exit %d\n%s", code, out)
	if code != 0 {
		t.Fatalf("exit %d, want 0", code)
	}
	inOrder(t, out, "waiting for worker", "hello from a landed target", "succeeded")
	eventually(t, "the worker to be running", time.Minute, func(context.Context) (bool, error) {
		return workerState(t) == "running", nil
	})

	flyOK(t, time.Minute, "land-worker", "-w", "tekton-"+web.ns)
	eventually(t, "the target to land", time.Minute, func(ctx context.Context) (bool, error) {
		st, err := target.Status(ctx)
		return err == nil && st.State == tektonrun.StateLanded, err
	})
}
