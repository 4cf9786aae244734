//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// TestPutFeedsPassed: the version a put creates is saved as its build's output and as a
// version of the resource, as Concourse's put step saves it: it triggers the job that
// gets the resource with passed: on the putting job. The put's script sees the build's
// metadata as Concourse's does (its team, pipeline, job, name, their IDs and its URLs),
// which the build gives all its steps once (runspec.AnnotationBuildContext).
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
    params: {version: made-by-put, print_env: true}
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

	out := flyOK(t, 5*time.Minute, "trigger-job", "-j", "put/make", "-w")
	for _, want := range []string{"BUILD_TEAM_NAME=main\n", "BUILD_PIPELINE_NAME=put\n", "BUILD_JOB_NAME=make\n", "BUILD_NAME=1\n",
		"ATC_EXTERNAL_URL=" + web.url + "\n", "BUILD_URL=" + web.url + "/teams/main/pipelines/put/jobs/make/builds/1\n"} {
		if !strings.Contains(out, want) {
			errorf(t, "the put's script did not see %q", strings.TrimSpace(want))
		}
	}
	// The ATC's IDs, as Concourse gives them; the short URL is the build's ID's.
	for _, v := range []string{"BUILD_ID", "BUILD_TEAM_ID", "BUILD_PIPELINE_ID", "BUILD_JOB_ID"} {
		if !regexp.MustCompile(`(?m)^` + v + `=[1-9][0-9]*$`).MatchString(out) {
			errorf(t, "the put's script did not see %s", v)
		}
	}
	if id := regexp.MustCompile(`(?m)^BUILD_ID=(\d+)$`).FindStringSubmatch(out); id != nil && !strings.Contains(out, "BUILD_URL_SHORT="+web.url+"/builds/"+id[1]+"\n") {
		errorf(t, "the put's script did not see BUILD_URL_SHORT=%s/builds/%s", web.url, id[1])
	}
	if strings.Contains(out, runspec.EnvBuildContext) {
		errorf(t, "the put's script saw the runner's own %s", runspec.EnvBuildContext)
	}
	if vs := versions(t, "put/thing"); !slices.Contains(vs, "made-by-put") {
		errorf(t, "fly resource-versions: %q; want made-by-put among them", vs)
	}
	out = watchBuild(t, "put", "after", "1")
	inOrder(t, out, "after make: made-by-put", "succeeded")
}

// TestResourceCache: a job's build gets a version its previous build fetched from the
// resource cache its volume carries, as Concourse's worker serves it: the resource's
// script does not run (no "fetching"), Concourse's INFO line says so, and the task has
// the same files; a new version is fetched.
func TestResourceCache(t *testing.T) {
	dumpOnFailure(t)
	t.Parallel()
	setPipeline(t, "cache", fmt.Sprintf(`
resources:
- name: thing
  type: mock
  check_every: 1h
  source: {initial_version: cached-v1, create_files: {data.txt: some data}}
jobs:
- name: fetch
  plan:
  - get: thing
  - task: show
    config:
      platform: linux
      image_resource: %s
      inputs: [{name: thing}]
      run: {path: sh, args: [-c, 'echo have $(cat thing/version): $(cat thing/data.txt)']}
`, busybox()))
	flyOK(t, 5*time.Minute, "check-resource", "-r", "cache/thing")

	out := flyOK(t, 5*time.Minute, "trigger-job", "-j", "cache/fetch", "-w")
	inOrder(t, out, "fetching version: cached-v1", "have cached-v1: some data", "succeeded")
	out = flyOK(t, 5*time.Minute, "trigger-job", "-j", "cache/fetch", "-w")
	inOrder(t, out, "INFO: found existing resource cache", "have cached-v1: some data", "succeeded")
	if strings.Contains(out, "fetching") {
		errorf(t, "the second build fetched the version again")
	}

	flyOK(t, 5*time.Minute, "check-resource", "-r", "cache/thing", "-f", "version:cached-v2")
	out = flyOK(t, 5*time.Minute, "trigger-job", "-j", "cache/fetch", "-w")
	inOrder(t, out, "fetching version: cached-v2", "have cached-v2: some data", "succeeded")
}

// TestSharedResourceCache: a get of one job finds the version another job of the team
// fetched, as Concourse's worker serves any build its resource caches: the first job's
// get pushes what it fetched to the namespace's store (the cluster's registry) and the
// build's follower indexes it in the team's ConfigMap; the second job's get, on a volume
// of its own, finds it there (no "fetching", Concourse's INFO line) with the same files.
func TestSharedResourceCache(t *testing.T) {
	dumpOnFailure(t)
	t.Parallel()
	setPipeline(t, "shared", fmt.Sprintf(`
resources:
- name: thing
  type: mock
  check_every: 1h
  source: {initial_version: shared-v1, create_files: {data.txt: shared data}}
jobs:
- name: first
  plan:
  - get: thing
- name: second
  plan:
  - get: thing
  - task: show
    config:
      platform: linux
      image_resource: %s
      inputs: [{name: thing}]
      run: {path: sh, args: [-c, 'echo have $(cat thing/version): $(cat thing/data.txt)']}
`, busybox()))
	flyOK(t, 5*time.Minute, "check-resource", "-r", "shared/thing")
	out := flyOK(t, 5*time.Minute, "trigger-job", "-j", "shared/first", "-w")
	inOrder(t, out, "fetching version: shared-v1", "succeeded")

	cm, err := web.kube.CoreV1().ConfigMaps(web.ns).Get(context.Background(), runspec.ResourceCacheIndex("main"), metav1.GetOptions{})
	if err != nil || len(cm.Data) == 0 {
		fatalf(t, "the team's index of resource caches: %v, %v; want the first job's fetch in it", cm, err)
	}
	out = flyOK(t, 5*time.Minute, "trigger-job", "-j", "shared/second", "-w")
	inOrder(t, out, "INFO: found existing resource cache", "have shared-v1: shared data", "succeeded")
	if strings.Contains(out, "fetching") {
		errorf(t, "the second job fetched the version again:\n%s", out)
	}
}
