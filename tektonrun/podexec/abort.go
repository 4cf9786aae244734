package podexec

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"knative.dev/pkg/apis"

	"github.com/concourse-tekton/concourse-tekton/internal/syncbuf"
	"github.com/concourse-tekton/concourse-tekton/pvc"
	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/tektonrun/buildevents"
	"github.com/concourse-tekton/concourse-tekton/translate"
)

// Execer runs a command in a container of a running pod (pods/exec) and returns its
// combined output.
type Execer interface {
	Exec(ctx context.Context, namespace, pod, container string, command []string) (string, error)
}

type spdyExecer struct {
	config *rest.Config
	kube   kubernetes.Interface
}

var _ Execer = (*spdyExecer)(nil)

func (e *spdyExecer) Exec(ctx context.Context, namespace, pod, container string, command []string) (string, error) {
	req := e.kube.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: command, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ex, err := remotecommand.NewSPDYExecutor(e.config, "POST", req.URL())
	if err != nil {
		return "", err
	}
	// Two goroutines copy stdout and stderr into it.
	var out syncbuf.Buffer
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out, Stderr: &out})
	return out.String(), err
}

// Abort aborts a running build the way Concourse does: running steps are interrupted, their
// on_abort and ensure hooks still run, and the build ends aborted. It writes the runner's
// abort marker on the build's volume, from inside a running step container of the build
// (or, when none is running, from a short-lived pod that mounts the volume), and then
// cancels the steps whose pods cannot start (unschedulable), which would otherwise wait
// forever. Aborting a build that has ended does nothing.
func (pe *Pods) Abort(ctx context.Context, run string) error {
	ns := pe.Namespace
	tekton := pe.Tekton.TektonV1()
	for {
		pr, err := tekton.PipelineRuns(ns).Get(ctx, run, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("aborting build %s: %w", run, err)
		}
		if buildevents.Done(pr.Status.GetCondition(apis.ConditionSucceeded)) {
			return nil
		}
		if pr.Annotations[pvc.AnnotationAborted] == "" {
			// Before the marker: a volume that may hold it is never the job's cache source.
			patch := []byte(`{"metadata":{"annotations":{"` + pvc.AnnotationAborted + `":"true"}}}`)
			if _, err := tekton.PipelineRuns(ns).Patch(ctx, run, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
				return fmt.Errorf("aborting build %s: %w", run, err)
			}
		}
		done, err := pe.writeAbortMarker(ctx, pr)
		if err != nil {
			return fmt.Errorf("aborting build %s: %w", run, err)
		}
		if done {
			return pe.cancelStuck(ctx, pr)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// writeAbortMarker tells whether the marker was written.
func (pe *Pods) writeAbortMarker(ctx context.Context, pr *v1.PipelineRun) (bool, error) {
	ns := pe.Namespace
	pods, err := pe.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: labelPipelineRun + "=" + pr.Name})
	if err != nil {
		return false, err
	}
	var errs []error
	if pe.Exec != nil {
		for _, p := range pods.Items {
			if !stepRunning(&p) {
				continue
			}
			out, err := pe.Exec.Exec(ctx, ns, p.Name, runspec.StepContainer, []string{runspec.RunnerPath, string(runspec.ModeAbort), "--volume=" + runspec.DefaultVolume})
			if err == nil && strings.Contains(out, runspec.AbortWritten) {
				return true, nil
			}
			if err == nil {
				err = errors.New("the exec ended without the runner's word that the marker is written (its stream lost?)")
			}
			errs = append(errs, fmt.Errorf("pod %s: %w: %s", p.Name, err, strings.TrimSpace(out)))
		}
	}
	// No step runs now (the build is between steps, or its pods cannot start): write the
	// marker from a pod of our own, on the build's volume.
	claim, err := pe.buildClaim(ctx, pr)
	if err != nil || claim == "" {
		if len(errs) > 0 {
			return false, errors.Join(errs...)
		}
		return false, err
	}
	return pe.abortPod(ctx, pr, claim)
}

func stepRunning(p *corev1.Pod) bool {
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == runspec.StepContainer && s.State.Running != nil {
			return true
		}
	}
	return false
}

