//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	tekton "github.com/tektoncd/pipeline/pkg/client/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"knative.dev/pkg/apis"
)

// Images the tests run. The harness builds and loads them; on another cluster, load
// them there (the tarballs are in the harness's cache) or name others.
var (
	busyboxImage = envOr("E2E_BUSYBOX_IMAGE", "e2e.invalid/busybox:1.35")
	mockImage    = envOr("E2E_MOCK_IMAGE", "e2e.invalid/mock-resource:v1")
	gitImage     = envOr("E2E_GIT_IMAGE", "e2e.invalid/git-resource:v1")
)

// gitIdentity lets git commit in a container that has no configuration.
var gitIdentity = []corev1.EnvVar{
	{Name: "GIT_AUTHOR_NAME", Value: "e2e"}, {Name: "GIT_AUTHOR_EMAIL", Value: "e2e@e2e.invalid"},
	{Name: "GIT_COMMITTER_NAME", Value: "e2e"}, {Name: "GIT_COMMITTER_EMAIL", Value: "e2e@e2e.invalid"},
	{Name: "HOME", Value: "/tmp"},
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// kubeconfigPath is E2E_KUBECONFIG, else where e2e/cluster writes it.
func kubeconfigPath() string {
	if p := os.Getenv("E2E_KUBECONFIG"); p != "" {
		return p
	}
	return harnessKubeconfig()
}

// harnessKubeconfig is where e2e/cluster writes its cluster's kubeconfig.
func harnessKubeconfig() string {
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "concourse-tekton", "state", "kubeconfig")
}

// cluster is what every test talks to.
type cluster struct {
	kube   kubernetes.Interface
	tekton tekton.Interface
}

var testCluster *cluster

func TestMain(m *testing.M) {
	path := kubeconfigPath()
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "error: loading kubeconfig %s (start the cluster with `make e2e-up`, or set E2E_KUBECONFIG): %v\n", path, err)
		os.Exit(2)
	}
	cfg.QPS, cfg.Burst = 50, 100
	testCluster = &cluster{kube: kubernetes.NewForConfigOrDie(cfg), tekton: tekton.NewForConfigOrDie(cfg)}
	os.Exit(m.Run())
}

var nonDNS = regexp.MustCompile(`[^a-z0-9-]+`)

