//go:build e2e && faults

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The fault matrix (make -C atc faults; docs/faults.md has the table and the last
// results): one build runs through the web node in each case, a task that prints a
// numbered line a second until the test stops it, then a task after it; once the build has
// printed a few lines, the fault is injected. Then the build ends as Concourse's would, and
// fly watch shows each line the task printed once, in order, none lost. The tests run one
// after another: their faults are the whole cluster's, or the web node's every build's.

// faultRun is a build of a pipeline of faultPipeline, running.
type faultRun struct {
	t        *testing.T
	pipeline string
}

// faultPipeline is the pipeline each fault's build runs: count prints "count N" every
// second until /tmp/stop exists in its container (ten minutes at most), then after says so.
func faultPipeline() string {
	return fmt.Sprintf(`
jobs:
- name: run
  plan:
  - %s
  - task: after
    config:
      platform: linux
      image_resource: %s
      run: {path: echo, args: [after the fault]}
`, countTask(), busybox())
}

// countTask is the step of a job's plan that prints "count N" every second until
// /tmp/stop exists in its container (ten minutes at most).
func countTask() string {
	return fmt.Sprintf(`task: count
    config:
      platform: linux
      image_resource: %s
      run: {path: sh, args: [-c, 'i=0; while [ ! -e /tmp/stop ] && [ $i -lt 600 ]; do i=$((i+1)); echo count $i; sleep 1; done']}`, busybox())
}

// startFaultBuild sets pipeline, triggers its job and waits until the build has printed
// three lines.
func startFaultBuild(t *testing.T, pipeline string) *faultRun {
	t.Helper()
	setPipeline(t, pipeline, faultPipeline())
	return triggerFaultBuild(t, pipeline)
}

// triggerFaultBuild triggers the job run of pipeline, whose first step is countTask, and
// waits until its first build has printed three lines.
func triggerFaultBuild(t *testing.T, pipeline string) *faultRun {
	t.Helper()
	flyOK(t, time.Minute, "trigger-job", "-j", pipeline+"/run")
	r := &faultRun{t: t, pipeline: pipeline}
	eventually(t, "the build's first lines", 3*time.Minute, func(context.Context) (bool, error) {
		out, _ := fly(t, 5*time.Second, "watch", "-j", pipeline+"/run", "-b", "1")
		return strings.Contains(out, "count 3\n"), nil
	})
	return r
}

// countPod is the pod of the build's count task, running.
func (r *faultRun) countPod() *corev1.Pod {
	r.t.Helper()
	selector := "concourse-ci.org/pipeline=" + r.pipeline + ",concourse-ci.org/job=run,concourse-ci.org/build=1"
	pods, err := web.kube.CoreV1().Pods(web.ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		fatal(r.t, err)
	}
	for i, p := range pods.Items {
		if strings.Contains(p.Labels["tekton.dev/pipelineTask"], "count") && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			return &pods.Items[i]
		}
	}
	var names []string
	for _, p := range pods.Items {
		names = append(names, p.Name+" ("+p.Labels["tekton.dev/pipelineTask"]+", "+string(p.Status.Phase)+")")
	}
	fatalf(r.t, "no running pod of task count among the build's: %v", names)
	return nil
}

// stop makes the count task end (through fly intercept, the web node's Garden). Right
// after a fault a request may fail, as Concourse's do: the first query on each of the
// database connections Postgres closed errors (failed-to-find-team-in-db), so a user
// tries again, and so does this, for a minute.
func (r *faultRun) stop() {
	r.t.Helper()
	args := []string{"intercept", "-j", r.pipeline + "/run", "-b", "1", "-s", "count", "--", "touch", "/tmp/stop"}
	deadline := time.Now().Add(time.Minute)
	for {
		out, code := fly(r.t, 3*time.Minute, args...)
		if code == 0 {
			return
		}
		if time.Now().After(deadline) {
			fatalf(r.t, "fly %s: exit %d\n%s", strings.Join(args, " "), code, out)
		}
		time.Sleep(5 * time.Second)
	}
}

// watch is fly watch of the build until it ends: its output and exit code.
func (r *faultRun) watch() (string, int) {
	r.t.Helper()
	out, code := fly(r.t, 5*time.Minute, "watch", "-j", r.pipeline+"/run", "-b", "1")
	r.t.Logf("fly watch: exit %d\n%s", code, out)
	return out, code
}