// buildClaim finds the PVC of the build's volume.
func (pe *Pods) buildClaim(ctx context.Context, pr *v1.PipelineRun) (string, error) {
	for _, w := range pr.Spec.Workspaces {
		if w.Name == runspec.Workspace && w.PersistentVolumeClaim != nil {
			return w.PersistentVolumeClaim.ClaimName, nil
		}
	}
	claims, err := pe.Kube.CoreV1().PersistentVolumeClaims(pe.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	for _, cl := range claims.Items {
		for _, o := range cl.OwnerReferences {
			if o.UID == pr.UID {
				return cl.Name, nil
			}
		}
	}
	return "", nil
}

// abortPod runs the runner's abort mode in a pod that mounts the build's volume, and
// tells whether it succeeded.
func (pe *Pods) abortPod(ctx context.Context, pr *v1.PipelineRun, claim string) (bool, error) {
	ns := pe.Namespace
	noToken := false
	root := int64(0)
	image := runnerImage(pr)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:   truncateName(pr.Name, "-abort"),
			Labels: map[string]string{runspec.LabelManagedBy: runspec.ManagedBy, runspec.LabelBuild: pr.Labels[runspec.LabelBuild]},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "tekton.dev/v1", Kind: "PipelineRun", Name: pr.Name, UID: pr.UID,
			}},
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                corev1.RestartPolicyNever,
			AutomountServiceAccountToken: &noToken,
			Containers: []corev1.Container{{
				Name:         "abort",
				Image:        image,
				Command:      []string{runspec.RunnerBinary, string(runspec.ModeAbort), "--volume=" + runspec.DefaultVolume},
				VolumeMounts: []corev1.VolumeMount{{Name: runspec.Workspace, MountPath: runspec.DefaultVolume}},
				// The state directory belongs to whichever user the steps ran as.
				SecurityContext: &corev1.SecurityContext{RunAsUser: &root},
			}},
			Volumes: []corev1.Volume{{Name: runspec.Workspace, VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}},
		},
	}
	pods := pe.Kube.CoreV1().Pods(ns)
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return false, fmt.Errorf("starting the abort pod: %w", err)
	}
	defer pods.Delete(context.WithoutCancel(ctx), pod.Name, metav1.DeleteOptions{})
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		p, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			// Another abort's pod, deleted under us: look at the build again.
			return false, nil
		}
		if err != nil {
			return false, err
		}
		switch p.Status.Phase {
		case corev1.PodSucceeded:
			return true, nil
		case corev1.PodFailed:
			return false, fmt.Errorf("the abort pod %s failed", pod.Name)
		}
		// A step pod that started meanwhile takes the marker just as well.
		if list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: labelPipelineRun + "=" + pr.Name}); err == nil && pe.Exec != nil {
			for _, sp := range list.Items {
				if stepRunning(&sp) {
					return false, nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(time.Second):
		}
	}
	return false, fmt.Errorf("the abort pod %s did not finish in 2 minutes", pod.Name)
}

// runnerImage is the runner image the build's Tasks install the runner from.
func runnerImage(pr *v1.PipelineRun) string {
	if img := pr.Annotations[runspec.AnnotationRunnerImage]; img != "" {
		return img
	}
	return translate.DefaultRunnerImage
}

// cancelStuck cancels the TaskRuns of the build whose pods cannot be scheduled: their
// runner would take the abort marker as soon as it started, but it never starts.
func (pe *Pods) cancelStuck(ctx context.Context, pr *v1.PipelineRun) error {
	ns := pe.Namespace
	trs, err := pe.Tekton.TektonV1().TaskRuns(ns).List(ctx, metav1.ListOptions{LabelSelector: labelPipelineRun + "=" + pr.Name})
	if err != nil {
		return err
	}
	for _, tr := range trs.Items {
		if buildevents.Done(tr.Status.GetCondition(apis.ConditionSucceeded)) || tr.Status.PodName == "" {
			continue
		}
		pod, err := pe.Kube.CoreV1().Pods(ns).Get(ctx, tr.Status.PodName, metav1.GetOptions{})
		if err != nil || !buildevents.Unschedulable(pod) {
			continue
		}
		patch := []byte(`{"spec":{"status":"` + string(v1.TaskRunSpecStatusCancelled) + `"}}`)
		if _, err := pe.Tekton.TektonV1().TaskRuns(ns).Patch(ctx, tr.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("cancelling TaskRun %s: %w", tr.Name, err)
		}
	}
	return nil
}

func truncateName(base, suffix string) string {
	if len(base)+len(suffix) > 63 {
		base = strings.TrimRight(base[:63-len(suffix)], "-")
	}
	return base + suffix
}
