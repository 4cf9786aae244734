package podexec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"knative.dev/pkg/apis"

	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/tektonrun/buildevents"
	"github.com/concourse-tekton/concourse-tekton/translate"
)

// Streamer runs a command in a container of a running pod (pods/exec) with its standard
// streams connected: Stdin (nil: none) is copied to the command until it ends, and its
// output to Stdout and Stderr (with Tty, a terminal: its output all goes to Stdout, and
// TerminalSizeQueue tells it the client's size). It returns when the command has exited;
// a command that exits non-zero is an error with an ExitStatus() int method.
type Streamer interface {
	Stream(ctx context.Context, namespace, pod, container string, command []string, streams remotecommand.StreamOptions) error
}

// execStreamer speaks WebSocket to the API server, and SPDY to one that cannot, as
// kubectl exec does.
type execStreamer struct {
	config *rest.Config
	kube   kubernetes.Interface
}

var _ Streamer = (*execStreamer)(nil)

func (e *execStreamer) Stream(ctx context.Context, namespace, pod, container string, command []string, o remotecommand.StreamOptions) error {
	req := e.kube.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{
			Container: container, Command: command, TTY: o.Tty,
			Stdin: o.Stdin != nil, Stdout: o.Stdout != nil, Stderr: o.Stderr != nil && !o.Tty,
		}, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(e.config, "GET", req.URL().String())
	if err != nil {
		return err
	}
	spdy, err := remotecommand.NewSPDYExecutor(e.config, "POST", req.URL())
	if err != nil {
		return err
	}
	ex, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return err
	}
	if o.Tty {
		o.Stderr = nil
	}
	return ex.StreamWithContext(ctx, o)
}

// Transfer timings.
const (
	// transferHold is how long a transfer pod lives at most, even if its starter died
	// and never deleted it.
	transferHold = time.Hour
	// transferStart is how long a transfer pod may take to start.
	transferStart = 5 * time.Minute
)

// transferPod is a pod of the runner image that mounts a build volume and waits, for
// artifacts to be received onto the volume and sent from it through exec.
type transferPod struct {
	pe        *Pods
	name      string
	closeOnce sync.Once
}

// startTransfer starts a transfer pod on the build volume claim, owned by owner (the
// volume before the build's run exists, the run after), and waits until it runs.
func (pe *Pods) startTransfer(ctx context.Context, name, claim, image, build string, owner metav1.OwnerReference) (*transferPod, error) {
	if pe.Stream == nil {
		return nil, errors.New("moving artifacts needs the target's REST config (pods/exec)")
	}
	if err := pe.canExec(ctx, "moving a one-off build's artifacts"); err != nil {
		return nil, err
	}
	noToken, noEscalation, root := false, false, int64(0)
	deadline := int64((transferHold + time.Minute) / time.Second)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				runspec.LabelManagedBy: runspec.ManagedBy,
				runspec.LabelBuild:     runspec.LabelValue(build),
				runspec.LabelTransfer:  "true",
			},
			OwnerReferences: []metav1.OwnerReference{owner},
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  &noToken,
			EnableServiceLinks:            &noToken,
			ActiveDeadlineSeconds:         &deadline,
			TerminationGracePeriodSeconds: new(int64),
			Containers: []corev1.Container{{
				Name:    "transfer",
				Image:   image,
				Command: []string{runspec.RunnerBinary, string(runspec.ModeHold), "--timeout=" + transferHold.String()},
				VolumeMounts: []corev1.VolumeMount{{
					Name: runspec.Workspace, MountPath: runspec.DefaultVolume,
				}},
				// Root, as the verdict: the volume holds files of every user the steps ran as.
				SecurityContext: &corev1.SecurityContext{
					RunAsUser:                &root,
					AllowPrivilegeEscalation: &noEscalation,
					SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
				},
			}},
			Volumes: []corev1.Volume{{Name: runspec.Workspace, VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}},
		},
	}
	pods := pe.Kube.CoreV1().Pods(pe.Namespace)
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("starting the transfer pod %s: %w", name, err)
	}
	t := &transferPod{pe: pe, name: name}
	if err := pe.awaitPod(ctx, name, nil); err != nil {
		return nil, errors.Join(err, t.close(ctx))
	}
	return t, nil
}

