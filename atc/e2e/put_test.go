//go:build e2e

package e2e

import (
	"context"
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

	out, code := fly(t, 5*time.Minute, "trigger-job", "-j", "put/make", "-w")
	t.Logf("fly trigger-job -j put/make -w: exit %d\n%s", code, out)
	if code != 0 {
		t.Fatalf("exit %d, want 0", code)
	}
	if vs := versions(t, "put/thing"); !slices.Contains(vs, "made-by-put") {
		t.Errorf("fly resource-versions: %q; want made-by-put among them", vs)
	}
	eventually(t, "after #1 to succeed", 5*time.Minute, func(context.Context) (bool, error) {
		b, ok := builds(t, "put")["after/1"]
		if ok && b.Status != "started" && b.Status != "pending" && b.Status != "succeeded" {
			return false, fmt.Errorf("after #1 %s", b.Status)
		}
		return ok && b.Status == "succeeded", nil
	})
	out, code = fly(t, time.Minute, "watch", "-j", "put/after", "-b", "1")
	t.Logf("fly watch -j put/after -b 1: exit %d\n%s", code, out)
	inOrder(t, out, "after make: made-by-put", "succeeded")
}
