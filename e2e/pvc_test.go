//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/gc"
	buildvol "github.com/concourse-tekton/concourse-tekton/pvc"
	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/tektonrun"
	"github.com/concourse-tekton/concourse-tekton/translate"
)

// buildRun is the PipelineRun the translator makes for build n of job unit of pipeline
// app, with the build volume's storage class.
func buildRun(t *testing.T, n, storageClass string) *pipelinev1.PipelineRun {
	t.Helper()
	var plan concourse.Plan
	const raw = `{"id":"root","do":[{"id":"1","task":{"name":"unit","config":{"platform":"linux","rootfs_uri":"docker:///busybox","run":{"path":"true"}}}}]}`
	if err := json.Unmarshal([]byte(raw), &plan); err != nil {
		t.Fatal(err)
	}
	r, err := translate.Translate(plan, translate.Options{Pipeline: "app", Job: "unit", Build: n, BuildVolumeSize: "64Mi", StorageClass: storageClass})
	if err != nil {
		t.Fatal(err)
	}
	return r.PipelineRun
}

// stepTask is an embedded task of one busybox script over the build workspace.
func stepTask(name, script string, results ...pipelinev1.TaskResult) pipelinev1.PipelineTask {
	return pipelinev1.PipelineTask{
		Name: name,
		TaskSpec: &pipelinev1.EmbeddedTask{TaskSpec: pipelinev1.TaskSpec{
			Workspaces: []pipelinev1.WorkspaceDeclaration{{Name: "build"}},
			Results:    results,
			Steps:      []pipelinev1.Step{{Name: "run", Image: busyboxImage, Script: "#!/bin/sh\nset -e\ncd $(workspaces.build.path)\n" + script}},
		}},
		Workspaces: []pipelinev1.WorkspacePipelineTaskBinding{{Name: "build", Workspace: "build"}},
	}
}

// TestCacheVolumes runs build 1 of a job for real on a build volume from buildvol.Prepare: a
// task leaves a cache and the runner's state, and a verdict, as the runner's does, records
// the outcome (failed: caches survive failed builds too) and leaves only caches/. Build
// 2's volume, from buildvol.Prepare, is a clone that holds the cache and nothing else.
func TestCacheVolumes(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	ctx := context.Background()
	kube, tekton := testCluster.kube, testCluster.tekton
	classes, err := kube.StorageV1().StorageClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range classes.Items {
		t.Logf("storage class %s: provisioner %s, binding %v, default %q", sc.Name, sc.Provisioner, *sc.VolumeBindingMode, sc.Annotations["storageclass.kubernetes.io/is-default-class"])
	}

	cache := runspec.CachePath("unit", "cache")
	first := buildRun(t, "1", "")
	claim1, warnings, err := buildvol.Prepare(ctx, kube, tekton, ns, first)
	if err != nil || len(warnings) > 0 {
		t.Fatalf("preparing build 1: %q, %v", warnings, err)
	}
	first.Spec.PipelineRef = nil
	first.Spec.PipelineSpec = &pipelinev1.PipelineSpec{
		Workspaces: []pipelinev1.PipelineWorkspaceDeclaration{{Name: "build"}},
		Tasks: []pipelinev1.PipelineTask{stepTask("task-unit",
			"mkdir -p "+cache+" state/outcomes volumes/1/out work/1\n"+
				"echo from build 1 > "+cache+"/file\n"+
				"echo succeeded > state/outcomes/1\necho stale > state/aborted\necho artifact > volumes/1/out/f\n")},
		Finally: []pipelinev1.PipelineTask{stepTask(runspec.VerdictTask,
			"printf failed > $(results.outcome.path)\n"+
				"for e in * .[!.]*; do case $e in caches|lost+found|'.[!.]*') ;; *) rm -rf \"$e\" ;; esac; done\n"+
				"exit 1\n",
			pipelinev1.TaskResult{Name: "outcome", Type: pipelinev1.ResultsTypeString})},
	}
	created, err := tekton.TektonV1().PipelineRuns(ns).Create(ctx, first, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating build 1: %v", err)
	}
	if err := buildvol.Own(ctx, kube, ns, claim1, created); err != nil {
		t.Fatal(err)
	}
	done := waitPipelineRun(t, ns, created.Name)
	t.Logf("build 1: %s", done.Status.GetCondition("Succeeded").GetReason())

	second := buildRun(t, "2", "")
	claim2, warnings, err := buildvol.Prepare(ctx, kube, tekton, ns, second)
	if err != nil || len(warnings) > 0 {
		t.Fatalf("preparing build 2: %q, %v", warnings, err)
	}
	got, err := kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, claim2, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ds := got.Spec.DataSource; ds == nil || ds.Name != claim1 || got.Annotations[buildvol.AnnotationClonedFrom] != claim1 {
		t.Fatalf("build 2's volume %s is not a clone of build 1's %s: dataSource %v, annotations %v", claim2, claim1, ds, got.Annotations)
	}
	if ws := second.Spec.Workspaces[0]; ws.PersistentVolumeClaim == nil || ws.PersistentVolumeClaim.ClaimName != claim2 {
		t.Errorf("build 2's workspace is %+v", ws)
	}
	volume := []corev1.Volume{{Name: "build", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim2}}}}
	mount := []corev1.VolumeMount{{Name: "build", MountPath: "/concourse"}}
	logs := runPod(t, ns, "build-2", busyboxImage, "cd /concourse && cat "+cache+"/file && ls -A", volume, mount)
	if want := "from build 1\ncaches\n"; strings.ReplaceAll(logs, "lost+found\n", "") != want {
		t.Errorf("build 2's volume: %q, want the cache of build 1 and nothing else (%q)", logs, want)
	}

	owned, err := kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, claim1, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]metav1.OwnerReference{buildvol.OwnerReference(created)}, owned.OwnerReferences); diff != "" {
		t.Errorf("build 1's volume's owners (-want +got):\n%s", diff)
	}
	// Build 1's volume is the job's cache source, and build 2's has no run yet: both stay.
	r, err := gc.Sweep(ctx, tektonrun.NewTargetFromClients(ns, kube, tekton), gc.Options{Rules: gc.DefaultRules})
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range r.Deleted {
		if i.Kind == gc.KindVolume {
			t.Errorf("gc deleted volume %s: %s", i.Name, i.Reason)
		}
	}
}

// TestCacheVolumesWithoutClones prepares a build on local-path, whose provisioner is not a
// CSI driver's: its volume starts empty, with a warning.
func TestCacheVolumesWithoutClones(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	ctx := context.Background()
	claim, warnings, err := buildvol.Prepare(ctx, testCluster.kube, testCluster.tekton, ns, buildRun(t, "1", "local-path"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"task caches start empty in this build: storage class local-path (provisioner rancher.io/local-path) has no CSI driver, so its volumes cannot be cloned; if they can, annotate it concourse-ci.org/clone=true"}
	if diff := cmp.Diff(want, warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	got, err := testCluster.kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, claim, metav1.GetOptions{})
	if err != nil || got.Spec.DataSource != nil {
		t.Errorf("build volume %s: %v, dataSource %v", claim, err, got.Spec.DataSource)
	}
}
