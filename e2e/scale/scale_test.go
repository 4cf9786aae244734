//go:build e2e

// Package scale measures one process submitting and following many builds on a real API
// server and the real Tekton controller, their pods on simulated nodes (kwok), and gc of
// many ended builds: make bench-scale.
package scale

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	tekton "github.com/tektoncd/pipeline/pkg/client/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"knative.dev/pkg/apis"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/event"
	"github.com/concourse-tekton/concourse-tekton/concourse/planner"
	"github.com/concourse-tekton/concourse-tekton/gc"
	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/tektonrun"
	"github.com/concourse-tekton/concourse-tekton/tektonrun/buildevents"
	"github.com/concourse-tekton/concourse-tekton/translate"
)

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

var (
	// builds is how many builds are submitted and followed at once.
	builds = envInt("SCALE_BUILDS", 1000)
	// gcBuilds is how many ended builds gc sweeps.
	gcBuilds = envInt("SCALE_GC_BUILDS", 10000)
	// nodes is how many simulated nodes there are (110 pods each).
	nodes = envInt("SCALE_NODES", 20)
)

// counter counts a client's requests, and its watches apart.
type counter struct {
	rt       http.RoundTripper
	requests atomic.Int64
	watches  atomic.Int64
}

func (c *counter) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Query().Get("watch") == "true" || r.URL.Query().Get("watch") == "1" {
		c.watches.Add(1)
	} else {
		c.requests.Add(1)
	}
	return c.rt.RoundTrip(r)
}

// emptyLogs serves every container's log as empty: the simulated nodes run no process,
// and serve no log.
type emptyLogs struct{}

func (emptyLogs) Open(context.Context, string, string, string, bool, *metav1.Time) (io.ReadCloser, error) {
	return io.NopCloser(strings.NewReader("")), nil
}

// stepComplete ends a TaskRun's pod once it runs, as the step runner would: exit 0, and
// the results it writes (outcome, exit status) in the termination message Tekton reads.
const stepComplete = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: tekton-step-complete
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values: ['Running']
    - key: '.metadata.labels["tekton.dev/taskRun"]'
      operator: 'Exists'
  delay:
    durationMilliseconds: 1000
    jitterDurationMilliseconds: 1000
  next:
    statusTemplate: |
      {{ $now := Now }}
      containerStatuses:
      {{ range $index, $item := .spec.containers }}
      - image: {{ $item.image | Quote }}
        name: {{ $item.name | Quote }}
        ready: false
        restartCount: 0
        started: false
        state:
          terminated:
            exitCode: 0
            finishedAt: {{ $now | Quote }}
            reason: Completed
            startedAt: {{ $now | Quote }}
            message: '[{"key":"outcome","value":"succeeded","type":1},{"key":"exit-status","value":"0","type":1}]'
      {{ end }}
      phase: Succeeded
