//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
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

// TestCheckResource: checks run in the check container of their resource's config, their
// versions saved, and a new version triggers the job that gets the resource with trigger:
// true; a check container that died is replaced. The check's script
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
	// Both checks ran in the check container of the resource's config: one pod, which
	// holds, no run of a check's own. fly containers lists it as the check's container.
	session := sessionPods(t, "check")
	if len(session) != 1 {
		fatalf(t, "check containers of pipeline check: %v; want one", session)
	}
	prs, err := web.tekton.TektonV1().PipelineRuns(web.ns).List(context.Background(), metav1.ListOptions{LabelSelector: "concourse-ci.org/pipeline=check,concourse-ci.org/job=check-thing"})
	if err != nil {
		fatal(t, err)
	}
	if len(prs.Items) != 0 {
		errorf(t, "%d check runs of thing; want none: its checks run in its check container", len(prs.Items))
	}
	if out := flyOK(t, time.Minute, "containers"); !containerListed(out, session[0], "check") {
		errorf(t, "fly containers does not list the check container %s:\n%s", session[0], out)
	}
	// A check container that died is replaced: the next check runs in a new one.
	if err := web.kube.CoreV1().Pods(web.ns).Delete(context.Background(), session[0], metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		fatal(t, err)
	}
	flyOK(t, 5*time.Minute, "check-resource", "-r", "check/thing", "-f", "version:second")
	if again := sessionPods(t, "check"); len(again) != 1 || again[0] == session[0] {
		errorf(t, "check containers after the first died: %v; want one, not %s", again, session[0])
	}
	if vs := versions(t, "check/thing"); len(vs) != 2 || vs[0] != "second" {
		errorf(t, "fly resource-versions after the container was replaced: %q; want [second first]", vs)
	}

	waitBuild("use", "2", "got second")
	waitBuild("after", "2", "after use: second")
	if b, ok := builds(t, "check")["after/3"]; ok {
		errorf(t, "after #3 %+v: a version triggered it twice", b)
	}
}

// TestLidarCheck: lidar's periodic checks (in-memory check builds) run on the cluster
// too: with no fly check-resource, the resource's version is found and triggers the job;
// they run in the resource's check container, over the pod network.
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
	// Its checks go over the pod network to its check container's runner, which logs each
	// check it served (pods/exec would leave no line).
	eventually(t, "the check container to serve lidar's checks", 2*time.Minute, func(ctx context.Context) (bool, error) {
		for _, name := range sessionPods(t, "lidar") {
			log, err := web.kube.CoreV1().Pods(web.ns).GetLogs(name, &corev1.PodLogOptions{Container: "check"}).DoRaw(ctx)
			if err == nil && strings.Count(string(log), "served a check: exit status 0") >= 2 {
				return true, nil
			}
		}
		return false, nil
	})
	for _, line := range strings.Split(web.logTail(5000), "\n") {
		if strings.Contains(line, "no Host in request URL") {
			errorf(t, "a check went to Concourse's own stepper: %s", line)
			break
		}
	}
}

// sessionPods are the check containers of a pipeline's resources (pods of check
// sessions) that are not being deleted, by name.
func sessionPods(t *testing.T, pipeline string) []string {
	t.Helper()
	pods, err := web.kube.CoreV1().Pods(web.ns).List(context.Background(), metav1.ListOptions{LabelSelector: "concourse-ci.org/check-session,concourse-ci.org/pipeline=" + pipeline})
	if err != nil {
		fatal(t, err)
	}
	var out []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p.Name)
		}
	}
	return out
}

// containerListed tells whether fly containers' table has the container handle, of type.
func containerListed(table, handle, typ string) bool {
	for _, line := range strings.Split(table, "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && f[0] == handle && slices.Contains(f, typ) {
			return true
		}
	}
	return false
}
