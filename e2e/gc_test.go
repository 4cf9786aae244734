//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tektoncd/pipeline/pkg/apis/pipeline"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/concourse-tekton/concourse-tekton/gc"
	buildvol "github.com/concourse-tekton/concourse-tekton/pvc"
	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/tektonrun"
	"github.com/concourse-tekton/concourse-tekton/translate"
)

// TestGC's builds of gcPipeline's job tick, and how many of them the job keeps.
const tickBuilds, tickKept = 12, 5

// gcPipeline has a job that keeps tickKept builds, and one that runs until it is aborted.
func gcPipeline(t *testing.T) string {
	image := busyboxImageResource()
	pipeline := `jobs:
- name: tick
  build_log_retention: {builds: ` + fmt.Sprint(tickKept) + `}
  plan:
  - task: say
    config:
      platform: linux
      ` + image + `
      run: {path: sh, args: [-c, "echo tick tock"]}
- name: slow
  build_log_retention: {builds: 1}
  plan:
  - task: wait
    config:
      platform: linux
      ` + image + `
      run: {path: sh, args: [-c, "echo waiting; sleep 600"]}
`
	path := filepath.Join(t.TempDir(), "gc.yml")
	if err := os.WriteFile(path, []byte(pipeline), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestGC runs tickBuilds (12) builds of a job that keeps tickKept (5), and a build of
// another job that is still running, then gc: the 7 oldest builds go with their TaskRuns,
// pods and volumes (gc of 10,000 builds is make bench-scale's); the 5 newest stay with their volumes, their pods go once their events are archived, and
// "events" still prints their logs; the running build is left as it was. A second gc
// finds nothing more to delete.
func TestGC(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	ctx := context.Background()
	file := gcPipeline(t)
	kube, tekton := testCluster.kube, testCluster.tekton
	start := func(job, build string) {
		if exit, stdout, stderr := runCLI(t, ctx, "run", file, "-j", job, "--build", build, "-n", ns, "--build-volume-size", "64Mi"); exit != 0 {
			t.Errorf("run -j %s --build %s: exit %d\n%s%s", job, build, exit, stdout, stderr)
		}
	}
	start("slow", "1")
	// Four at a time; the 5 the job keeps are the newest created, so they start once the
	// 7 others were created (four concurrent starts create their runs in any order).
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for n := 1; n <= tickBuilds; n++ {
		if n == tickBuilds-tickKept+1 {
			wg.Wait()
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			start("tick", fmt.Sprint(n))
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	tickRuns := "concourse-ci.org/job=tick"
	poll(t, "the builds of tick to end", 10*time.Minute, func(ctx context.Context) (bool, error) {
		l, err := tekton.TektonV1().PipelineRuns(ns).List(ctx, metav1.ListOptions{LabelSelector: tickRuns})
		if err != nil {
			return false, err
		}
		ended := 0
		for _, r := range l.Items {
			if f, _ := done(r.Status.GetCondition("Succeeded")); f {
				ended++
			}
		}
		return ended == tickBuilds, nil
	})
	slow := translate.RunName("gc", "slow", "1")
	poll(t, "the slow build's step to run", 5*time.Minute, func(ctx context.Context) (bool, error) {
		l, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: pipeline.PipelineRunLabelKey + "=" + slow})
		return err == nil && len(l.Items) > 0 && l.Items[0].Status.Phase == "Running", err
	})
	slowPods := podNames(t, ns, pipeline.PipelineRunLabelKey+"="+slow)

	exit, stdout, stderr := runCLI(t, ctx, "gc", "-n", ns, "-o", "json")
	if exit != 0 {
		t.Fatalf("gc: exit %d\n%s%s", exit, stdout, stderr)
	}
	var report gc.Report
	if err := json.Unmarshal([]byte(stdout), &report); err != nil {
		t.Fatalf("gc -o json: %v\n%s", err, stdout)
	}
	// The job's cache source is the build that ended last: when that is not among
	// the 5 newest (the builds ran 4 at a time), it stays too.
	runs, err := tekton.TektonV1().PipelineRuns(ns).List(ctx, metav1.ListOptions{LabelSelector: tickRuns})
	if err != nil {
		t.Fatal(err)
	}
	var last time.Time
	for _, r := range runs.Items {
		if r.Status.CompletionTime != nil && r.Status.CompletionTime.After(last) {
			last = r.Status.CompletionTime.Time
		}
	}
	kept := map[string]bool{slow: true}
	var deletedRuns, keptRuns, wantDeleted, wantKept []string
	for _, i := range report.Deleted {
		if i.Kind == gc.KindPipelineRun {
			deletedRuns = append(deletedRuns, i.Name)
		}
	}
	for _, i := range report.Kept {
		if i.Kind != gc.KindPipelineRun {
			continue
		}
		keptRuns = append(keptRuns, i.Name+": "+i.Reason)
		kept[i.Name] = true
		if i.Reason != gc.ReasonCacheSource {
			continue
		}
		wantKept = append(wantKept, i.Name+": "+gc.ReasonCacheSource)
		for _, r := range runs.Items {
			if r.Name == i.Name && r.Status.CompletionTime.Time.Before(last) {
				t.Errorf("build %s, which ended at %v, kept as the cache source; the last build ended at %v", r.Name, r.Status.CompletionTime, last)
			}
		}
	}
	for n := 1; n <= tickBuilds; n++ {
		run := translate.RunName("gc", "tick", fmt.Sprint(n))
		switch {
		case n > tickBuilds-tickKept:
			wantKept = append(wantKept, run+": "+gc.ReasonNewest)
		case !slices.Contains(wantKept, run+": "+gc.ReasonCacheSource):
			wantDeleted = append(wantDeleted, run)
		}
	}
	wantKept = append(wantKept, slow+": "+gc.ReasonRunning)
	slices.Sort(wantDeleted)
	slices.Sort(wantKept)
	// The report lists items by name; "name: reason" strings sort differently when one
	// name is the start of another (gc-tick-1, gc-tick-10).
	slices.Sort(keptRuns)
	if !slices.Equal(deletedRuns, wantDeleted) || !slices.Equal(keptRuns, wantKept) || len(kept) > 7 {
		t.Fatalf("gc deleted %q, kept %q; want deleted %q, kept %q\n%s", deletedRuns, keptRuns, wantDeleted, wantKept, stdout)
	}

	// What the deleted builds owned goes with them: TaskRuns, pods, volumes.
	poll(t, "the deleted builds' TaskRuns, pods and volumes to go", 3*time.Minute, func(ctx context.Context) (bool, error) {
		runs, err := tekton.TektonV1().PipelineRuns(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		trs, err := tekton.TektonV1().TaskRuns(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		claims, err := kube.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: runspec.LabelBuild})
		if err != nil {
			return false, err
		}
		var left []string
		for _, r := range runs.Items {
			if !kept[r.Name] {
				left = append(left, "PipelineRun "+r.Name)
			}
		}
		for _, tr := range trs.Items {
			if !kept[tr.Labels[pipeline.PipelineRunLabelKey]] {
				left = append(left, "TaskRun "+tr.Name)
			}
		}
		for _, c := range claims.Items {
			// A deleted build's volume that was a cache source a moment ago is released
			// from it, and stays for the grace period.
			if !kept[strings.TrimSuffix(c.Name, "-build")] && (len(c.OwnerReferences) > 0 || c.Annotations[buildvol.AnnotationReleased] == "") {
				left = append(left, "PersistentVolumeClaim "+c.Name)
			}
		}
		for _, p := range pods.Items {
			if run := p.Labels[pipeline.PipelineRunLabelKey]; run != slow {
				left = append(left, "Pod "+p.Name) // the kept ended builds' pods go too
			}
		}
		if len(left) > 0 {
			t.Logf("still there: %d, e.g. %s", len(left), left[0])
		}
		return len(left) == 0, nil
	})
	// The kept builds keep their volumes (within the grace period; after it, the job's
	// cache source).
	for run := range kept {
		if _, err := kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, run+"-build", metav1.GetOptions{}); err != nil {
			t.Errorf("kept build %s lost its volume: %v", run, err)
		}
	}
	// The running build was not touched.
	if got := podNames(t, ns, pipeline.PipelineRunLabelKey+"="+slow); !slices.Equal(got, slowPods) {
		t.Errorf("the running build's pods were %v, are %v", slowPods, got)
	}
	r, err := tekton.TektonV1().PipelineRuns(ns).Get(ctx, slow, metav1.GetOptions{})
	if err != nil || r.IsDone() || r.Spec.Status != "" {
		t.Errorf("the running build: err %v, done %v, spec status %q", err, err == nil && r.IsDone(), r.Spec.Status)
	}

	// A kept build whose pods are gone prints its logs from its archive.
	exit, stdout, stderr = runCLI(t, ctx, "events", translate.RunName("gc", "tick", fmt.Sprint(tickBuilds-1)), "-n", ns, "--no-color")
	if exit != 0 || !strings.Contains(stdout, "\ntick tock\n") || !strings.Contains(stdout, "succeeded") {
		t.Errorf("events of build %d after its pods went: exit %d\nstdout:\n%s\nstderr:\n%s", tickBuilds-1, exit, stdout, stderr)
	}

	// Nothing more to delete.
	exit, stdout, stderr = runCLI(t, ctx, "gc", "-n", ns, "-o", "json")
	if exit != 0 {
		t.Fatalf("second gc: exit %d\n%s%s", exit, stdout, stderr)
	}
	report = gc.Report{}
	if err := json.Unmarshal([]byte(stdout), &report); err != nil {
		t.Fatal(err)
	}
	if len(report.Deleted) > 0 {
		t.Errorf("a second gc deleted %+v", report.Deleted)
	}

	// Past the grace period, the released volumes and those of the kept builds but the
	// job's cache source go; the running build keeps its own.
	target, err := tektonrun.NewTarget(tektonrun.TargetOptions{Kubeconfig: kubeconfigPath(), Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(buildvol.Grace + time.Minute)
	report, err = gc.Sweep(ctx, target, gc.Options{Rules: gc.DefaultRules, Now: func() time.Time { return later }})
	if err != nil || len(report.Failed) > 0 {
		t.Fatalf("gc past the grace period: %v %+v", err, report.Failed)
	}
	for _, i := range report.Deleted {
		if i.Kind != gc.KindVolume {
			t.Errorf("gc past the grace period deleted %s %s: %s", i.Kind, i.Name, i.Reason)
		}
	}
	poll(t, "the volumes but two to go", 2*time.Minute, func(ctx context.Context) (bool, error) {
		claims, err := kube.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		var names []string
		for _, c := range claims.Items {
			names = append(names, c.Name)
		}
		if len(names) != 2 || !slices.Contains(names, slow+"-build") || !kept[strings.TrimSuffix(names[0], "-build")] || !kept[strings.TrimSuffix(names[1], "-build")] {
			t.Logf("volumes: %v", names)
			return false, nil
		}
		return true, nil
	})

	if exit, _, stderr := runCLI(t, ctx, "abort", slow, "-n", ns); exit != 0 {
		t.Errorf("abort %s: exit %d: %s", slow, exit, stderr)
	}
}

func podNames(t testing.TB, ns, selector string) []string {
	t.Helper()
	l, err := testCluster.kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range l.Items {
		out = append(out, p.Name)
	}
	slices.Sort(out)
	return out
}

// cliImage is the concourse-tekton command's image: `make cli-image` writes
// bin/images/cli.tar, which the harness imports.
var cliImage = envOr("E2E_CLI_IMAGE", "ghcr.io/concourse-tekton/concourse-tekton:dev")

// TestGCCronJob applies the README's CronJob (examples/gc/cronjob.yaml) in a namespace of
// two ended builds of a job that keeps one, and runs it once, as kubectl create job
// --from=cronjob does: in its pod, with its Role alone, gc deletes the older build and
// archives the newer one's events.
func TestGCCronJob(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	ctx := context.Background()
	kube := testCluster.kube
	file := filepath.Join(t.TempDir(), "kept.yml")
	repo, tag, _ := strings.Cut(busyboxImage, ":")
	pipeline := `jobs:
- name: once
  build_log_retention: {builds: 1}
  plan:
  - task: say
    config:
      platform: linux
      image_resource: {type: registry-image, source: {repository: ` + repo + `, tag: "` + tag + `"}}
      run: {path: echo, args: [hello]}
`
	if err := os.WriteFile(file, []byte(pipeline), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, build := range []string{"1", "2"} {
		if exit, stdout, stderr := runCLI(t, ctx, "run", file, "-j", "once", "--build", build, "-w", "-n", ns, "--build-volume-size", "64Mi"); exit != 0 {
			t.Fatalf("run --build %s: exit %d\n%s%s", build, exit, stdout, stderr)
		}
	}

	manifest, err := os.ReadFile(filepath.Join("..", "examples", "gc", "cronjob.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cronJob *batchv1.CronJob
	for _, doc := range strings.Split(string(manifest), "\n---\n") {
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode([]byte(doc), nil, nil)
		if err != nil {
			t.Fatalf("examples/gc/cronjob.yaml: %v", err)
		}
		switch o := obj.(type) {
		case *corev1.ServiceAccount:
			_, err = kube.CoreV1().ServiceAccounts(ns).Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.Role:
			_, err = kube.RbacV1().Roles(ns).Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.RoleBinding:
			for i := range o.Subjects {
				o.Subjects[i].Namespace = ns
			}
			_, err = kube.RbacV1().RoleBindings(ns).Create(ctx, o, metav1.CreateOptions{})
		case *batchv1.CronJob:
			pod := &o.Spec.JobTemplate.Spec.Template.Spec
			pod.Containers[0].Image = cliImage
			if kubeconfigPath() == harnessKubeconfig() {
				// The harness's pods reach only the host's address on their bridge, where
				// the cluster forwards the apiserver (which listens on loopback).
				host, port, err := net.SplitHostPort(podAPIServer(t))
				if err != nil {
					t.Fatal(err)
				}
				pod.Containers[0].Env = append(pod.Containers[0].Env,
					corev1.EnvVar{Name: "KUBERNETES_SERVICE_HOST", Value: host},
					corev1.EnvVar{Name: "KUBERNETES_SERVICE_PORT", Value: port})
			}
			cronJob, err = kube.BatchV1().CronJobs(ns).Create(ctx, o, metav1.CreateOptions{})
		default:
			t.Fatalf("examples/gc/cronjob.yaml holds a %T", obj)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if cronJob == nil {
		t.Fatal("examples/gc/cronjob.yaml holds no CronJob")
	}
	// The RBAC authorizer learns of the Role from its informers, a moment later.
	time.Sleep(2 * time.Second)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "gc-now", Annotations: map[string]string{"cronjob.kubernetes.io/instantiate": "manual"}},
		Spec:       cronJob.Spec.JobTemplate.Spec,
	}
	if _, err := kube.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var pod string
	poll(t, "the gc Job to end", 3*time.Minute, func(ctx context.Context) (bool, error) {
		pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=gc-now"})
		if err != nil || len(pods.Items) == 0 {
			return false, err
		}
		pod = pods.Items[0].Name
		phase := pods.Items[0].Status.Phase
		return phase == corev1.PodSucceeded || phase == corev1.PodFailed, nil
	})
	logs, err := podLogs(ctx, ns, pod, "gc")
	if err != nil {
		t.Fatal(err)
	}
	older, newer := translate.RunName("kept", "once", "1"), translate.RunName("kept", "once", "2")
	checkLines(t, logs, []string{
		"deleted PipelineRun " + older + " (main/kept/once #1): " + gc.ReasonBeyond,
		"deleted Pod " + newer + "-task-say-pod (main/kept/once #2): " + gc.ReasonEnded,
		"kept PipelineRun " + newer + " (main/kept/once #2): " + gc.ReasonNewest,
	}, nil)
	if _, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, newer+"-events", metav1.GetOptions{}); err != nil {
		t.Errorf("the kept build's events archive: %v", err)
	}
}

// podAPIServer is where the harness's pods reach the API server (cluster.sh pod-apiserver).
func podAPIServer(t *testing.T) string {
	t.Helper()
	if addr := os.Getenv("E2E_POD_APISERVER"); addr != "" {
		return addr
	}
	out, err := exec.Command(filepath.Join("cluster", "cluster.sh"), "pod-apiserver").Output()
	if err != nil {
		t.Fatalf("cluster.sh pod-apiserver: %v", err)
	}
	return strings.TrimSpace(string(out))
}