// eachLineOnce fails the test unless out has every line the count task printed, from the
// first to its last (at least atLeast), once each.
func eachLineOnce(t *testing.T, out string, atLeast int) {
	t.Helper()
	last := 0
	for _, m := range regexp.MustCompile(`(?m)^count ([0-9]+)$`).FindAllStringSubmatch(out, -1) {
		if n, _ := strconv.Atoi(m[1]); n > last {
			last = n
		}
	}
	if last < atLeast {
		errorf(t, "the task printed up to count %d, want at least the %d lines seen before the fault", last, atLeast)
	}
	for i := 1; i <= last; i++ {
		line := fmt.Sprintf("count %d", i)
		if n := len(regexp.MustCompile(`(?m)^`+line+`$`).FindAllString(out, -1)); n != 1 {
			errorf(t, "%q printed %d times, want once", line, n)
		}
	}
}

// survives checks that a build whose fault has passed goes on: its task is stopped, the
// task after it runs, the build succeeds with every line once.
func (r *faultRun) survives() {
	r.t.Helper()
	r.stop()
	out, code := r.watch()
	if code != 0 {
		errorf(r.t, "fly watch: exit %d, want 0 (succeeded)", code)
	}
	eachLineOnce(r.t, out, 3)
	inOrder(r.t, out, "count 1", "count 3", "after the fault", "succeeded")
	if n := len(regexp.MustCompile(`(?m)^after the fault$`).FindAllString(out, -1)); n != 1 {
		errorf(r.t, "the task after the fault printed %d times, want once", n)
	}
}

