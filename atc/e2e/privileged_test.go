//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPrivilegedRefused: the tagged target's namespace enforces Pod Security baseline. A
// privileged task tagged for it is refused before anything of its build is made, at the
// task, with Concourse's words and why; the same task untagged runs on the untagged
// target, whose namespace admits privileged pods.
func TestPrivilegedRefused(t *testing.T) {
	dumpOnFailure(t)
	t.Parallel()
	task := func(tags string) string {
		return fmt.Sprintf(`
  - task: docker
    privileged: true
    tags: [%s]
    config:
      platform: linux
      image_resource: %s
      run: {path: sh, args: [-c, 'echo privileged ran']}`, tags, busybox())
	}
	setPipeline(t, "privileged", "jobs:\n"+
		"- name: tagged\n  plan:"+task(taggedTag)+"\n"+
		"- name: untagged\n  plan:"+task("")+"\n")

	out, code := fly(t, 3*time.Minute, "trigger-job", "-j", "privileged/tagged", "-w")
	if code != 2 {
		errorf(t, "trigger-job privileged/tagged: exit %d; want 2 (errored)\n%s", code, out)
	}
	t.Logf("trigger-job privileged/tagged:\n%s", out)
	inOrder(t, out, "no workers satisfying: resource type 'registry-image', tag '"+taggedTag+"', version: '2.5' (privileged: worker tekton-"+web.tagged+
		"'s namespace enforces Pod Security baseline: privileged (", "errored")
	if _, err := web.tekton.TektonV1().PipelineRuns(web.tagged).Get(context.Background(), "privileged-tagged-1", metav1.GetOptions{}); err == nil {
		errorf(t, "a PipelineRun of the refused build exists in %s", web.tagged)
	}

	out = flyOK(t, 5*time.Minute, "trigger-job", "-j", "privileged/untagged", "-w")
	inOrder(t, out, "selected worker:", " tekton-"+web.ns+"\n", "privileged ran", "succeeded")
}
