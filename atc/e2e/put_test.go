//go:build e2e

package e2e

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// TestPutFeedsPassed: the version a put creates is saved as its build's output and as a
// version of the resource, as Concourse's put step saves it: it triggers the job that
// gets the resource with passed: on the putting job.
func TestPutFeedsPassed(t *testing.T) {
	dumpOnFailure(t)
	t.Parallel()
	setPipeline(t, "put", fmt.Sprintf(`
resources:
- name: thing
  type: mock
  check_every: 1h
  source: {no_initial_version: true}
jobs:
- name: make
  plan:
  - put: thing
    params: {version: made-by-put}
- name: after
  plan:
  - get: thing
    passed: [make]
    trigger: true
  - task: show
    config:
      platform: linux
      image_resource: %s
      inputs: [{name: thing}]
      run: {path: sh, args: [-c, 'echo after make: $(cat thing/version)']}
`, busybox()))

	flyOK(t, 5*time.Minute, "trigger-job", "-j", "put/make", "-w")
	if vs := versions(t, "put/thing"); !slices.Contains(vs, "made-by-put") {
		t.Errorf("fly resource-versions: %q; want made-by-put among them", vs)
	}
	out := watchBuild(t, "put", "after", "1")
	inOrder(t, out, "after make: made-by-put", "succeeded")
}