// namespace creates a namespace for the test alone. When the test fails, the logs of
// its pods and its events are dumped; the namespace is deleted afterwards unless
// E2E_KEEP_NAMESPACES=1.
func namespace(t testing.TB) string {
	t.Helper()
	ctx := context.Background()
	base := strings.Trim(nonDNS.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	if len(base) > 40 {
		base = base[:40]
	}
	name := "e2e-" + base + "-" + rand.String(5)
	_, err := testCluster.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			dumpNamespace(t, name)
		}
		if os.Getenv("E2E_KEEP_NAMESPACES") == "1" {
			t.Logf("keeping namespace %s (E2E_KEEP_NAMESPACES=1)", name)
			return
		}
		if err := testCluster.kube.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting namespace %s: %v", name, err)
		}
	})
	// Pods need the namespace's default service account, which a controller adds.
	poll(t, "the default service account", time.Minute, func(ctx context.Context) (bool, error) {
		_, err := testCluster.kube.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	return name
}

// dumpNamespace writes what a failed test leaves in its namespace (pods, their logs, its
// events) to the harness cluster's log directory (last-logs/namespaces once the cluster is
// down), so that the test's own failure stays the last thing it printed; on another
// cluster, to the test's log.
func dumpNamespace(t testing.TB, ns string) {
	t.Helper()
	var b strings.Builder
	writeNamespace(&b, ns)
	if kubeconfigPath() == harnessKubeconfig() {
		dir := filepath.Join(filepath.Dir(harnessKubeconfig()), "logs", "namespaces")
		file := filepath.Join(dir, ns+".log")
		if err := os.MkdirAll(dir, 0o755); err == nil {
			if err := os.WriteFile(file, []byte(b.String()), 0o644); err == nil {
				t.Logf("pods, logs and events of %s: %s (last-logs/namespaces once the cluster is down)", ns, file)
				return
			}
		}
	}
	t.Log(b.String())
}

func writeNamespace(b *strings.Builder, ns string) {
	ctx := context.Background()
	pods, err := testCluster.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		fmt.Fprintf(b, "listing pods of %s: %v\n", ns, err)
		return
	}
	for _, p := range pods.Items {
		fmt.Fprintf(b, "pod %s/%s: phase %s\n", ns, p.Name, p.Status.Phase)
		var containers []corev1.Container
		containers = append(containers, p.Spec.InitContainers...)
		containers = append(containers, p.Spec.Containers...)
		for _, c := range containers {
			logs, err := podLogs(ctx, ns, p.Name, c.Name)
			if err != nil {
				fmt.Fprintf(b, "  [%s : %s] no logs: %v\n", p.Name, c.Name, err)
				continue
			}
			for _, line := range strings.Split(strings.TrimRight(logs, "\n"), "\n") {
				fmt.Fprintf(b, "  [%s : %s] %s\n", p.Name, c.Name, line)
			}
		}
	}
	events, err := testCluster.kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err == nil {
		for _, e := range events.Items {
			fmt.Fprintf(b, "event %s %s/%s: %s: %s\n", e.Type, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
}

// podLogs reads a container's log through the API (apiserver → kubelet).
func podLogs(ctx context.Context, ns, pod, container string) (string, error) {
	b, err := testCluster.kube.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Container: container}).DoRaw(ctx)
	if err != nil {
		return "", fmt.Errorf("reading logs of %s/%s [%s]: %w", ns, pod, container, err)
	}
	return string(b), nil
}

func poll(t testing.TB, what string, timeout time.Duration, cond wait.ConditionWithContextFunc) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// done reports whether a Tekton run finished, and whether it succeeded.
func done(s *apis.Condition) (finished, succeeded bool) {
	if s == nil || s.IsUnknown() {
		return false, false
	}
	return true, s.IsTrue()
}

// waitRun polls a Tekton run until its Succeeded condition is final and returns it.
func waitRun[T any](t *testing.T, what string, timeout time.Duration, get func(context.Context) (T, error), cond func(T) *apis.Condition) T {
	t.Helper()
	var run T
	poll(t, what, timeout, func(ctx context.Context) (bool, error) {
		var err error
		if run, err = get(ctx); err != nil {
			return false, err
		}
		finished, _ := done(cond(run))
		return finished, nil
	})
	return run
}

// waitTaskRun and waitPipelineRun wait for a run to end. Their limits catch runs that
// hang: on a loaded 2-core machine (both e2e suites at once, load average 30) each pod
// of a run takes up to a minute.
func waitTaskRun(t *testing.T, ns, name string) *pipelinev1.TaskRun {
	t.Helper()
	return waitRun(t, "TaskRun "+name, 6*time.Minute, func(ctx context.Context) (*pipelinev1.TaskRun, error) {
		return testCluster.tekton.TektonV1().TaskRuns(ns).Get(ctx, name, metav1.GetOptions{})
	}, func(tr *pipelinev1.TaskRun) *apis.Condition { return tr.Status.GetCondition(apis.ConditionSucceeded) })
}

func waitPipelineRun(t *testing.T, ns, name string) *pipelinev1.PipelineRun {
	t.Helper()
	return waitRun(t, "PipelineRun "+name, 10*time.Minute, func(ctx context.Context) (*pipelinev1.PipelineRun, error) {
		return testCluster.tekton.TektonV1().PipelineRuns(ns).Get(ctx, name, metav1.GetOptions{})
	}, func(pr *pipelinev1.PipelineRun) *apis.Condition {
		return pr.Status.GetCondition(apis.ConditionSucceeded)
	})
}

func mustSucceed(t *testing.T, kind, name string, c *apis.Condition) {
	t.Helper()
	if _, ok := done(c); !ok {
		t.Fatalf("%s %s did not succeed: %+v", kind, name, c)
	}
}

// runPod runs a one-container pod to completion and returns its log.
func runPod(t *testing.T, ns, name, image, script string, volumes []corev1.Volume, mounts []corev1.VolumeMount) string {
	t.Helper()
	return runPodSpec(t, ns, name, image, script, nil, volumes, mounts)
}

// runPodEnv is runPod with environment variables and no volumes.
func runPodEnv(t *testing.T, ns, name, image, script string, env []corev1.EnvVar) string {
	t.Helper()
	return runPodSpec(t, ns, name, image, script, env, nil, nil)
}

func runPodSpec(t *testing.T, ns, name, image, script string, env []corev1.EnvVar, volumes []corev1.Volume, mounts []corev1.VolumeMount) string {
	t.Helper()
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Volumes:       volumes,
			Containers: []corev1.Container{{
				Name: "main", Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
				Command: []string{"sh", "-c", script}, Env: env, VolumeMounts: mounts,
			}},
		},
	}
	if _, err := testCluster.kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating pod %s: %v", name, err)
	}
	var phase corev1.PodPhase
	poll(t, "pod "+name, 3*time.Minute, func(ctx context.Context) (bool, error) {
		p, err := testCluster.kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		phase = p.Status.Phase
		return phase == corev1.PodSucceeded || phase == corev1.PodFailed, nil
	})
	logs, err := podLogs(ctx, ns, name, "main")
	if err != nil {
		t.Fatal(err)
	}
	if phase != corev1.PodSucceeded {
		t.Fatalf("pod %s %s; log:\n%s", name, phase, logs)
	}
	return logs
}

// busyboxImageResource is a task's image_resource (flow YAML) of the cluster's busybox.
func busyboxImageResource() string {
	repo, tag, _ := strings.Cut(busyboxImage, ":")
	return `image_resource: {type: registry-image, source: {repository: ` + repo + `, tag: "` + tag + `"}}`
}
