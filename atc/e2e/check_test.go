//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// resourceVersion is one line of `fly resource-versions --json`.
type resourceVersion struct {
	Version map[string]string `json:"version"`
	Enabled bool              `json:"enabled"`
}

// versions are the "version" fields of a mock resource's versions, newest first.
func versions(t *testing.T, resource string) []string {
	t.Helper()
	return versionsOf(t, resource, "version")
}

// versionsOf are one field of a resource's versions, newest first: fly resource-versions.
func versionsOf(t *testing.T, resource, field string) []string {
	t.Helper()
	out, code := fly(t, time.Minute, "resource-versions", "-r", resource, "--count", "1000", "--json")
	if code != 0 {
		fatalf(t, "fly resource-versions: exit %d\n%s", code, out)
	}
	var list []resourceVersion
	if err := jsonUnmarshal(out, &list); err != nil {
		fatal(t, err)
	}
	var vs []string
	for _, v := range list {
		vs = append(vs, v.Version[field])
	}
	return vs
}

// TestCheckResource: checks run as runs of their own, their versions saved, and a new
// version triggers the job that gets the resource with trigger: true. The check's script
// sees Concourse's check build: named check, of no job. The resource is never checked on
// its own: a periodic check that starts while fly check-resource's waits for the lock
// makes Concourse skip the manual one (checkDelegate.shouldPeriodicCheckRun), and its
// output would be empty.
func TestCheckResource(t *testing.T) {
	dumpOnFailure(t)
	t.Parallel()
	setPipeline(t, "check", fmt.Sprintf(`
resources:
- name: thing
  type: mock
  check_every: never
  source: {initial_version: first, print_env: true}
jobs:
- name: use
  plan:
  - get: thing
    trigger: true
  - task: show
    config:
      platform: linux
      image_resource: %[1]s
      inputs: [{name: thing}]
      run: {path: sh, args: [-c, 'echo got $(cat thing/version)']}
- name: after
  plan:
  - get: thing
    passed: [use]
    trigger: true
  - task: show
    config:
      platform: linux
      image_resource: %[1]s
      inputs: [{name: thing}]
      run: {path: sh, args: [-c, 'echo after use: $(cat thing/version)']}
`, busybox()))

	out := flyOK(t, 5*time.Minute, "check-resource", "-r", "check/thing")
	inOrder(t, out, "checking check/thing", "BUILD_NAME=check", "BUILD_PIPELINE_NAME=check", "BUILD_TEAM_NAME=main", "succeeded")
	for _, v := range []string{"BUILD_JOB_NAME=", "BUILD_JOB_ID="} {
		if strings.Contains(out, v) {
			errorf(t, "the check's script saw %s...; a check build has no job", v)
		}
	}
	if vs := versions(t, "check/thing"); len(vs) != 1 || vs[0] != "first" {
		errorf(t, "fly resource-versions: %q; want [first]", vs)
	}

	// The first version triggers the job, and the job after it through passed:.
	waitBuild := func(job, name, want string) {
		t.Helper()
		inOrder(t, watchBuild(t, "check", job, name), want, "succeeded")
	}
	waitBuild("use", "1", "got first")
	waitBuild("after", "1", "after use: first")

	// A new version, as testflight makes them: a check from it.
	flyOK(t, 5*time.Minute, "check-resource", "-r", "check/thing", "-f", "version:second")
	if vs := versions(t, "check/thing"); len(vs) != 2 || vs[0] != "second" || vs[1] != "first" {
		errorf(t, "fly resource-versions: %q; want [second first]", vs)
	}
	// The checks' runs go as their containers do: the latest check's stays, for fly
	// intercept --check, the ones before it are gone. Looked at now, while the check's
	// session is fresh: a session that expires (minutes later, on a slow machine) takes
	// its container, and so its run, too.
	var left []string
	err := pollErr(context.Background(), time.Minute, func(ctx context.Context) (bool, error) {
		prs, err := web.tekton.TektonV1().PipelineRuns(web.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, client(err)
		}
		left = nil
		for _, pr := range prs.Items {
			if strings.HasPrefix(pr.Name, "check-check-thing") && pr.DeletionTimestamp == nil {
				left = append(left, pr.Name)
			}
		}
		return len(left) == 1, nil
	})
	if err != nil {
		errorf(t, "check runs of thing: %v (%v); want the latest check's alone", left, err)
	} else {
		// One pod: the check records the build's verdict in its own container.
		trs, err := web.tekton.TektonV1().TaskRuns(web.ns).List(context.Background(), metav1.ListOptions{LabelSelector: "tekton.dev/pipelineRun=" + left[0]})
		if err != nil {
			fatal(t, err)
		}
		var names []string
		verdict := ""
		for _, tr := range trs.Items {
			names = append(names, tr.Name)
			for _, r := range tr.Status.Results {
				if r.Name == "verdict" {
					verdict = r.Value.StringVal
				}
			}
		}
		if len(names) != 1 || verdict != "succeeded" {
			errorf(t, "TaskRuns of the check's run %s: %v, its verdict %q; want the check's alone, which recorded succeeded", left[0], names, verdict)
		}
	}

	waitBuild("use", "2", "got second")
	waitBuild("after", "2", "after use: second")
	if b, ok := builds(t, "check")["after/3"]; ok {
		errorf(t, "after #3 %+v: a version triggered it twice", b)
	}
}

// TestLidarCheck: lidar's periodic checks (in-memory check builds) run on the cluster
// too: with no fly check-resource, the resource's version is found and triggers the job.
func TestLidarCheck(t *testing.T) {
	dumpOnFailure(t)
	t.Parallel()
	setPipeline(t, "lidar", fmt.Sprintf(`
resources:
- name: ticker
  type: mock
  check_every: 10s
  source: {initial_version: from-lidar}
jobs:
- name: use
  plan:
  - get: ticker
    trigger: true
  - task: show
    config:
      platform: linux
      image_resource: %s
      inputs: [{name: ticker}]
      run: {path: sh, args: [-c, 'echo got $(cat ticker/version)']}
`, busybox()))
	// Checked every 10 s: a pod each time, while the other tests run.
	t.Cleanup(func() {
		if out, code := fly(t, time.Minute, "pause-pipeline", "-p", "lidar"); code != 0 {
			t.Logf("fly pause-pipeline -p lidar: exit %d\n%s", code, out)
		}
	})
	eventually(t, "lidar to find from-lidar", 3*time.Minute, func(context.Context) (bool, error) {
		vs := versions(t, "lidar/ticker")
		return len(vs) == 1 && vs[0] == "from-lidar", nil
	})
	out := watchBuild(t, "lidar", "use", "1")
	inOrder(t, out, "got from-lidar", "succeeded")
	for _, line := range strings.Split(web.logTail(5000), "\n") {
		if strings.Contains(line, "no Host in request URL") {
			errorf(t, "a check went to Concourse's own stepper: %s", line)
			break
		}
	}
}
