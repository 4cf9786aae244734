//go:build e2e && checkload

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// TestCheckLoad (make bench-checks; docs/benchmarks.md has its last figures) measures what
// Concourse's periodic checks cost the cluster: for each N of CHECKS_RESOURCES (50,200), a
// pipeline of N mock resources, each a triggering input of a paused job, checked every
// CHECKS_EVERY (1m) through the web node, for CHECKS_DURATION (10m), and in that time one
// resource a minute given a new version by hand (fly check-resource --from). It reports
// pods and TaskRuns created a minute (after the first minute, when every resource is
// checked for the first time; and pods once every resource was checked once, "later"),
// each check's lag (from when it was due, its previous check's end plus the interval, to
// its end, when its versions were saved) and its own time (from its build's start, once
// lidar's scan, every CHECKS_SCANNER_INTERVAL (Concourse's 10s), found it due and the rate
// limiter let it run), the API server's and the kubelet's CPU seconds a minute (over the
// run, and "later", once every resource had been checked once: the steady state), and
// the checks that did not succeed. Each size runs in each of CHECKS_MODES
// (runs,exec,containers): the checks as runs of their own (--tekton-no-check-containers),
// in check containers through pods/exec (--tekton-check-over-exec), then in check
// containers over the pod network, one after the other in the same run. It asserts
// nothing of the figures: they are the bench's.
func TestCheckLoad(t *testing.T) {
	var sizes []int
	for _, s := range strings.Split(envString("CHECKS_RESOURCES", "50,200"), ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			fatalf(t, "CHECKS_RESOURCES=%q: want numbers above 0, comma-separated", os.Getenv("CHECKS_RESOURCES"))
		}
		sizes = append(sizes, n)
	}
	duration := envDuration(t, "CHECKS_DURATION", 10*time.Minute)
	every := envDuration(t, "CHECKS_EVERY", time.Minute)
	modes := strings.Split(envString("CHECKS_MODES", "runs,exec,containers"), ",")
	for _, m := range modes {
		if m != "runs" && m != "exec" && m != "containers" {
			fatalf(t, "CHECKS_MODES=%q: want runs, exec or containers, comma-separated", os.Getenv("CHECKS_MODES"))
		}
	}
	dumpOnFailure(t)
	base := slices.Clone(web.env)
	scan := "10s" // Concourse's --lidar-scanner-interval
	if v := os.Getenv("CHECKS_SCANNER_INTERVAL"); v != "" {
		scan = envDuration(t, "CHECKS_SCANNER_INTERVAL", 0).String()
		base = append(base, "CONCOURSE_LIDAR_SCANNER_INTERVAL="+scan)
	}
	defer checksIn(t, base, "containers")
	var rows []string
	for _, n := range sizes {
		for _, m := range modes {
			checksIn(t, base, m)
			l := runCheckLoad(t, n, duration, every)
			l.mode, l.scan = m, scan
			rows = append(rows, l.row())
			t.Logf("check load: %s", l.row())
		}
	}
	report := "| resources | checks in | lidar's scan | minutes | pods/min | pods/min, later | TaskRuns/min | lag p50 | lag p99 | lag p99, later checks | check's own time p99 | own time p99, later | API server CPU s/min | API server CPU s/min, later | kubelet CPU s/min | kubelet CPU s/min, later | checks | not succeeded |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n" + strings.Join(rows, "\n") + "\n"
	t.Logf("check load:\n%s", report)
	if out := os.Getenv("CHECKS_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(report), 0o644); err != nil {
			errorf(t, "writing %s: %v", out, err)
		}
	}
}

// checksIn restarts the web node, when it must, for its checks to run in check containers
// (mode "containers", the default), in check containers through pods/exec ("exec":
// --tekton-check-over-exec) or as runs of their own ("runs":
// --tekton-no-check-containers); base is its environment.
func checksIn(t *testing.T, base []string, mode string) {
	env := base
	switch mode {
	case "runs":
		env = append(slices.Clone(base), "CONCOURSE_TEKTON_NO_CHECK_CONTAINERS=true")
	case "exec":
		env = append(slices.Clone(base), "CONCOURSE_TEKTON_CHECK_OVER_EXEC=true")
	}
	if slices.Equal(env, web.env) {
		return
	}
	if out, err := web.webSh("down"); err != nil {
		fatalf(t, "web.sh down: %v\n%s", err, out)
	}
	web.env = env
	if out, err := web.webSh("up"); err != nil {
		fatalf(t, "web.sh up: %v\n%s%s", err, out, web.logTail(40))
	}
	if err := web.waitForWorkers(2*time.Minute, "tekton-"+web.ns); err != nil {
		fatal(t, err)
	}
}