// awaitPod waits until ready says a pod of the client's is, or says why it will not be:
// it fails at once when ready fails or the pod ends, and after unschedulableFor when the
// scheduler keeps finding no node for it. ready nil: the pod runs.
func (pe *Pods) awaitPod(ctx context.Context, name string, ready func(*corev1.Pod) (bool, error)) error {
	if ready == nil {
		ready = func(p *corev1.Pod) (bool, error) { return p.Status.Phase == corev1.PodRunning, nil }
	}
	pods := pe.Kube.CoreV1().Pods(pe.Namespace)
	ctx, cancel := context.WithTimeout(ctx, transferStart)
	defer cancel()
	waiting := ""
	var unschedulableSince time.Time
	for {
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("waiting for pod %s: %w", name, err)
		}
		if ok, err := ready(p); ok || err != nil {
			return err
		}
		switch p.Status.Phase {
		case corev1.PodSucceeded, corev1.PodFailed:
			return fmt.Errorf("pod %s ended before it was used: %s %s", name, p.Status.Reason, p.Status.Message)
		}
		for _, s := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
			if w := s.State.Waiting; w != nil && w.Reason != "" && w.Reason != "ContainerCreating" && w.Reason != "PodInitializing" {
				waiting = w.Reason + ": " + w.Message
			}
		}
		if buildevents.Unschedulable(p) {
			if unschedulableSince.IsZero() {
				unschedulableSince = time.Now()
			}
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodScheduled {
					waiting = "unschedulable: " + c.Message
				}
			}
			if time.Since(unschedulableSince) > unschedulableFor {
				return fmt.Errorf("pod %s cannot be scheduled (%s)", name, waiting)
			}
		} else {
			unschedulableSince = time.Time{}
		}
		select {
		case <-ctx.Done():
			if waiting != "" {
				return fmt.Errorf("pod %s did not start in %s (%s)", name, transferStart, waiting)
			}
			return fmt.Errorf("pod %s did not start: %w", name, ctx.Err())
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// unschedulableFor is how long a pod of ours may stay unschedulable before we give up.
const unschedulableFor = 30 * time.Second

// exec runs the runner in the pod with streams.
func (t *transferPod) exec(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) error {
	var stderr strings.Builder
	streams := remotecommand.StreamOptions{Stdin: stdin, Stdout: stdout, Stderr: &stderr}
	if stdout == nil {
		streams.Stdout = io.Discard
	}
	err := t.pe.Stream.Stream(ctx, t.pe.Namespace, t.name, "transfer", append([]string{runspec.RunnerBinary}, args...), streams)
	if err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return fmt.Errorf("%s", strings.TrimPrefix(msg, "error: "))
		}
		return err
	}
	return nil
}

// receive uploads the tar stream r as the artifact input in.
func (t *transferPod) receive(ctx context.Context, in translate.ArtifactInput, r io.Reader) error {
	args := []string{string(runspec.ModeReceive), "--dir=" + in.Dir, "--name=" + in.Name, "--volume=" + runspec.DefaultVolume}
	if err := t.exec(ctx, args, r, nil); err != nil {
		return fmt.Errorf("uploading %s: %w", in.Name, err)
	}
	return nil
}

// ErrNoArtifact is Artifacts.Download's error for an output the build never registered
// (its task did not run): fly execute leaves such outputs out.
var ErrNoArtifact = errors.New("the build has no such artifact")

// send downloads the artifact name as a tar stream into w.
func (t *transferPod) send(ctx context.Context, name string, w io.Writer) error {
	err := t.exec(ctx, []string{string(runspec.ModeSend), "--name=" + name, "--volume=" + runspec.DefaultVolume}, nil, w)
	switch {
	case err == nil:
		return nil
	case strings.Contains(err.Error(), "the build has no artifact"):
		return fmt.Errorf("downloading %s: %w", name, ErrNoArtifact)
	}
	return fmt.Errorf("downloading %s: %w", name, err)
}

