package tektonengine

import (
	"context"
	"fmt"

	"github.com/tektoncd/pipeline/pkg/apis/pipeline"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/concourse-tekton/concourse-tekton/tektonrun"
	"github.com/concourse-tekton/concourse-tekton/tektonrun/podexec"
)

// DeleteCheckRun deletes the PipelineRun of the TaskRun taskRun on target, with its
// TaskRuns and pods, if it is a check build's (AnnotationCheck), or the pod taskRun if
// it is a check session's: the container of a check, which the ATC no longer wants. It says whether it was; one that is gone
// already, or of another build, is not, and stays as it is.
func DeleteCheckRun(ctx context.Context, target *tektonrun.Target, taskRun string) (bool, error) {
	// A check session's container is its pod.
	if deleted, err := podexec.New(target.Namespace, target.Kube, target.Tekton, nil).DeleteSession(ctx, taskRun); deleted || err != nil {
		return deleted, err
	}
	ns := target.Namespace
	tr, err := target.Tekton.TektonV1().TaskRuns(ns).Get(ctx, taskRun, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("finding the run of container %s: %w", taskRun, err)
	}
	name := tr.Labels[pipeline.PipelineRunLabelKey]
	if name == "" {
		return false, nil
	}
	runs := target.Tekton.TektonV1().PipelineRuns(ns)
	pr, err := runs.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("finding the run of container %s: %w", taskRun, err)
	}
	if pr.Annotations[AnnotationCheck] != "true" {
		return false, nil
	}
	policy := metav1.DeletePropagationBackground
	err = runs.Delete(ctx, pr.Name, metav1.DeleteOptions{PropagationPolicy: &policy, Preconditions: &metav1.Preconditions{UID: &pr.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		return true, fmt.Errorf("deleting check run %s/%s: %w", ns, pr.Name, err)
	}
	return true, nil
}

// CheckRunDeleter deletes the check run of a container (a TaskRun) on a worker: *Pool.
type CheckRunDeleter interface {
	DeleteCheckRun(ctx context.Context, worker, taskRun string) error
}

var _ CheckRunDeleter = (*Pool)(nil)

// DeleteCheckRun deletes the check run of the container taskRun on the worker of that
// name (none: nothing to delete).
func (p *Pool) DeleteCheckRun(ctx context.Context, worker, taskRun string) error {
	for _, w := range p.Workers {
		if w.Name == worker {
			_, err := DeleteCheckRun(ctx, w.Target, taskRun)
			return err
		}
	}
	return nil
}