`

// harness is the simulated nodes and what was changed for them, undone by Cleanup.
type harness struct {
	kube   kubernetes.Interface
	tekton tekton.Interface
	cfg    *rest.Config
	ns     string
}

// setUp starts kwok with simulated nodes, cordons the cluster's real nodes (so that every
// new pod goes to a simulated one), switches off Tekton's affinity assistants (their
// pods would pin a build's pods to a real node), and makes a namespace.
func setUp(b *testing.B) *harness {
	path := os.Getenv("E2E_KUBECONFIG")
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		b.Fatalf("loading kubeconfig %s (make e2e-up): %v", path, err)
	}
	cfg.QPS, cfg.Burst = 200, 400
	h := &harness{kube: kubernetes.NewForConfigOrDie(cfg), tekton: tekton.NewForConfigOrDie(cfg), cfg: cfg}
	ctx := context.Background()

	bin, stages := os.Getenv("KWOK_BIN"), os.Getenv("KWOK_STAGES")
	if bin == "" || stages == "" {
		b.Fatal("KWOK_BIN and KWOK_STAGES are unset: run make bench-scale")
	}
	var config []string
	for _, f := range []string{"node/fast/node-initialize.yaml", "node/heartbeat/node-heartbeat.yaml",
		"pod/general/pod-create.yaml", "pod/general/pod-init-container-running.yaml", "pod/general/pod-init-container-completed.yaml",
		"pod/general/pod-ready.yaml", "pod/general/pod-delete.yaml"} {
		data, err := os.ReadFile(filepath.Join(stages, f))
		if err != nil {
			b.Fatal(err)
		}
		config = append(config, string(data))
	}
	config = append(config, stepComplete)
	dir := b.TempDir()
	confFile := filepath.Join(dir, "kwok.yaml")
	if err := os.WriteFile(confFile, []byte(strings.Join(config, "\n---\n")), 0o644); err != nil {
		b.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(dir, "kwok.log"))
	if err != nil {
		b.Fatal(err)
	}
	kwok := exec.Command(bin, "--kubeconfig", path, "-c", confFile, "--manage-nodes-with-annotation-selector", "kwok.x-k8s.io/node=fake")
	kwok.Stdout, kwok.Stderr = logFile, logFile
	if err := kwok.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		kwok.Process.Kill()
		kwok.Wait()
		if b.Failed() {
			data, _ := os.ReadFile(logFile.Name())
			b.Logf("kwok's log (tail):\n%s", tail(string(data), 40))
		}
	})

	// The real nodes take no new pod meanwhile.
	real, err := h.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range real.Items {
		if n.Spec.Unschedulable {
			continue
		}
		h.cordon(b, n.Name, true)
		b.Cleanup(func() { h.cordon(b, n.Name, false) })
	}
	for i := range nodes {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name:        fmt.Sprintf("kwok-scale-%d", i),
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
			Labels:      map[string]string{"type": "kwok", "kubernetes.io/hostname": fmt.Sprintf("kwok-scale-%d", i)},
		}, Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("256Gi"), corev1.ResourcePods: resource.MustParse("110")},
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("256Gi"), corev1.ResourcePods: resource.MustParse("110")},
		}}
		if _, err := h.kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			b.Fatal(err)
		}
		b.Cleanup(func() { h.kube.CoreV1().Nodes().Delete(context.Background(), node.Name, metav1.DeleteOptions{}) })
	}
	poll(b, "the simulated nodes to be ready", 2*time.Minute, func(ctx context.Context) (bool, error) {
		l, err := h.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "type=kwok"})
		if err != nil {
			return false, err
		}
		ready := 0
		for _, n := range l.Items {
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		return ready == nodes, nil
	})

	flags, err := h.kube.CoreV1().ConfigMaps("tekton-pipelines").Get(ctx, "feature-flags", metav1.GetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	old, had := flags.Data["coschedule"]
	h.patchFlag(b, "disabled")
	b.Cleanup(func() {
		if had {
			h.patchFlag(b, old)
		} else {
			h.patchFlag(b, "")
		}
	})

	h.ns = "scale-" + rand.String(5)
	if _, err := h.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: h.ns}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := h.kube.CoreV1().Namespaces().Delete(context.Background(), h.ns, metav1.DeleteOptions{}); err != nil {
			b.Errorf("deleting namespace %s: %v", h.ns, err)
		}
	})
	poll(b, "the default service account", time.Minute, func(ctx context.Context) (bool, error) {
		_, err := h.kube.CoreV1().ServiceAccounts(h.ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	return h
}

func (h *harness) cordon(b *testing.B, node string, unschedulable bool) {
	patch := fmt.Sprintf(`{"spec":{"unschedulable":%t}}`, unschedulable)
	if _, err := h.kube.CoreV1().Nodes().Patch(context.Background(), node, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		b.Errorf("cordoning %s (%t): %v", node, unschedulable, err)
	}
}

func (h *harness) patchFlag(b *testing.B, value string) {
	v := any(value)
	if value == "" {
		v = nil
	}
	patch, _ := json.Marshal(map[string]any{"data": map[string]any{"coschedule": v}})
	if _, err := h.kube.CoreV1().ConfigMaps("tekton-pipelines").Patch(context.Background(), "feature-flags", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		b.Errorf("setting Tekton's coschedule to %q: %v", value, err)
	}
}

// counted are clients of the harness's cluster whose requests c counts.
func (h *harness) counted(c *counter) *tektonrun.Target {
	cfg := rest.CopyConfig(h.cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		c.rt = rt
		return c
	})
	return tektonrun.NewTargetFromClients(h.ns, kubernetes.NewForConfigOrDie(cfg), tekton.NewForConfigOrDie(cfg))
}

func poll(b *testing.B, what string, timeout time.Duration, cond wait.ConditionWithContextFunc) {
	b.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, timeout, true, cond); err != nil {
		b.Fatalf("waiting for %s: %v", what, err)
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// rss is the process's resident set now and at its peak, in MB.
func rss(b *testing.B) (now, peak float64) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(fields[1], 64)
		switch fields[0] {
		case "VmRSS:":
			now = kb / 1024
		case "VmHWM:":
			peak = kb / 1024
		}
	}
	return now, peak
}

// percentile is the p-th percentile of sorted durations.
func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	return d[min(len(d)-1, int(float64(len(d))*p/100))]
}

const job = `
jobs:
- name: unit
  plan:
  - task: test
    config:
      platform: linux
      image_resource: {type: registry-image, source: {repository: e2e.invalid/busybox, tag: "1.35"}}
      run: {path: "true"}
