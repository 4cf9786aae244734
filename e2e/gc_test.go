//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tektoncd/pipeline/pkg/apis/pipeline"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/concourse-tekton/concourse-tekton/gc"
	buildvol "github.com/concourse-tekton/concourse-tekton/pvc"
	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/tektonrun"
	"github.com/concourse-tekton/concourse-tekton/translate"
)

// gcPipeline has a job that keeps 5 builds, and one that runs until it is aborted.
func gcPipeline(t *testing.T) string {
	repo, tag, _ := strings.Cut(busyboxImage, ":")
	image := `image_resource: {type: registry-image, source: {repository: ` + repo + `, tag: "` + tag + `"}}`
	pipeline := `jobs:
- name: tick
  build_log_retention: {builds: 5}
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

// TestGC runs 30 builds of a job that keeps 5, and a build of another job that is still
// running, then gc: the 25 oldest builds go with their TaskRuns, pods and volumes; the 5
// newest stay with their volumes, their pods go once their events are archived, and
// "events" still prints their logs; the running build is left as it was. A second gc
// finds nothing more to delete.
func TestGC(t *testing.T) {
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
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for n := 1; n <= 30; n++ {
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
	poll(t, "the 30 builds of tick to end", 10*time.Minute, func(ctx context.Context) (bool, error) {
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
		return ended == 30, nil
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
	for n := 1; n <= 30; n++ {
		run := translate.RunName("gc", "tick", fmt.Sprint(n))
		switch {
		case n > 25:
			wantKept = append(wantKept, run+": "+gc.ReasonNewest)
		case !slices.Contains(wantKept, run+": "+gc.ReasonCacheSource):
			wantDeleted = append(wantDeleted, run)
		}
	}
	wantKept = append(wantKept, slow+": "+gc.ReasonRunning)
	slices.Sort(wantDeleted)
	slices.Sort(wantKept)
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
	exit, stdout, stderr = runCLI(t, ctx, "events", translate.RunName("gc", "tick", "28"), "-n", ns, "--no-color")
	if exit != 0 || !strings.Contains(stdout, "\ntick tock\n") || !strings.Contains(stdout, "succeeded") {
		t.Errorf("events of build 28 after its pods went: exit %d\nstdout:\n%s\nstderr:\n%s", exit, stdout, stderr)
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

func podNames(t *testing.T, ns, selector string) []string {
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