// close deletes the pod, once.
func (t *transferPod) close(ctx context.Context) error {
	var err error
	t.closeOnce.Do(func() {
		err = t.pe.Kube.CoreV1().Pods(t.pe.Namespace).Delete(context.WithoutCancel(ctx), t.name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
		if apierrors.IsNotFound(err) {
			err = nil
		}
	})
	return err
}

// ArtifactSource supplies the content of a one-off build's artifact input, as a tar
// stream (package internal/tarstream's format, which any tar of a directory's contents
// is), which the backend closes once it is read.
type ArtifactSource func(ctx context.Context, in translate.ArtifactInput) (io.ReadCloser, error)

// Upload makes a one-off build's artifact inputs on its volume, before its run is
// created, in parallel through one transfer pod that the volume owns.
func (pe *Pods) Upload(ctx context.Context, r *translate.Result, claim string, source ArtifactSource) error {
	if len(r.ArtifactInputs) == 0 {
		return nil
	}
	if source == nil {
		return fmt.Errorf("build %s has artifact inputs, and nothing to upload them from", r.PipelineRun.Name)
	}
	pvc, err := pe.Kube.CoreV1().PersistentVolumeClaims(pe.Namespace).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("uploading artifacts: %w", err)
	}
	owner := metav1.OwnerReference{APIVersion: "v1", Kind: "PersistentVolumeClaim", Name: pvc.Name, UID: pvc.UID}
	t, err := pe.startTransfer(ctx, truncateName(r.PipelineRun.Name, "-upload"), claim, runnerImage(r.PipelineRun), r.PipelineRun.Labels[runspec.LabelBuild], owner)
	if err != nil {
		return err
	}
	// The first upload that fails stops the others: the build will not start.
	uploadCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(r.ArtifactInputs))
	var wg sync.WaitGroup
	for i, in := range r.ArtifactInputs {
		wg.Go(func() {
			rc, err := source(uploadCtx, in)
			if err != nil {
				errs[i] = fmt.Errorf("uploading %s: %w", in.Name, err)
				cancel()
				return
			}
			defer rc.Close()
			if errs[i] = t.receive(uploadCtx, in, rc); errs[i] != nil {
				cancel()
			}
		})
	}
	wg.Wait()
	if ctx.Err() == nil {
		// Keep the cause, not the uploads it stopped.
		for i, err := range errs {
			if errors.Is(err, context.Canceled) {
				errs[i] = nil
			}
		}
	}
	return errors.Join(append(errs, t.close(ctx))...)
}

// Artifacts downloads a one-off build's outputs once it has ended; Close it to delete
// its transfer pod.
type Artifacts struct {
	t *transferPod
}

// Artifacts starts a transfer pod on the volume of a one-off build (its PipelineRun is
// run), once the build has ended, to download its outputs (the names a plan's artifact
// outputs gave, as translate.Result.ArtifactOutputs lists them).
func (pe *Pods) Artifacts(ctx context.Context, run string) (*Artifacts, error) {
	pr, err := pe.Tekton.TektonV1().PipelineRuns(pe.Namespace).Get(ctx, run, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("downloading the outputs of %s: %w", run, err)
	}
	if pr.Annotations[runspec.AnnotationOneOff] != "true" {
		return nil, fmt.Errorf("build %s is not a one-off build: only those keep their outputs", run)
	}
	if cond := pr.Status.GetCondition(apis.ConditionSucceeded); cond == nil || cond.IsUnknown() {
		return nil, fmt.Errorf("build %s has not ended", run)
	}
	claim, err := pe.buildClaim(ctx, pr)
	if err != nil || claim == "" {
		return nil, fmt.Errorf("build %s has no volume to download from: %v", run, err)
	}
	owner := metav1.OwnerReference{APIVersion: tektonGroupVersion, Kind: "PipelineRun", Name: pr.Name, UID: pr.UID}
	t, err := pe.startTransfer(ctx, truncateName(pr.Name, "-download"), claim, runnerImage(pr), pr.Labels[runspec.LabelBuild], owner)
	if err != nil {
		return nil, err
	}
	return &Artifacts{t: t}, nil
}

// Download writes the artifact name (an output of the one-off build) to w as a tar
// stream; several may run at once. An output the build never made is ErrNoArtifact.
func (a *Artifacts) Download(ctx context.Context, name string, w io.Writer) error {
	return a.t.send(ctx, name, w)
}

// Close deletes the transfer pod.
func (a *Artifacts) Close(ctx context.Context) error { return a.t.close(ctx) }