`

// BenchmarkScale submits SCALE_BUILDS builds of a one-task job at once from one process
// and follows them all to their end, their pods on simulated nodes, then sweeps
// SCALE_GC_BUILDS ended builds of a job that keeps 5. It reports the process's peak
// resident set, the API requests per build (watches apart: their number), the time from
// a TaskRun's end (as a watch of the API server sees it) to the finish event of its step
// (p50, p99), and gc's time and requests.
func BenchmarkScale(b *testing.B) {
	h := setUp(b)
	ctx := context.Background()
	p, diags := concourse.ParsePipeline("scale.yml", []byte(job), nil)
	if err := diags.Err(); err != nil {
		b.Fatal(err)
	}
	planned, err := planner.PlanBuild(p, "unit", planner.Options{ManuallyTriggered: true})
	if err != nil {
		b.Fatal(err)
	}
	var c counter
	target := h.counted(&c)
	backend := tektonrun.NewBackend(target, translate.Options{RunnerImage: "e2e.invalid/runner:scale", BuildVolumeSize: "1Mi"})
	defer backend.Close()
	backend.SetLogSource(emptyLogs{})

	// When each TaskRun ended, as a watch of its own (not counted) sees it.
	var mu sync.Mutex
	ended := map[string]time.Time{}
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	w, err := h.tekton.TektonV1().TaskRuns(h.ns).Watch(watchCtx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	go func() {
		for e := range w.ResultChan() {
			tr, ok := e.Object.(*v1.TaskRun)
			if !ok {
				continue
			}
			if cond := tr.Status.GetCondition(apis.ConditionSucceeded); cond != nil && !cond.IsUnknown() {
				mu.Lock()
				if _, seen := ended[tr.Name]; !seen {
					ended[tr.Name] = time.Now()
				}
				mu.Unlock()
			}
		}
	}()

	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	finished := map[string]time.Time{} // when each task step's finish event came
	statuses := map[event.BuildStatus]int{}
	errs := make(chan error, builds)
	sem := make(chan struct{}, 32) // submissions at once
	for i := 1; i <= builds; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			build, err := backend.Run(ctx, planned.Plan, tektonrun.BuildMeta{Pipeline: "scale", Job: "unit", Build: strconv.Itoa(i)})
			<-sem
			if err != nil {
				errs <- err
				return
			}
			followCtx, cancel := context.WithTimeout(ctx, 30*time.Minute)
			defer cancel()
			status, err := build.Events(followCtx, buildevents.Cursor{}, func(e buildevents.Event) error {
				if _, ok := e.Event.(event.FinishTask); ok {
					at := time.Now()
					mu.Lock()
					finished[build.Name+"-"+e.Key.Step] = at
					mu.Unlock()
				}
				return nil
			})
			if err != nil {
				errs <- fmt.Errorf("following %s: %w", build.Name, err)
				return
			}
			mu.Lock()
			statuses[status]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	for err := range errs {
		b.Error(err)
	}
	_, peak := rss(b)
	// A follower may see a TaskRun end before the measuring watch does: no wait, then.
	time.Sleep(2 * time.Second)
	mu.Lock()
	var latencies []time.Duration
	for tr, at := range finished {
		if t, ok := ended[tr]; ok {
			latencies = append(latencies, max(0, at.Sub(t)))
		} else {
			b.Errorf("TaskRun %s: a finish event, and the watch never saw it end", tr)
		}
	}
	mu.Unlock()
	slices.Sort(latencies)
	b.StopTimer()
	b.Logf("%d builds in %s: %v; %d finish events timed; %d requests, %d watches", builds, elapsed.Round(time.Second), statuses, len(latencies), c.requests.Load(), c.watches.Load())
	if statuses[event.BuildStatusSucceeded] != builds || len(latencies) != builds {
		b.Errorf("statuses %v and %d finish events, want %d succeeded builds with one each", statuses, len(latencies), builds)
	}
	b.ReportMetric(peak, "peak-RSS-MB")
	b.ReportMetric(float64(c.requests.Load())/float64(builds), "requests/build")
	b.ReportMetric(float64(c.watches.Load()), "watches")
	b.ReportMetric(float64(percentile(latencies, 50).Milliseconds()), "event-latency-p50-ms")
	b.ReportMetric(float64(percentile(latencies, 99).Milliseconds()), "event-latency-p99-ms")
	b.ReportMetric(elapsed.Seconds(), "follow-s")

	sweep(b, h, target, &c)
}

// sweep makes gcBuilds ended builds of one job that keeps 5 (PipelineRuns of a Pipeline
// that is not there: Tekton fails them at once, no pod runs), and sweeps them.
func sweep(b *testing.B, h *harness, target *tektonrun.Target, c *counter) {
	ctx := context.Background()
	runs := h.tekton.TektonV1().PipelineRuns(h.ns)
	sem := make(chan struct{}, 32)
	var wg sync.WaitGroup
	for i := 1; i <= gcBuilds; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			pr := &v1.PipelineRun{
				ObjectMeta: metav1.ObjectMeta{
					Name: fmt.Sprintf("old-unit-%d", i),
					Labels: map[string]string{runspec.LabelManagedBy: runspec.ManagedBy, runspec.LabelTeam: "main",
						runspec.LabelPipeline: "old", runspec.LabelJob: "unit", runspec.LabelBuild: strconv.Itoa(i)},
					Annotations: map[string]string{runspec.AnnotationBuildLogRetention: `{"builds":5}`},
				},
				Spec: v1.PipelineRunSpec{PipelineRef: &v1.PipelineRef{Name: "gone"}},
			}
			if _, err := runs.Create(ctx, pr, metav1.CreateOptions{}); err != nil {
				b.Error(err)
			}
		}()
	}
	wg.Wait()
	poll(b, fmt.Sprintf("%d PipelineRuns to fail", gcBuilds), 30*time.Minute, func(ctx context.Context) (bool, error) {
		n := 0
		opts := metav1.ListOptions{LabelSelector: runspec.LabelPipeline + "=old", Limit: 1000}
		for {
			l, err := runs.List(ctx, opts)
			if err != nil {
				return false, err
			}
			for _, pr := range l.Items {
				if c := pr.Status.GetCondition(apis.ConditionSucceeded); c != nil && !c.IsUnknown() {
					n++
				}
			}
			if l.Continue == "" {
				return n == gcBuilds, nil
			}
			opts.Continue = l.Continue
		}
	})
	before := c.requests.Load()
	start := time.Now()
	report, err := gc.Sweep(ctx, target, gc.Options{Rules: gc.DefaultRules})
	elapsed := time.Since(start)
	if err != nil {
		b.Fatal(err)
	}
	deleted := 0
	for _, it := range report.Deleted {
		if it.Kind == gc.KindPipelineRun && strings.HasPrefix(it.Name, "old-") {
			deleted++
		}
	}
	requests := c.requests.Load() - before
	b.Logf("gc of %d ended builds: %d deleted in %s, %d requests", gcBuilds, deleted, elapsed.Round(time.Millisecond), requests)
	if deleted != gcBuilds-5 {
		b.Errorf("gc deleted %d of the old builds, want %d", deleted, gcBuilds-5)
	}
	b.ReportMetric(elapsed.Seconds(), "gc-s")
	b.ReportMetric(float64(requests)/float64(gcBuilds), "gc-requests/build")
}
