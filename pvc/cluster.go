package pvc

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/tektoncd/pipeline/pkg/apis/pipeline"
	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"github.com/tektoncd/pipeline/pkg/client/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
)

// How long Prepare watches a new clone of a storage class that binds volumes at once
// (a driver that cannot clone says so in a ProvisioningFailed event, and the claim would
// stay pending for ever), and how long it waits for a claim of the build's name to be
// deleted (a failed clone, or the volume of a deleted run of the same name, which goes
// once its pods have: slow on a busy node).
var (
	cloneWait  = 5 * time.Second
	deleteWait = 2 * time.Minute
	pollEvery  = 250 * time.Millisecond
)

// warnPrefix starts every warning: what the user loses.
const warnPrefix = "task caches start empty in this build: "

// Prepare gives a translated PipelineRun that is not created yet its build volume: a
// claim named ClaimName(run.Name), cloned from the job's last cleanly finished build
// volume (CacheSource) when the storage class can clone, else empty. It binds the run's
// build workspace to the claim (BindBuildVolume) and returns the claim's name.
//
// Warnings say, in one sentence each, why the task caches of the job's last build are
// not there; they never fail the build. A claim that exists already (a retry) is taken
// as it is. Once the run is created, Own the claim.
func Prepare(ctx context.Context, kube kubernetes.Interface, tekton versioned.Interface, namespace string, run *v1.PipelineRun) (string, []string, error) {
	name := ClaimName(run.Name)
	claims := kube.CoreV1().PersistentVolumeClaims(namespace)
	if ws := workspace(run); ws != nil && ws.PersistentVolumeClaim != nil && ws.PersistentVolumeClaim.ClaimName == name {
		if _, err := claims.Get(ctx, name, metav1.GetOptions{}); err != nil {
			return "", nil, fmt.Errorf("getting build volume %s: %w", name, err)
		}
		return name, nil, nil
	}
	size, class, err := Request(run)
	if err != nil {
		return "", nil, err
	}
	class, immediate, warning := storageClass(ctx, kube, class)
	var source *corev1.PersistentVolumeClaim
	if warning == "" {
		source, err = findSource(ctx, kube, tekton, namespace, BuildClaim(run, size, class, ""))
		if err != nil {
			warning = warnPrefix + err.Error()
		}
	}
	from := ""
	if source != nil {
		from, size = source.Name, atLeast(size, source)
	}
	claim, err := createOrGet(ctx, claims, BuildClaim(run, size, class, from))
	if err != nil {
		return "", nil, err
	}
	if ds := claim.Spec.DataSource; ds != nil && immediate {
		if failure := awaitClone(ctx, kube, claim); failure != "" {
			if err := replace(ctx, claims, claim, BuildClaim(run, size, class, "")); err != nil {
				return "", nil, err
			}
			warning = fmt.Sprintf("%scloning %s failed (%s); if storage class %s cannot clone volumes, annotate it %s=false", warnPrefix, ds.Name, failure, class, AnnotationClone)
		}
	}
	if err := BindBuildVolume(run, name); err != nil {
		return "", nil, err
	}
	var warnings []string
	if warning != "" {
		warnings = append(warnings, warning)
	}
	return name, warnings, nil
}

