package podexec

import (
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// stepPod is a finished step's pod as Tekton makes it: the runner's install step, the
// step's own container, the volumes, and the affinity assistant's term.
func stepPod() *corev1.Pod {
	uid := int64(1000)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "app-unit-1-task-test-pod", Labels: map[string]string{runspec.LabelBuild: "1"},
			Annotations: map[string]string{runspec.AnnotationBuildContext: `{"team":"main"}`, "tekton.dev/ready": "READY"}},
		Spec: corev1.PodSpec{
			ServiceAccountName: "builder",
			SecurityContext:    &corev1.PodSecurityContext{FSGroup: &uid},
			NodeSelector:       map[string]string{"gpu": "true"},
			Affinity: &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/component": "affinity-assistant"}},
				TopologyKey:   "kubernetes.io/hostname",
			}}}},
			Volumes: []corev1.Volume{{Name: "runner"}, {Name: "ws"}},
			Containers: []corev1.Container{
				{Name: "step-install-runner", Image: "runner:dev", Command: []string{"/tekton/bin/entrypoint"},
					VolumeMounts: []corev1.VolumeMount{{Name: "runner", MountPath: runspec.RunnerDir}, {Name: "ws", MountPath: "/concourse"}}},
				{Name: runspec.StepContainer, Image: "busybox", Command: []string{"/tekton/bin/entrypoint"}, WorkingDir: "/w",
					Env:             []corev1.EnvVar{{Name: "A", Value: "b"}},
					VolumeMounts:    []corev1.VolumeMount{{Name: "runner", MountPath: runspec.RunnerDir}, {Name: "ws", MountPath: "/concourse"}},
					SecurityContext: &corev1.SecurityContext{RunAsUser: &uid}},
			},
		},
	}
}

func TestRemadePod(t *testing.T) {
	pr := &v1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Name: "app-unit-1", UID: "run-uid"}}
	pod, err := remadePod(stepPod(), pr, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	orig := stepPod()
	step := orig.Spec.Containers[1]
	want := corev1.Container{
		Name: runspec.StepContainer, Image: "busybox", WorkingDir: "/w", Env: step.Env, VolumeMounts: step.VolumeMounts, SecurityContext: step.SecurityContext,
		Command: []string{runspec.RunnerPath, "hold", "--timeout=10m0s"},
	}
	if diff := cmp.Diff([]corev1.Container{want}, pod.Spec.Containers); diff != "" {
		t.Errorf("containers (-want +got):\n%s", diff)
	}
	install := []corev1.Container{{
		Name: "install-runner", Image: "runner:dev", Command: []string{runspec.RunnerBinary, "install", runspec.RunnerPath},
		VolumeMounts: []corev1.VolumeMount{{Name: "runner", MountPath: runspec.RunnerDir}},
	}}
	if diff := cmp.Diff(install, pod.Spec.InitContainers); diff != "" {
		t.Errorf("init containers (-want +got):\n%s", diff)
	}
	if pod.Spec.Affinity != nil {
		t.Errorf("the affinity assistant's term was kept: %+v", pod.Spec.Affinity)
	}
	if *pod.Spec.ActiveDeadlineSeconds != 660 || *pod.Spec.AutomountServiceAccountToken || pod.Spec.ServiceAccountName != "builder" ||
		*pod.Spec.SecurityContext.FSGroup != 1000 || pod.Spec.NodeSelector["gpu"] != "true" || len(pod.Spec.Volumes) != 2 {
		t.Errorf("pod spec: %+v", pod.Spec)
	}
	if pod.Labels[runspec.LabelIntercept] != "true" || pod.Labels[runspec.LabelBuild] != "1" || pod.OwnerReferences[0].UID != "run-uid" || !strings.HasSuffix(pod.GenerateName, "-intercept-") {
		t.Errorf("metadata: %+v", pod.ObjectMeta)
	}
	// The step's environment reads the build's context from the pod's annotation.
	if want := map[string]string{runspec.AnnotationBuildContext: `{"team":"main"}`}; !maps.Equal(pod.Annotations, want) {
		t.Errorf("annotations %v, want %v", pod.Annotations, want)
	}

	orig.Spec.Containers = orig.Spec.Containers[1:]
	if _, err := remadePod(orig, pr, time.Minute); err == nil {
		t.Errorf("a pod without the runner's install step, nor its image as a volume, was remade")
	}
	orig.Spec.Containers = nil
	if _, err := remadePod(orig, pr, time.Minute); err == nil {
		t.Errorf("a pod without a step container was remade")
	}
}

// A step pod whose runner is its image as a volume (translate.Options.RunnerImageVolume)
// is remade with the same volume and mounts, and no container to install the runner.
func TestRemadePodRunnerImageVolume(t *testing.T) {
	orig := imageVolumePod()
	pod, err := remadePod(orig, &v1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Name: "app-unit-1"}}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(pod.Spec.InitContainers) != 0 {
		t.Errorf("init containers: %+v", pod.Spec.InitContainers)
	}
	if diff := cmp.Diff(orig.Spec.Containers[0].VolumeMounts, pod.Spec.Containers[0].VolumeMounts); diff != "" {
		t.Errorf("the step's mounts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(orig.Spec.Volumes, pod.Spec.Volumes); diff != "" {
		t.Errorf("volumes (-want +got):\n%s", diff)
	}
	if ok, err := runnerInstalled(orig); !ok || err != nil {
		t.Errorf("runnerInstalled = %v, %v for a pod with the runner's image as a volume", ok, err)
	}
	if ok, _ := runnerInstalled(stepPod()); ok {
		t.Errorf("runnerInstalled for a pod whose install step has not ended")
	}
}

// imageVolumePod is a step's pod whose runner is its image as a volume: no install step.
func imageVolumePod() *corev1.Pod {
	pod := stepPod()
	pod.Spec.Volumes[0].Image = &corev1.ImageVolumeSource{Reference: "runner:dev"}
	pod.Spec.Containers = pod.Spec.Containers[1:]
	pod.Spec.Containers[0].VolumeMounts[0].SubPath, pod.Spec.Containers[0].VolumeMounts[0].ReadOnly = "ko-app", true
	return pod
}