// checkLoad is what one size's run measured.
type checkLoad struct {
	mode, scan     string
	resources      int
	minutes        float64
	pods, taskRuns int // created after the first minute
	// laterPods were created once every resource had been checked once, in
	// laterMinutes: what keeping the checks going costs.
	laterPods    int
	laterMinutes float64
	lags         []time.Duration
	// laterLags are the lags of every check but each resource's first: the resources
	// are set at once, and Concourse's rate limiter spreads their first checks.
	laterLags []time.Duration
	// took is each check's own time, from its build's start (once lidar's scan found it
	// due and Concourse's rate limiter let it run) to its end.
	took, laterTook []time.Duration
	// laterAPIServerCPU and laterKubeletCPU are CPU seconds a minute once every
	// resource had been checked once (-1: never).
	laterAPIServerCPU, laterKubeletCPU float64
	apiserverCPU, kubeletCPU           float64 // seconds, over the whole run
	checks, notSucceeded               int
}

func (l checkLoad) row() string {
	pct := func(lags []time.Duration, p float64) string {
		if len(lags) == 0 {
			return "-"
		}
		lags = slices.Sorted(slices.Values(lags))
		return lags[min(len(lags)-1, int(p*float64(len(lags))))].Round(100 * time.Millisecond).String()
	}
	rest := l.minutes - 1
	later := "-"
	if l.laterMinutes > 0 {
		later = fmt.Sprintf("%.1f", float64(l.laterPods)/l.laterMinutes)
	}
	cpu := func(v float64) string {
		if v < 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("| %d | %s | %s | %.0f | %.1f | %s | %.1f | %s | %s | %s | %s | %s | %.1f | %s | %.1f | %s | %d | %d |", l.resources, l.mode, l.scan, l.minutes,
		float64(l.pods)/rest, later, float64(l.taskRuns)/rest, pct(l.lags, 0.5), pct(l.lags, 0.99), pct(l.laterLags, 0.99), pct(l.took, 0.99), pct(l.laterTook, 0.99),
		l.apiserverCPU/l.minutes, cpu(l.laterAPIServerCPU), l.kubeletCPU/l.minutes, cpu(l.laterKubeletCPU), l.checks, l.notSucceeded)
}

// runCheckLoad sets a pipeline of n resources, lets lidar check them for duration, and
// destroys it.
func runCheckLoad(t *testing.T, n int, duration, every time.Duration) checkLoad {
	pipeline := fmt.Sprintf("checks-%d", n)
	var b strings.Builder
	b.WriteString("resources:\n")
	for i := range n {
		fmt.Fprintf(&b, "- name: r%d\n  type: mock\n  check_every: %s\n  source: {initial_version: r%d-v1}\n", i, every, i)
	}
	// Concourse 8 checks periodically only the resources that trigger a job (db's
	// checkFactory.Resources): each is a triggering input of a job that stays paused.
	b.WriteString("jobs:\n- name: uses\n  plan:\n  - in_parallel:\n")
	for i := range n {
		fmt.Fprintf(&b, "    - {get: r%d, trigger: true}\n", i)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	created := &creations{pods: map[string]time.Time{}, taskRuns: map[string]time.Time{}}
	created.watch(ctx, t, pipeline)

	apiserver, kubelet := daemonCPU(t, "kube-apiserver"), daemonCPU(t, "kubelet")
	start := time.Now()
	setPipeline(t, pipeline, b.String())
	defer clearChecks(t, pipeline)
	flyOK(t, time.Minute, "pause-job", "-j", pipeline+"/uses")

	// Each resource's checks, by build ID: when each ended and how.
	type check struct {
		status     string
		start, end time.Time
	}
	checks := make([]map[int]check, n)
	for i := range checks {
		checks[i] = map[int]check{}
	}
	next := 0
	// The daemons' CPU every tick, for the steady state's share once it is known.
	type cpuSample struct {
		at                 time.Time
		apiserver, kubelet float64
	}
	samples := []cpuSample{{start, apiserver, kubelet}}
	for tick := time.Now(); time.Since(start) < duration; tick = tick.Add(5 * time.Second) {
		time.Sleep(time.Until(tick))
		samples = append(samples, cpuSample{time.Now(), daemonCPU(t, "kube-apiserver"), daemonCPU(t, "kubelet")})
		if m := int(time.Since(start) / time.Minute); m > next {
			next = m
			// A new version of one resource a minute.
			r := fmt.Sprintf("%s/r%d", pipeline, (m*7)%n)
			if out, code := fly(t, time.Minute, "check-resource", "-r", r, "--from", fmt.Sprintf("version:v%d", m)); code != 0 {
				t.Logf("fly check-resource -r %s: exit %d\n%s", r, code, out)
			}
		}
		out, code := fly(t, time.Minute, "resources", "-p", pipeline, "--json")
		if code != 0 {
			t.Logf("fly resources: exit %d", code)
			continue
		}
		var list []struct {
			Name  string `json:"name"`
			Build *struct {
				ID        int    `json:"id"`
				Status    string `json:"status"`
				StartTime int64  `json:"start_time"`
				EndTime   int64  `json:"end_time"`
			} `json:"build"`
		}
		if err := json.Unmarshal([]byte(out), &list); err != nil {
			t.Logf("fly resources --json: %v", err)
			continue
		}
		for _, r := range list {
			i, err := strconv.Atoi(strings.TrimPrefix(r.Name, "r"))
			if err != nil || i >= n || r.Build == nil || r.Build.EndTime == 0 {
				continue
			}
			checks[i][r.Build.ID] = check{r.Build.Status, time.Unix(r.Build.StartTime, 0), time.Unix(r.Build.EndTime, 0)}
		}
	}
	end := time.Now()
	l := checkLoad{resources: n, minutes: end.Sub(start).Minutes(), laterAPIServerCPU: -1, laterKubeletCPU: -1}
	l.apiserverCPU, l.kubeletCPU = daemonCPU(t, "kube-apiserver")-apiserver, daemonCPU(t, "kubelet")-kubelet
	// When every resource had been checked once (zero: some never was).
	var firstRound time.Time
	for _, byID := range checks {
		if len(byID) == 0 {
			firstRound = time.Time{}
			break
		}
		first := byID[slices.Min(slices.Collect(maps.Keys(byID)))].end
		if first.After(firstRound) {
			firstRound = first
		}
	}
	if !firstRound.IsZero() && firstRound.Before(end) {
		l.laterPods, _ = created.after(firstRound, end)
		l.laterMinutes = end.Sub(firstRound).Minutes()
		from := samples[len(samples)-1]
		for _, s := range samples {
			if !s.at.Before(firstRound) {
				from = s
				break
			}
		}
		last := samples[len(samples)-1]
		if m := last.at.Sub(from.at).Minutes(); m > 0 {
			l.laterAPIServerCPU, l.laterKubeletCPU = (last.apiserver-from.apiserver)/m, (last.kubelet-from.kubelet)/m
		}
	}
	for _, byID := range checks {
		due := start
		for _, id := range slices.Sorted(maps.Keys(byID)) {
			c := byID[id]
			l.checks++
			if c.status != "succeeded" {
				l.notSucceeded++
			}
			lag := max(0, c.end.Sub(due))
			l.took = append(l.took, max(0, c.end.Sub(c.start)))
			l.lags = append(l.lags, lag)
			if due != start {
				l.laterLags = append(l.laterLags, lag)
				l.laterTook = append(l.laterTook, max(0, c.end.Sub(c.start)))
			}
			due = c.end.Add(every)
		}
	}
	l.pods, l.taskRuns = created.after(start.Add(time.Minute), end)
	return l
}

// clearChecks destroys the pipeline and deletes what its checks left on the cluster (its
// runs, its check containers), and waits until their pods are gone: the next size or
// way starts on a cluster that works for it alone.
func clearChecks(t *testing.T, pipeline string) {
	if out, code := fly(t, time.Minute, "destroy-pipeline", "-n", "-p", pipeline); code != 0 {
		t.Logf("fly destroy-pipeline -p %s: exit %d\n%s", pipeline, code, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	opts := metav1.ListOptions{LabelSelector: "concourse-ci.org/pipeline=" + pipeline}
	start := time.Now()
	for ctx.Err() == nil {
		// Again each time: a run the web node was making meanwhile makes pods later.
		if err := web.tekton.TektonV1().PipelineRuns(web.ns).DeleteCollection(ctx, metav1.DeleteOptions{}, opts); err != nil {
			t.Logf("deleting the runs of %s: %v", pipeline, err)
		}
		if err := web.kube.CoreV1().Pods(web.ns).DeleteCollection(ctx, metav1.DeleteOptions{}, opts); err != nil {
			t.Logf("deleting the pods of %s: %v", pipeline, err)
		}
		time.Sleep(5 * time.Second)
		pods, err := web.kube.CoreV1().Pods(web.ns).List(ctx, opts)
		if err == nil && len(pods.Items) == 0 {
			t.Logf("the pods of %s were gone %s after its end", pipeline, time.Since(start).Round(time.Second))
			return
		}
	}
	t.Logf("the pods of %s were not all gone 10 minutes after its end", pipeline)
}

// creations records when each pod and TaskRun of a pipeline was created.
type creations struct {
	mu             sync.Mutex
	pods, taskRuns map[string]time.Time
}

// watch follows the namespace's pods and TaskRuns of pipeline until ctx ends.
func (c *creations) watch(ctx context.Context, t *testing.T, pipeline string) {
	opts := metav1.ListOptions{LabelSelector: "concourse-ci.org/pipeline=" + pipeline}
	follow := func(kind string, into map[string]time.Time, open func() (watch.Interface, error)) {
		go func() {
			for ctx.Err() == nil {
				w, err := open()
				if err != nil {
					t.Logf("watching %s: %v", kind, err)
					time.Sleep(time.Second)
					continue
				}
				for e := range w.ResultChan() {
					if o, ok := e.Object.(metav1.Object); ok && e.Type == watch.Added {
						c.mu.Lock()
						if _, seen := into[o.GetName()]; !seen {
							into[o.GetName()] = o.GetCreationTimestamp().Time
						}
						c.mu.Unlock()
					}
				}
				w.Stop()
			}
		}()
	}
	follow("pods", c.pods, func() (watch.Interface, error) { return web.kube.CoreV1().Pods(web.ns).Watch(ctx, opts) })
	follow("TaskRuns", c.taskRuns, func() (watch.Interface, error) { return web.tekton.TektonV1().TaskRuns(web.ns).Watch(ctx, opts) })
}

// after counts the pods and TaskRuns created from from to to.
func (c *creations) after(from, to time.Time) (pods, taskRuns int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	count := func(m map[string]time.Time) int {
		n := 0
		for _, at := range m {
			if !at.Before(from) && !at.After(to) {
				n++
			}
		}
		return n
	}
	return count(c.pods), count(c.taskRuns)
}

// daemonCPU is the CPU time, user and system, in seconds, that a daemon of the local e2e
// cluster has used (its /proc/PID/stat; 0 when the cluster is not the local one).
func daemonCPU(t *testing.T, daemon string) float64 {
	out, err := exec.Command("../../e2e/cluster/cluster.sh", "pid", daemon).Output()
	if err != nil {
		t.Logf("the %s's pid: %v", daemon, err)
		return 0
	}
	stat, err := os.ReadFile("/proc/" + strings.TrimSpace(string(out)) + "/stat")
	if err != nil {
		t.Logf("the %s's CPU time: %v", daemon, err)
		return 0
	}
	// The fields after the command's name, which is in parentheses: utime and stime are
	// the 14th and 15th of the whole line, in clock ticks (100 a second).
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	return (utime + stime) / 100
}

func envString(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