// storageClass resolves the build volume's class (the default one for ""), and says
// whether it binds at once and, as a warning, why its volumes are not cloned.
func storageClass(ctx context.Context, kube kubernetes.Interface, name string) (string, bool, string) {
	var sc *storagev1.StorageClass
	if name != "" {
		var err error
		if sc, err = kube.StorageV1().StorageClasses().Get(ctx, name, metav1.GetOptions{}); err != nil {
			return name, false, fmt.Sprintf("%sreading storage class %s: %v", warnPrefix, name, err)
		}
	} else {
		list, err := kube.StorageV1().StorageClasses().List(ctx, metav1.ListOptions{})
		if err != nil {
			return "", false, fmt.Sprintf("%sfinding the default storage class: %v", warnPrefix, err)
		}
		if sc = defaultClass(list.Items); sc == nil {
			return "", false, warnPrefix + "there is no default storage class, and none was named"
		}
	}
	immediate := sc.VolumeBindingMode == nil || *sc.VolumeBindingMode == storagev1.VolumeBindingImmediate
	csi := false
	// A CSI driver's name is a DNS subdomain; in-tree and other provisioners have a '/'
	// (kubernetes.io/..., rancher.io/local-path), which no object name may have.
	if sc.Annotations[AnnotationClone] == "" && len(validation.IsDNS1123Subdomain(sc.Provisioner)) == 0 {
		_, err := kube.StorageV1().CSIDrivers().Get(ctx, sc.Provisioner, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return sc.Name, immediate, fmt.Sprintf("%sreading CSI driver %s: %v", warnPrefix, sc.Provisioner, err)
		}
		csi = err == nil
	}
	if ok, why := canClone(sc, csi); !ok {
		return sc.Name, immediate, warnPrefix + why
	}
	return sc.Name, immediate, ""
}

// jobSelector selects the objects of next's job by its labels (CacheSource compares the
// full names); it is nil for a claim of no job.
func jobSelector(next *corev1.PersistentVolumeClaim) labels.Set {
	if next.Labels[runspec.LabelJob] == "" {
		return nil
	}
	set := labels.Set{}
	for _, k := range []string{runspec.LabelTeam, runspec.LabelPipeline, runspec.LabelJob} {
		if v, ok := next.Labels[k]; ok {
			set[k] = v
		}
	}
	return set
}

// findSource is the claim next should be cloned from, or nil.
func findSource(ctx context.Context, kube kubernetes.Interface, tekton versioned.Interface, namespace string, next *corev1.PersistentVolumeClaim) (*corev1.PersistentVolumeClaim, error) {
	job := jobSelector(next)
	if job == nil {
		return nil, nil
	}
	claims, runs, taskRuns, err := list(ctx, kube, tekton, namespace, labels.SelectorFromSet(job))
	if err != nil {
		return nil, err
	}
	name, ok := CacheSource(claims, runs, taskRuns, next)
	if !ok {
		return nil, nil
	}
	for i := range claims {
		if claims[i].Name == name {
			return &claims[i], nil
		}
	}
	return nil, nil
}

// list reads the build volumes, PipelineRuns and verdict TaskRuns that job selects.
func list(ctx context.Context, kube kubernetes.Interface, tekton versioned.Interface, namespace string, job labels.Selector) ([]corev1.PersistentVolumeClaim, []v1.PipelineRun, []v1.TaskRun, error) {
	with := func(k, v string) string {
		r, _ := labels.NewRequirement(k, selection.Equals, []string{v})
		return job.Add(*r).String()
	}
	claims, err := kube.CoreV1().PersistentVolumeClaims(namespace).List(ctx, metav1.ListOptions{LabelSelector: with(LabelVolume, VolumeBuild)})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("listing build volumes: %w", err)
	}
	runs, err := tekton.TektonV1().PipelineRuns(namespace).List(ctx, metav1.ListOptions{LabelSelector: job.String()})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("listing PipelineRuns: %w", err)
	}
	taskRuns, err := tekton.TektonV1().TaskRuns(namespace).List(ctx, metav1.ListOptions{LabelSelector: with(pipeline.PipelineTaskLabelKey, runspec.VerdictTask)})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("listing verdict TaskRuns: %w", err)
	}
	// And the last steps that hold their build's verdict (runspec.LabelVerdict).
	fused, err := tekton.TektonV1().TaskRuns(namespace).List(ctx, metav1.ListOptions{LabelSelector: with(runspec.LabelVerdict, runspec.VerdictFused)})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("listing verdict TaskRuns: %w", err)
	}
	return claims.Items, runs.Items, append(taskRuns.Items, fused.Items...), nil
}

