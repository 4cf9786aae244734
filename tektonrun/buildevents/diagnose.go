package buildevents

import (
	"fmt"
	"strings"

	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	"knative.dev/pkg/apis"
)

// Pod diagnosis: what the mapper says of a step whose pod never let its runner finish
// (an image that cannot be pulled, a pod that cannot be scheduled, an eviction, a
// cancellation). Pure, like the mapper: a TaskRun and its pod in, words out.

// Unschedulable says the scheduler found no node for the pod (Concourse: waiting for a
// worker).
func Unschedulable(pod *corev1.Pod) bool {
	if pod.Spec.NodeName != "" {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return true
		}
	}
	return false
}

// diagnosis is what went wrong with a pod that never let the runner finish.
type diagnosis struct {
	message string
	block   string
}

// diagnose explains a TaskRun that ended without an outcome: the pod could not be pulled,
// scheduled or started, was evicted or killed, or the run was cancelled.
func diagnose(tr *v1.TaskRun, pod *corev1.Pod) diagnosis {
	var b strings.Builder
	reason, message := "", ""
	if c := tr.Status.GetCondition(apis.ConditionSucceeded); c != nil {
		reason, message = c.Reason, c.Message
	}
	podName := tr.Status.PodName
	fmt.Fprintf(&b, "the step's pod did not finish:\n  taskrun: %s (%s)\n", tr.Name, reasonText(reason, message))
	var reasons []string
	if pod != nil {
		podName = pod.Name
		fmt.Fprintf(&b, "  pod: %s, phase %s", pod.Name, pod.Status.Phase)
		if pod.Status.Reason != "" {
			fmt.Fprintf(&b, " (%s)", reasonText(pod.Status.Reason, pod.Status.Message))
			reasons = append(reasons, pod.Status.Reason)
		}
		b.WriteString("\n")
		if pod.Spec.NodeName != "" {
			fmt.Fprintf(&b, "  node: %s\n", pod.Spec.NodeName)
		}
		for _, c := range pod.Status.Conditions {
			if c.Status != corev1.ConditionTrue && (c.Reason != "" || c.Message != "") {
				fmt.Fprintf(&b, "  condition %s=%s: %s\n", c.Type, c.Status, reasonText(c.Reason, c.Message))
				reasons = append(reasons, c.Reason)
			}
		}
		statuses := append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...)
		for _, s := range statuses {
			switch {
			case s.State.Waiting != nil && s.State.Waiting.Reason != "":
				fmt.Fprintf(&b, "  container %s (%s): waiting: %s\n", s.Name, s.Image, reasonText(s.State.Waiting.Reason, s.State.Waiting.Message))
				reasons = append(reasons, s.State.Waiting.Reason)
			case s.State.Terminated != nil && (s.State.Terminated.ExitCode != 0 || s.State.Terminated.Reason == "OOMKilled"):
				t := s.State.Terminated
				fmt.Fprintf(&b, "  container %s (%s): exited %d: %s\n", s.Name, s.Image, t.ExitCode, reasonText(t.Reason, t.Message))
				reasons = append(reasons, t.Reason)
			}
		}
	} else if podName != "" {
		fmt.Fprintf(&b, "  pod: %s (gone)\n", podName)
	}
	reasons = append(reasons, reason)
	hint := hintFor(reasons, tr.Namespace, podName)
	fmt.Fprintf(&b, "  hint: %s\n", hint)
	summary := reason
	for _, r := range reasons {
		if _, ok := hints[r]; ok {
			summary = r
			break
		}
	}
	if summary == "" {
		summary = "the step's pod failed"
	}
	return diagnosis{message: fmt.Sprintf("%s: %s", summary, hint), block: b.String()}
}

func reasonText(reason, message string) string {
	switch {
	case reason == "":
		return message
	case message == "":
		return reason
	}
	return reason + ": " + message
}

// hints say what to do about a reason a pod gives.
var hints = map[string]string{
	"ErrImagePull":               "the image could not be pulled: check its name and tag, and that the cluster can reach its registry (or has it loaded)",
	"ImagePullBackOff":           "the image could not be pulled: check its name and tag, and that the cluster can reach its registry (or has it loaded)",
	"TaskRunImagePullFailed":     "the image could not be pulled: check its name and tag, and that the cluster can reach its registry (or has it loaded)",
	"InvalidImageName":           "the image name is invalid: check the task's image_resource or the resource type's image",
	"Unschedulable":              "no node can run the pod: check its resource requests (container_limits), node selectors and taints",
	"Evicted":                    "the node evicted the pod, usually for lack of memory or disk",
	"OOMKilled":                  "the step ran out of memory: raise its container_limits.memory",
	"CreateContainerConfigError": "the pod's configuration is invalid: a missing Secret or ConfigMap?",
	"CreateContainerError":       "the container could not be created: see the pod's events",
	"TaskRunCancelled":           "the TaskRun was cancelled",
	"TaskRunTimeout":             "the TaskRun timed out in Tekton",
}

func hintFor(reasons []string, namespace, pod string) string {
	for _, r := range reasons {
		if h, ok := hints[r]; ok {
			return h
		}
	}
	if pod == "" {
		return "see `kubectl get taskrun -n " + namespace + " -o yaml`"
	}
	return "see `kubectl describe pod " + pod + " -n " + namespace + "`"
}
