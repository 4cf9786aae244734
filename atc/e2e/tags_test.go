//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/concourse-tekton/concourse-tekton/tektonrun"
)

// TestTaggedWorkers: the web node's second target (--tekton-targets, tag e2e-tagged) is a
// worker with its tag in fly workers, and each build runs where Concourse would place its
// steps: untagged ones on the untagged worker, tagged ones (and the untagged steps of
// their builds) on the worker with the tags; a build no running worker matches errors
// with Concourse's words, as does a tagged build once its worker has landed.
func TestTaggedWorkers(t *testing.T) {
	dumpOnFailure(t)
	// It lands only the tagged target, which no other test's builds use.
	t.Parallel()
	tagged := "tekton-" + web.tagged
	eventually(t, "worker "+tagged+" running with its tag", time.Minute, func(context.Context) (bool, error) {
		workers, err := listWorkers(t)
		if err != nil {
			return false, err
		}
		return slices.ContainsFunc(workers, func(w worker) bool {
			return w.Name == tagged && w.State == "running" && slices.Equal(w.Tags, []string{taggedTag})
		}), nil
	})

	task := func(name, tags string) string {
		return fmt.Sprintf(`
  - task: %s
    tags: [%s]
    config:
      platform: linux
      image_resource: %s
      run: {path: echo, args: [%s ran]}`, name, tags, busybox(), name)
	}
	setPipeline(t, "tags", "jobs:\n"+
		"- name: plain\n  plan:"+task("untagged", "")+"\n"+
		"- name: tagged\n  plan:"+task("gpu", taggedTag)+"\n"+
		"- name: mixed\n  plan:"+task("untagged", "")+task("gpu", taggedTag)+"\n"+
		"- name: nowhere\n  plan:"+task("arm", "nope")+"\n")

	for _, tt := range []struct{ job, ns string }{{"plain", web.ns}, {"tagged", web.tagged}, {"mixed", web.tagged}} {
		out := flyOK(t, 5*time.Minute, "trigger-job", "-j", "tags/"+tt.job, "-w")
		inOrder(t, out, "selected worker:", " tekton-"+tt.ns+"\n", "ran", "succeeded")
		run := "tags-" + tt.job + "-1"
		for _, ns := range []string{web.ns, web.tagged} {
			_, err := web.tekton.TektonV1().PipelineRuns(ns).Get(context.Background(), run, metav1.GetOptions{})
			switch {
			case ns == tt.ns && err != nil:
				errorf(t, "%s #1: PipelineRun %s/%s: %v; want it there", tt.job, ns, run, err)
			case ns != tt.ns && !apierrors.IsNotFound(err):
				errorf(t, "%s #1: PipelineRun %s/%s: %v; want none there", tt.job, ns, run, err)
			}
		}
	}

	errored := func(job, want string) {
		t.Helper()
		out, code := fly(t, 2*time.Minute, "trigger-job", "-j", "tags/"+job, "-w")
		t.Logf("fly trigger-job -j tags/%s -w: exit %d\n%s", job, code, out)
		if code != 2 || !strings.Contains(out, want) || !strings.Contains(out, "errored") {
			errorf(t, "%s: exit %d; want it errored (2), saying %q", job, code, want)
		}
	}
	errored("nowhere", "no workers satisfying: resource type 'registry-image', tag 'nope', version: '2.5'")

	target := tektonrun.NewTargetFromClients(web.tagged, web.kube, web.tekton)
	t.Cleanup(func() {
		if err := target.Resume(context.Background()); err != nil {
			errorf(t, "resuming %s: %v", web.tagged, err)
		}
	})
	if err := target.Land(context.Background()); err != nil {
		fatal(t, err)
	}
	eventually(t, "worker "+tagged+" landed", time.Minute, func(context.Context) (bool, error) {
		return workerState(t, tagged) == "landed", nil
	})
	errored("tagged", "no workers satisfying: resource type 'registry-image', tag '"+taggedTag+"', version: '2.5'")
	// The untagged worker takes no tagged build meanwhile, and still runs the others.
	if _, err := web.tekton.TektonV1().PipelineRuns(web.ns).Get(context.Background(), "tags-tagged-2", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		errorf(t, "tagged #2 on the untagged worker: %v; want no run", err)
	}
	flyOK(t, 5*time.Minute, "trigger-job", "-j", "tags/plain", "-w")
}