// createOrGet creates the claim, or takes the one of the same build made before. A claim
// of its name that is being deleted (the volume of a run deleted just before, whose
// build's name is used again) is waited for, up to deleteWait, and the claim created once
// it is gone: it is never taken, as its volume is on its way out.
func createOrGet(ctx context.Context, claims typedcorev1.PersistentVolumeClaimInterface, claim *corev1.PersistentVolumeClaim) (*corev1.PersistentVolumeClaim, error) {
	var out *corev1.PersistentVolumeClaim
	var dying types.UID
	err := wait.PollUntilContextTimeout(ctx, pollEvery, deleteWait, true, func(ctx context.Context) (bool, error) {
		created, err := claims.Create(ctx, claim, metav1.CreateOptions{})
		if err == nil {
			out = created
			return true, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return false, fmt.Errorf("creating build volume %s: %w", claim.Name, err)
		}
		got, err := claims.Get(ctx, claim.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil // gone in between: create it again
		} else if err != nil {
			return false, fmt.Errorf("getting build volume %s: %w", claim.Name, err)
		}
		if got.DeletionTimestamp != nil {
			dying = got.UID
			return false, nil
		}
		want, _ := jobOf(claim.ObjectMeta)
		if j, ok := isBuildVolume(got); !ok || j != want || got.Labels[runspec.LabelBuild] != claim.Labels[runspec.LabelBuild] {
			return false, fmt.Errorf("PVC %s exists and is not this build's volume: delete it, or give the build another name", claim.Name)
		}
		out = got
		return true, nil
	})
	if err != nil && dying != "" && wait.Interrupted(err) && ctx.Err() == nil {
		return nil, fmt.Errorf("build volume %s was still being deleted after %s: try again once it is gone", claim.Name, deleteWait)
	}
	return out, err
}

// awaitClone watches a new clone for a while: it returns why its provisioning failed,
// or "" when it is bound, still under way, or cannot be watched.
func awaitClone(ctx context.Context, kube kubernetes.Interface, claim *corev1.PersistentVolumeClaim) string {
	var failure string
	selector := fields.Set{"involvedObject.kind": kindClaim, "involvedObject.name": claim.Name}.String()
	_ = wait.PollUntilContextTimeout(ctx, pollEvery, cloneWait, true, func(ctx context.Context) (bool, error) {
		c, err := kube.CoreV1().PersistentVolumeClaims(claim.Namespace).Get(ctx, claim.Name, metav1.GetOptions{})
		if err != nil || c.Status.Phase == corev1.ClaimBound {
			return true, nil
		}
		events, err := kube.CoreV1().Events(claim.Namespace).List(ctx, metav1.ListOptions{FieldSelector: selector})
		if err != nil {
			return true, nil
		}
		for _, e := range events.Items {
			if e.InvolvedObject.UID == claim.UID && e.Reason == "ProvisioningFailed" {
				failure = e.Message
				return true, nil
			}
		}
		return false, nil
	})
	return failure
}

// replace deletes a claim and, once it is gone (createOrGet waits for a claim being
// deleted), creates another of the same name.
func replace(ctx context.Context, claims typedcorev1.PersistentVolumeClaimInterface, old, claim *corev1.PersistentVolumeClaim) error {
	uid := old.UID
	err := claims.Delete(ctx, old.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting the failed clone %s: %w", old.Name, err)
	}
	_, err = createOrGet(ctx, claims, claim)
	return err
}

// Own makes the PipelineRun (created, so with its UID) the owner of its build volume,
// so that the volume is deleted with it.
func Own(ctx context.Context, kube kubernetes.Interface, namespace, claim string, run *v1.PipelineRun) error {
	if run.UID == "" {
		return fmt.Errorf("owning build volume %s: PipelineRun %s has no UID (create it first)", claim, run.Name)
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"ownerReferences": []metav1.OwnerReference{OwnerReference(run)}}})
	if err != nil {
		return err
	}
	if _, err := kube.CoreV1().PersistentVolumeClaims(namespace).Patch(ctx, claim, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("owning build volume %s: %w", claim, err)
	}
	return nil
}
