package podexec

import (
	"context"

	"github.com/tektoncd/pipeline/pkg/apis/pipeline"
	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"github.com/tektoncd/pipeline/pkg/client/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Pods works inside the pods of the builds of one namespace.
type Pods struct {
	Namespace string
	Kube      kubernetes.Interface
	Tekton    versioned.Interface
	// Exec and Stream run commands in pods; nil without the target's REST config, when
	// nothing is run in a pod.
	Exec   Execer
	Stream Streamer
	// CanExec, when set, says why the target's user may not exec into pods to do what
	// doing says, if they may not; an error of its own it keeps to itself (the exec will
	// say).
	CanExec func(ctx context.Context, doing string) error
	// ExecChecks runs every check of a check session through pods/exec, never over the
	// pod network (sessionconn.go).
	ExecChecks bool
	// SessionHost, when set, is where a session pod's runner is reached (its IP when
	// nil): a harness whose simulated nodes run no containers serves them elsewhere.
	SessionHost func(*corev1.Pod) string

	sessions sessionCache
}

// New returns the pods of namespace, reached through kube and tekton, and through config
// for pods/exec (nil: no command is run in a pod).
func New(namespace string, kube kubernetes.Interface, tekton versioned.Interface, config *rest.Config) *Pods {
	pe := &Pods{Namespace: namespace, Kube: kube, Tekton: tekton}
	if config != nil {
		pe.Exec = &spdyExecer{config: config, kube: kube}
		pe.Stream = &execStreamer{config: config, kube: kube}
	}
	return pe
}

func (pe *Pods) canExec(ctx context.Context, doing string) error {
	if pe.CanExec == nil {
		return nil
	}
	return pe.CanExec(ctx, doing)
}

// labelPipelineRun is the label Tekton puts on the TaskRuns and pods of a PipelineRun.
const labelPipelineRun = pipeline.PipelineRunLabelKey

// tektonGroupVersion is the API version of the PipelineRuns that own the pods made here.
var tektonGroupVersion = v1.SchemeGroupVersion.String()