// clusterSh runs the e2e cluster's cluster.sh (the local cluster only: a fault of its
// daemons is injected through it).
func clusterSh(t *testing.T, args ...string) {
	t.Helper()
	if os.Getenv("E2E_KUBECONFIG") != "" {
		if out, err := exec.Command("../../e2e/cluster/cluster.sh", "kubeconfig").Output(); err != nil || strings.TrimSpace(string(out)) != os.Getenv("E2E_KUBECONFIG") {
			t.Skip("the cluster is not the local e2e cluster, whose daemons this fault restarts")
		}
	}
	cmd := exec.Command("../../e2e/cluster/cluster.sh", args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		fatalf(t, "cluster.sh %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("cluster.sh %s:\n%s", strings.Join(args, " "), out)
}

// TestFaultWebNodeKilled: the web node is killed (SIGKILL, no chance to save what it
// holds) mid-build and started again. Concourse: the build's containers run on, and the
// web node that starts takes the build up again (its tracker; the engine's build resumes
// from the events saved). Here: the same, the events the killed node had not saved read
// again from the step's log, none twice.
func TestFaultWebNodeKilled(t *testing.T) {
	dumpOnFailure(t)
	r := startFaultBuild(t, "fault-web-killed")
	restartWebNode(t, true)
	r.survives()
}

// pgCtl runs the web node's Postgres's pg_ctl (as web.sh does: in a user namespace where
// root is an unprivileged user, since Postgres refuses to run as root).
func pgCtl(t *testing.T, args ...string) {
	t.Helper()
	bin := os.Getenv("CONCOURSE_TEKTON_PG_BIN")
	if bin == "" {
		bin = "/usr/lib/postgresql/15/bin"
	}
	// The server pg_ctl starts logs where web.sh's does, and so holds no pipe of ours.
	argv := append([]string{filepath.Join(bin, "pg_ctl"), "-D", filepath.Join(web.state, "pgdata"), "-l", filepath.Join(web.state, "postgres.log")}, args...)
	if os.Getuid() == 0 {
		argv = append([]string{"unshare", "--user", "--map-user=1", "--map-group=1"}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		fatalf(t, "pg_ctl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// TestFaultPostgresRestarted: the database restarts mid-build (every connection closed,
// the build tracker's lock with them). Concourse: the web node's connections fail until
// it reconnects; the build runs on, its tracker takes it up again once it has its lock.
// Here: the same.
func TestFaultPostgresRestarted(t *testing.T) {
	dumpOnFailure(t)
	r := startFaultBuild(t, "fault-postgres")
	pgCtl(t, "-m", "fast", "-w", "-t", "60", "restart")
	r.survives()
}

// TestFaultClusterRestarted: a daemon of the cluster restarts mid-build, and the build
// goes on:
//   - the API server, every watch and log stream through it broken. Concourse has no API
//     server; its nearest is a worker that stops answering for a while, after which the
//     build goes on;
//   - the node's kubelet; the containers run on. Concourse's nearest: a worker's process
//     restarting, its containers running on;
//   - the node's container runtime; the containers run on in their shims. Concourse:
//     Garden (or containerd) restarting on a worker keeps its containers.
func TestFaultClusterRestarted(t *testing.T) {
	for _, daemon := range []string{"apiserver", "kubelet", "containerd"} {
		t.Run(daemon, func(t *testing.T) {
			dumpOnFailure(t)
			r := startFaultBuild(t, "fault-"+daemon)
			clusterSh(t, "restart-"+daemon)
			r.survives()
		})
	}
}

// podGone checks a build whose step's pod someone else removed: the build errors at that
// step, naming why, the step after it does not run, and the lines printed before are each
// shown once. Concourse: a container that disappears under a running step (a worker's
// container destroyed, the worker gone) errors the step and the build.
func podGone(t *testing.T, r *faultRun, why string) {
	t.Helper()
	out, code := r.watch()
	if code != 2 {
		errorf(t, "fly watch: exit %d, want 2 (errored)", code)
	}
	eachLineOnce(t, out, 3)
	inOrder(t, out, "count 3", why, "errored")
	if strings.Contains(out, "running echo after the fault") {
		errorf(t, "the task after the one whose pod went ran")
	}
}

// TestFaultPodDeleted: the step's pod is deleted by someone else mid-step.
func TestFaultPodDeleted(t *testing.T) {
	dumpOnFailure(t)
	r := startFaultBuild(t, "fault-pod-deleted")
	pod := r.countPod()
	if err := web.kube.CoreV1().Pods(web.ns).Delete(context.Background(), pod.Name, metav1.DeleteOptions{}); err != nil {
		fatal(t, err)
	}
	podGone(t, r, "the step's pod was stopped before the step ended")
}

// TestFaultPodEvicted: the step's pod is evicted through the API (a node drained).
func TestFaultPodEvicted(t *testing.T) {
	dumpOnFailure(t)
	r := startFaultBuild(t, "fault-pod-evicted")
	pod := r.countPod()
	if err := web.kube.CoreV1().Pods(web.ns).EvictV1(context.Background(), &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: web.ns}}); err != nil {
		fatal(t, err)
	}
	podGone(t, r, "the step's pod was stopped before the step ended")
}

// TestFaultWatchCompacted: etcd compacts its history away and the API server restarts mid-build,
// so that every watch resuming from the resource version it had seen is refused with 410
// Gone ("too old resource version"). Concourse has no watches; its nearest is a web node
// whose view of a worker's containers is stale: it asks again. Here: each of the web
// node's informers lists again (its log says so), and the build goes on, every line once.
func TestFaultWatchCompacted(t *testing.T) {
	dumpOnFailure(t)
	ctx := context.Background()
	r := startFaultBuild(t, "fault-watch-compacted")
	pods, err := web.kube.CoreV1().Pods(web.ns).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		fatal(t, err)
	}
	seen := pods.ResourceVersion
	// A write after the list: the revision compacted at is past what it saw.
	marker := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "fault-watch-compacted"}}
	if _, err := web.kube.CoreV1().ConfigMaps(web.ns).Create(ctx, marker, metav1.CreateOptions{}); err != nil {
		fatal(t, err)
	}
	defer web.kube.CoreV1().ConfigMaps(web.ns).Delete(ctx, marker.Name, metav1.DeleteOptions{})
	logged := len(web.logText())
	clusterSh(t, "compact-etcd")
	clusterSh(t, "restart-apiserver")

	// The fault is real: a watch from what was seen before is refused.
	w, err := web.kube.CoreV1().Pods(web.ns).Watch(ctx, metav1.ListOptions{ResourceVersion: seen})
	if err == nil {
		select {
		case e := <-w.ResultChan():
			err = apierrors.FromObject(e.Object)
		case <-time.After(30 * time.Second):
		}
		w.Stop()
	}
	if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
		fatalf(t, "a watch of pods from resource version %s after the compaction: %v; want 410 Gone", seen, err)
	}
	r.survives()
	if !strings.Contains(web.logText()[logged:], "a watch's resource version is gone (410): listing again") {
		errorf(t, "the web node's log does not say that its watches were refused and listed again")
	}
}

