//go:build e2e

package e2e

import (
	"fmt"
	"testing"
	"time"
)

// TestPipelineSetAgain: a pipeline destroyed and set again numbers its builds from 1
// again; the new build #1 gets a run of its own, the old build's run giving way, as
// Concourse's builds of a new pipeline never meet the old one's.
func TestPipelineSetAgain(t *testing.T) {
	dumpOnFailure(t)
	t.Parallel()
	config := func(word string) string {
		return fmt.Sprintf(`
jobs:
- name: say
  plan:
  - task: say
    config:
      platform: linux
      image_resource: %s
      run: {path: echo, args: [%s]}
`, busybox(), word)
	}
	setPipeline(t, "again", config("first-life"))
	out := flyOK(t, 5*time.Minute, "trigger-job", "-j", "again/say", "-w")
	inOrder(t, out, "started again/say #1", "first-life", "succeeded")

	flyOK(t, time.Minute, "destroy-pipeline", "-n", "-p", "again")
	setPipeline(t, "again", config("second-life"))
	out = flyOK(t, 5*time.Minute, "trigger-job", "-j", "again/say", "-w")
	inOrder(t, out, "started again/say #1", "second-life", "succeeded")
}