// TestFaultRegistryStopped: the cluster's image registry, the store of the team's shared
// resource caches, is stopped mid-build. Concourse's nearest: a cache it cannot stream
// from another worker, which it fetches again. Here: the get whose version another job
// shared says the shared cache could not be read and fetches it, says it could not share
// what it fetched, and the build succeeds.
func TestFaultRegistryStopped(t *testing.T) {
	dumpOnFailure(t)
	const pipeline = "fault-registry"
	setPipeline(t, pipeline, fmt.Sprintf(`
resources:
- name: thing
  type: mock
  check_every: never
  source: {initial_version: registry-v1, create_files: {data.txt: registry data}}
jobs:
- name: first
  plan:
  - get: thing
- name: run
  plan:
  - %s
  - get: thing
  - task: after
    config:
      platform: linux
      image_resource: %s
      inputs: [{name: thing}]
      run: {path: sh, args: [-c, 'cat thing/data.txt; echo; echo after the fault']}
`, countTask(), busybox()))
	flyOK(t, 5*time.Minute, "check-resource", "-r", pipeline+"/thing")
	out := flyOK(t, 5*time.Minute, "trigger-job", "-j", pipeline+"/first", "-w")
	inOrder(t, out, "fetching version: registry-v1", "succeeded")
	if strings.Contains(out, "was not shared") {
		fatalf(t, "the first job's get did not share what it fetched:\n%s", out)
	}

	r := triggerFaultBuild(t, pipeline)
	clusterSh(t, "stop-registry")
	started := false
	defer func() {
		if !started {
			clusterSh(t, "start-registry")
		}
	}()
	r.stop()
	out, code := r.watch()
	if code != 0 {
		errorf(t, "fly watch: exit %d, want 0 (succeeded)", code)
	}
	eachLineOnce(t, out, 3)
	inOrder(t, out, "count 3", "the shared resource cache of thing could not be read", "fetching version: registry-v1",
		"the resource cache of thing was not shared", "registry data", "after the fault", "succeeded")
	clusterSh(t, "start-registry")
	started = true
}

// TestFaultVolumeFull: the build's volume fills (the fifth target's volumes are file
// systems of their claim's size, smallVolume): mid-step, a process of the count task (fly
// intercept) writes twice that into the task's output, which the task's container holds
// until the step ends and its runner saves it to the volume. Concourse: a worker whose
// disk fills errors the step that can no longer write what it must (its output's volume),
// naming the error; the build errors. Here: the same, the step errored with the write
// that failed ("saving artifact out: ... no space left on device"), its lines each once,
// and the task after it not run.
func TestFaultVolumeFull(t *testing.T) {
	dumpOnFailure(t)
	if err := web.waitForWorkers(time.Minute, "tekton-"+web.small); err != nil {
		fatal(t, err)
	}
	const pipeline = "fault-volume-full"
	setPipeline(t, pipeline, fmt.Sprintf(`
jobs:
- name: run
  plan:
  - task: count
    tags: [%s]
    config:
      platform: linux
      image_resource: %s
      outputs: [{name: out}]
      run: {path: sh, args: [-c, 'i=0; while [ ! -e /tmp/stop ] && [ $i -lt 600 ]; do i=$((i+1)); echo count $i; sleep 1; done']}
  - task: after
    tags: [%s]
    config:
      platform: linux
      image_resource: %s
      run: {path: echo, args: [after the fault]}
`, smallTag, busybox(), smallTag, busybox()))
	r := triggerFaultBuild(t, pipeline)
	out, code := fly(t, 3*time.Minute, "intercept", "-j", pipeline+"/run", "-b", "1", "-s", "count", "--",
		"dd", "if=/dev/zero", "of=out/fill", "bs=1M", "count=64")
	t.Logf("fly intercept (dd): exit %d\n%s", code, out)
	if code != 0 {
		errorf(t, "writing the output: exit %d, want 0 (the task's container holds it)", code)
	}
	r.stop()
	out, code = r.watch()
	if code != 2 {
		errorf(t, "fly watch: exit %d, want 2 (errored)", code)
	}
	eachLineOnce(t, out, 3)
	inOrder(t, out, "count 3", "saving artifact out: ", "no space left on device", "errored")
	if strings.Contains(out, "after the fault") {
		errorf(t, "the task after the full volume ran")
	}
}
