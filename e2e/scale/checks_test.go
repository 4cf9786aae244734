//go:build e2e

package scale

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/event"
	"github.com/concourse-tekton/concourse-tekton/concourse/vars"
	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/tektonrun"
	"github.com/concourse-tekton/concourse-tekton/tektonrun/buildevents"
	"github.com/concourse-tekton/concourse-tekton/translate"
)

const (
	// checkTimeout bounds each check, as a check's timeout does on the web node: a check
	// still under way then has timed out.
	checkTimeout = 2 * time.Minute
	// maxInFlight bounds the checks under way at once: a check that falls due while as
	// many are under way is not started.
	maxInFlight = 2000
	// startsAtOnce bounds the check session pods being started at once.
	startsAtOnce = 500
	// sessionsStartFor bounds the start of a mode's check session pods, with their first
	// checks.
	sessionsStartFor = 30 * time.Minute
	// clearFor bounds the wait for what a mode made to be gone.
	clearFor = 15 * time.Minute
	// checkImage is the mock resource type's image: the simulated nodes pull nothing, so
	// any well-formed reference does.
	checkImage = "e2e.invalid/mock-resource:scale"
	// checkScript is the local runner's resource's check: one version, at once.
	checkScript = "#!/bin/sh\necho '[{\"v\":\"1\"}]'\n"
)

// BenchmarkChecks (make bench-checks-kwok) measures what Concourse's periodic checks
// cost the control plane (the real API server and the real Tekton controller, the pods
// on simulated nodes, kwok) at Concourse's rate: CHECKS_KWOK_RESOURCES (5000) mock
// resources, each of its own source, so of its own resource config, each checked once
// every CHECKS_KWOK_EVERY (1m), the checks spread evenly as Concourse's rate limiter
// spreads them, for CHECKS_KWOK_DURATION (5m), in each mode of CHECKS_KWOK_MODES
// ("runs,containers"), one after the other in the same run:
//
//   - runs: each check a build of its own (tektonrun.Backend.Run of the check build the
//     web node compiles: a PipelineRun, a TaskRun, a pod), followed to its end, its
//     versions read when it succeeded, and its run deleted, as the web node does;
//   - containers: each resource's checks in its check session's pod
//     (tektonrun.SessionCheck), started before the timed period with the resource's
//     first check (as the web node starts a session for a resource's first check, which
//     runs in it), so that the period is the steady state of sessions that last an
//     hour; each check is compiled again (PrepareCheck, which reads the target's state)
//     and run in the session's pod, as the web node does.
//
// The simulated nodes run no container, so no session pod's runner can serve its
// checks: one runner of this machine stands in for them all (the real
// `concourse-runner serve`, built here), every session pod's address is taken to be
// its (Backend.SimulateSessions), and reading a pod's key, an exec into it, runs the
// runner's session-key here. Every check thus goes over TLS to the local runner, which
// runs it as a session pod's runner would, a process of its own running the resource's
// check script: what the control plane sees of a check is what it would see of a real
// session pod's (nothing, the target's state aside), while the local runner's work is
// this machine's, and is reported apart (its CPU seconds a minute).
//
// Each check has checkTimeout; at most maxInFlight are under way at once, and a check
// due while that many are is counted as not started. A mode's figures: the checks due,
// ended (not timed out), succeeded and not started; the checks that ended in the timed
// period a minute; the pods and TaskRuns created in it a minute; the lag of each
// started check (its end, or its timeout, less when it was due), p50 and p99; the API
// server's CPU seconds a minute (its /proc, on this machine); the API requests of this
// process per started check (watches apart), from the period's start until every check
// has ended; the local runner's CPU seconds a minute, its checks' processes included
// (containers); and how long starting the session pods took (containers). They are
// logged as a markdown table, written to CHECKS_KWOK_OUT if set. Nothing is asserted of
// them: they are the bench's. CHECKS_KWOK_QPS, when set, is this process's clients'
// requests a second (bursts of twice as many; the harness's 200 otherwise): in runs
// mode they may bound the checks more than the control plane does.
//
// Under kwok a run's pod ends with the results of the harness's stepComplete stage: an
// outcome and an exit status. A check build's only step also records the build's
// verdict (translate/fuse.go: its "verdict" result) and the versions it found, which
// that stage does not write: the run ends, but not succeeded (errored), and finds no
// version. A run is counted by its end (ended, succeeded or not): the point is the
// control plane's load.
func BenchmarkChecks(b *testing.B) {
	n := envInt("CHECKS_KWOK_RESOURCES", 5000)
	every := envDuration(b, "CHECKS_KWOK_EVERY", time.Minute)
	duration := envDuration(b, "CHECKS_KWOK_DURATION", 5*time.Minute)
	var modes []string
	for m := range strings.SplitSeq(cmp.Or(os.Getenv("CHECKS_KWOK_MODES"), "runs,containers"), ",") {
		m = strings.TrimSpace(m)
		if m != "runs" && m != "containers" {
			b.Fatalf("CHECKS_KWOK_MODES=%q: want runs or containers, comma-separated", os.Getenv("CHECKS_KWOK_MODES"))
		}
		modes = append(modes, m)
	}

	h := setUp(b)
	h.roomFor(b, n)
	if qps := envInt("CHECKS_KWOK_QPS", 0); qps > 0 {
		// The counted clients are made from the harness's config (counted copies it).
		h.cfg.QPS, h.cfg.Burst = float32(qps), 2*qps
	}
	var c counter
	backend := tektonrun.NewBackend(h.counted(&c), translate.Options{
		RunnerImage: "e2e.invalid/runner:scale", BuildVolumeSize: "1Mi",
		ResourceImages: map[string]string{"mock": checkImage},
	})
	defer backend.Close()
	backend.SetLogSource(emptyLogs{})
	cb := &checkBench{h: h, backend: backend, requests: &c, every: every, duration: duration}
	if slices.Contains(modes, "containers") {
		hold := time.Duration(len(modes))*(duration+checkTimeout+sessionsStartFor+clearFor) + 10*time.Minute
		cb.runner = startLocalRunner(b, hold)
		backend.SimulateSessions(cb.runner, func(*corev1.Pod) string { return "127.0.0.1" })
	}
	for i := range n {
		name := fmt.Sprintf("r%d", i)
		cb.plans = append(cb.plans, concourse.Plan{ID: "1", Check: &concourse.CheckPlan{
			Name: name, Type: "mock", Source: concourse.Source{"initial_version": name},
			TypeImage: concourse.TypeImage{BaseType: "mock"}, Resource: name, Interval: every.String(),
		}})
	}
	watchCtx, stopWatch := context.WithCancel(context.Background())
	defer stopWatch()
	cb.created = h.watchCreations(watchCtx)

	b.ResetTimer()
	var rows []string
	for _, m := range modes {
		l := cb.measure(b, m)
		rows = append(rows, l.row())
		b.Logf("checks under kwok: %s", l.row())
		if l.errors > 0 {
			b.Logf("%s: %d checks errored (timeouts apart), the first: %s", m, l.errors, strings.Join(l.firstErrors, "; "))
		}
		l.report(b)
		h.clear(b)
	}
	b.StopTimer()
	report := "| resources | checks in | minutes | checks due | checks ended | succeeded | not started | checks/min | pods/min | TaskRuns/min | lag p50 | lag p99 | API server CPU s/min | API requests/check | local runner CPU s/min | session pods started in |\n" +
		"|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n" + strings.Join(rows, "\n") + "\n"
	b.Logf("checks under kwok:\n%s", report)
	if out := os.Getenv("CHECKS_KWOK_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(report), 0o644); err != nil {
			b.Errorf("writing the report to %s: %v", out, err)
		}
	}
}

// envDuration is the duration the environment variable name gives, def when it is unset.
func envDuration(b *testing.B, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		b.Fatalf("%s=%q: want a duration above 0 (1m, 90s)", name, v)
	}
	return d
}

// checkBench is what the modes of BenchmarkChecks share.
type checkBench struct {
	h        *harness
	backend  *tektonrun.Backend
	requests *counter
	created  *creations
	// runner serves the session pods' checks; nil when no mode runs checks in them.
	runner *localRunner
	// plans are each resource's check build's plan, as the web node compiles it.
	plans           []concourse.Plan
	every, duration time.Duration
	// builds numbers the check builds, as the web node numbers them by their IDs.
	builds atomic.Int64
}

// meta names a new check build of resource i, as the web node names it.
func (cb *checkBench) meta(i int) tektonrun.BuildMeta {
	return tektonrun.BuildMeta{Team: "main", Pipeline: "checks", Job: "check-" + cb.plans[i].Check.Name,
		Build: strconv.FormatInt(cb.builds.Add(1), 10), Check: true}
}

// A checker runs a check of resource i and says whether it succeeded; after, when not
// nil, is what follows the check's end (the deletion of its run), not timed.
type checker func(ctx context.Context, i int) (ok bool, after func() error, err error)

// checkRun is a check as a build of its own, as the web node runs it without check
// containers: started, followed to its end, its versions read when it succeeded, and
// its run deleted (as the web node deletes it at once when no worker records its
// containers, and once its container expires when one does: the same deletion, later).
func (cb *checkBench) checkRun(ctx context.Context, i int) (bool, func() error, error) {
	build, err := cb.backend.Run(ctx, cb.plans[i], cb.meta(i), tektonrun.WithCredentials(vars.StaticVariables{}))
	if err != nil {
		return false, nil, err
	}
	after := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		background := metav1.DeletePropagationBackground
		err := cb.backend.Client().Target().Tekton.TektonV1().PipelineRuns(build.Namespace).Delete(ctx, build.Name, metav1.DeleteOptions{PropagationPolicy: &background})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting the check's run %s: %w", build.Name, err)
		}
		return nil
	}
	status, err := build.Events(ctx, buildevents.Cursor{}, func(buildevents.Event) error { return nil })
	if err != nil || status != event.BuildStatusSucceeded {
		return false, after, err
	}
	if _, err := build.Wait(ctx); err != nil {
		return false, after, fmt.Errorf("reading the versions of %s: %w", build.Name, err)
	}
	return true, after, nil
}

// checkInSession is a check in the check session pod name, as the web node runs it:
// compiled again, then run in the pod.
func (cb *checkBench) checkInSession(ctx context.Context, i int, name string) (bool, error) {
	sc, err := cb.backend.PrepareCheck(ctx, cb.plans[i], cb.meta(i), vars.StaticVariables{})
	if err != nil {
		return false, fmt.Errorf("compiling the check of %s: %w", cb.plans[i].Check.Name, err)
	}
	if name == "" {
		return false, fmt.Errorf("%w: %s's never started", tektonrun.ErrSessionGone, cb.plans[i].Check.Name)
	}
	res, err := sc.Run(ctx, name, func(buildevents.Event) error { return nil })
	if err != nil {
		return false, err
	}
	return res.Outcome == runspec.Succeeded, nil
}

// startSessions starts a check session pod for each resource, and runs the resource's
// first check in it, as the web node does for a resource's first check; it returns the
// pods' names ("" where none started) and how long starting them took (from the first
// creation until the last pod runs, first checks apart).
func (cb *checkBench) startSessions(b *testing.B) ([]string, time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), sessionsStartFor)
	defer cancel()
	// A check that cannot run in a check session says so at once.
	if _, err := cb.backend.PrepareCheck(ctx, cb.plans[0], cb.meta(0), vars.StaticVariables{}); err != nil {
		b.Fatalf("compiling a check for a check session: %v", err)
	}
	names := make([]string, len(cb.plans))
	var mu sync.Mutex
	var lastStarted time.Time
	var failed, firstFailed int
	var firstErrs []string
	sem := make(chan struct{}, startsAtOnce)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range cb.plans {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			fail := func(first bool, err error) {
				mu.Lock()
				defer mu.Unlock()
				if first {
					firstFailed++
				} else {
					failed++
				}
				if len(firstErrs) < 3 {
					firstErrs = append(firstErrs, err.Error())
				}
			}
			sc, err := cb.backend.PrepareCheck(ctx, cb.plans[i], cb.meta(i), vars.StaticVariables{})
			if err != nil {
				fail(false, fmt.Errorf("compiling the check of %s: %w", cb.plans[i].Check.Name, err))
				return
			}
			name := sc.NewName()
			if err := sc.Start(ctx, name); err != nil {
				fail(false, err)
				return
			}
			mu.Lock()
			if now := time.Now(); now.After(lastStarted) {
				lastStarted = now
			}
			mu.Unlock()
			names[i] = name
			res, err := sc.Run(ctx, name, func(buildevents.Event) error { return nil })
			if err == nil && res.Outcome != runspec.Succeeded {
				err = fmt.Errorf("the check ended %s: %s", res.Outcome, res.Error)
			}
			if err != nil {
				fail(true, fmt.Errorf("the first check in %s: %w", name, err))
			}
		})
	}
	wg.Wait()
	took := lastStarted.Sub(start)
	b.Logf("%d session pods started in %s, their first checks run in %s", len(cb.plans)-failed, took.Round(time.Second), time.Since(start).Round(time.Second))
	if failed+firstFailed > 0 {
		b.Errorf("%d of %d session pods did not start, %d first checks failed: %s", failed, len(cb.plans), firstFailed, strings.Join(firstErrs, "; "))
	}
	if failed == len(cb.plans) {
		b.FailNow()
	}
	return names, took
}

// checkOutcome is how one check due went.
type checkOutcome struct {
	due, end time.Time
	// started: it was not refused for too many checks under way; ended: it ended before
	// its timeout; ok: it succeeded.
	started, ended, ok bool
	err                error
}

// drive is one timed period's checks.
type drive struct {
	start, end time.Time
	outcomes   []checkOutcome
	wg         sync.WaitGroup
}

// driveChecks runs every check due from now for the period: n resources each checked
// once every every, the checks spread evenly, resource by resource, each with
// checkTimeout, at most maxInFlight at once. It returns at the end of the period, the
// checks started last still under way (drive.wg).
func driveChecks(n int, every, period time.Duration, check checker) *drive {
	total := int(int64(period) * int64(n) / int64(every))
	d := &drive{outcomes: make([]checkOutcome, total), start: time.Now()}
	sem := make(chan struct{}, maxInFlight)
	for k := range total {
		due := d.start.Add(time.Duration(int64(k) * int64(every) / int64(n)))
		time.Sleep(time.Until(due))
		o := &d.outcomes[k]
		o.due = due
		select {
		case sem <- struct{}{}:
		default:
			continue
		}
		o.started = true
		d.wg.Go(func() {
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(context.Background(), checkTimeout)
			defer cancel()
			ok, after, err := check(ctx, k%n)
			o.end = time.Now()
			o.ok = ok && err == nil
			o.ended = o.ok || ctx.Err() == nil
			if o.ended {
				o.err = err
			}
			if after != nil {
				if err := after(); err != nil && o.err == nil {
					o.err = err
				}
			}
		})
	}
	time.Sleep(time.Until(d.start.Add(period)))
	d.end = time.Now()
	return d
}

// modeLoad is what one mode measured.
type modeLoad struct {
	mode      string
	resources int
	minutes   float64
	// The checks due, those that ended (before their timeout), succeeded, were not
	// started, ended within the period, errored (timeouts apart).
	due, ended, succeeded, notStarted, endedInPeriod, errors int
	firstErrors                                              []string
	// pods and taskRuns were created in the period.
	pods, taskRuns int
	// lags are the started checks' (sorted).
	lags []time.Duration
	// apiserverCPU and runnerCPU are CPU seconds in the period; -1: unknown, or no
	// local runner in this mode.
	apiserverCPU, runnerCPU float64
	// requests are this process's from the period's start until every check ended;
	// started are the checks started.
	requests, started int
	// sessionsStarted is how long starting the session pods took (0: no sessions).
	sessionsStarted time.Duration
}

// measure runs a mode's timed period, and returns what it measured.
func (cb *checkBench) measure(b *testing.B, mode string) modeLoad {
	l := modeLoad{mode: mode, resources: len(cb.plans), minutes: cb.duration.Minutes(), apiserverCPU: -1, runnerCPU: -1}
	var check checker
	switch mode {
	case "runs":
		check = cb.checkRun
	case "containers":
		var names []string
		names, l.sessionsStarted = cb.startSessions(b)
		check = func(ctx context.Context, i int) (bool, func() error, error) {
			ok, err := cb.checkInSession(ctx, i, names[i])
			return ok, nil, err
		}
	}
	apiserverBefore, apiserverOK := apiserverCPU(b)
	var runnerBefore float64
	if mode == "containers" {
		runnerBefore = cb.runner.cpu(b)
	}
	requestsBefore := cb.requests.requests.Load()
	d := driveChecks(len(cb.plans), cb.every, cb.duration, check)
	if after, ok := apiserverCPU(b); ok && apiserverOK {
		l.apiserverCPU = after - apiserverBefore
	}
	if mode == "containers" {
		l.runnerCPU = cb.runner.cpu(b) - runnerBefore
	}
	d.wg.Wait()
	l.requests = int(cb.requests.requests.Load() - requestsBefore)
	l.pods, l.taskRuns = cb.created.between(d.start, d.end)
	for _, o := range d.outcomes {
		l.due++
		if !o.started {
			l.notStarted++
			continue
		}
		l.started++
		l.lags = append(l.lags, o.end.Sub(o.due))
		if o.ended {
			l.ended++
			if !o.end.After(d.end) {
				l.endedInPeriod++
			}
		}
		if o.ok {
			l.succeeded++
		}
		if o.err != nil {
			l.errors++
			if len(l.firstErrors) < 3 {
				l.firstErrors = append(l.firstErrors, o.err.Error())
			}
		}
	}
	slices.Sort(l.lags)
	return l
}

// row is the mode's row of the report's table.
func (l modeLoad) row() string {
	lag := func(p float64) string {
		if len(l.lags) == 0 {
			return "-"
		}
		return percentile(l.lags, p).Round(time.Millisecond).String()
	}
	perMin := func(v float64) string {
		if v < 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f", v/l.minutes)
	}
	perCheck, started := "-", "-"
	if l.started > 0 {
		perCheck = fmt.Sprintf("%.2f", float64(l.requests)/float64(l.started))
	}
	if l.sessionsStarted > 0 {
		started = l.sessionsStarted.Round(time.Second).String()
	}
	return fmt.Sprintf("| %d | %s | %.0f | %d | %d | %d | %d | %.1f | %.1f | %.1f | %s | %s | %s | %s | %s | %s |",
		l.resources, l.mode, l.minutes, l.due, l.ended, l.succeeded, l.notStarted,
		float64(l.endedInPeriod)/l.minutes, float64(l.pods)/l.minutes, float64(l.taskRuns)/l.minutes,
		lag(50), lag(99), perMin(l.apiserverCPU), perCheck, perMin(l.runnerCPU), started)
}

// report reports the mode's main figures as the benchmark's metrics, named after it.
func (l modeLoad) report(b *testing.B) {
	b.ReportMetric(float64(l.endedInPeriod)/l.minutes, l.mode+"-checks/min")
	b.ReportMetric(float64(l.notStarted), l.mode+"-not-started")
	b.ReportMetric(float64(l.pods)/l.minutes, l.mode+"-pods/min")
	if len(l.lags) > 0 {
		b.ReportMetric(float64(percentile(l.lags, 99).Milliseconds()), l.mode+"-lag-p99-ms")
	}
	if l.apiserverCPU >= 0 {
		b.ReportMetric(l.apiserverCPU/l.minutes, l.mode+"-apiserver-CPU-s/min")
	}
	if l.started > 0 {
		b.ReportMetric(float64(l.requests)/float64(l.started), l.mode+"-requests/check")
	}
}

// roomFor gives the simulated nodes room for pods pods at once, with some to spare: the
// harness makes them for 110 each.
func (h *harness) roomFor(b *testing.B, pods int) {
	each := (pods+nodes-1)/nodes + 50
	if each <= 110 {
		return
	}
	patch := fmt.Sprintf(`{"status":{"capacity":{"pods":"%d"},"allocatable":{"pods":"%d"}}}`, each, each)
	for i := range nodes {
		name := fmt.Sprintf("kwok-scale-%d", i)
		if _, err := h.kube.CoreV1().Nodes().Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
			b.Fatalf("giving the simulated node %s room for %d pods: %v", name, each, err)
		}
	}
}

// clear deletes what a mode made in the namespace (the check runs, with their TaskRuns,
// pods and volumes; the session pods), and waits until it is gone, for the next mode to
// start clean.
func (h *harness) clear(b *testing.B) {
	ctx := context.Background()
	background := metav1.DeletePropagationBackground
	all := metav1.ListOptions{}
	if err := h.tekton.TektonV1().PipelineRuns(h.ns).DeleteCollection(ctx, metav1.DeleteOptions{PropagationPolicy: &background}, all); err != nil {
		b.Fatalf("deleting the PipelineRuns of %s: %v", h.ns, err)
	}
	if err := h.kube.CoreV1().Pods(h.ns).DeleteCollection(ctx, metav1.DeleteOptions{}, all); err != nil {
		b.Fatalf("deleting the pods of %s: %v", h.ns, err)
	}
	if err := h.kube.CoreV1().PersistentVolumeClaims(h.ns).DeleteCollection(ctx, metav1.DeleteOptions{}, all); err != nil {
		b.Fatalf("deleting the volumes of %s: %v", h.ns, err)
	}
	poll(b, "the namespace's runs, TaskRuns and pods to be gone", clearFor, func(ctx context.Context) (bool, error) {
		one := metav1.ListOptions{Limit: 1}
		prs, err := h.tekton.TektonV1().PipelineRuns(h.ns).List(ctx, one)
		if err != nil {
			return false, err
		}
		trs, err := h.tekton.TektonV1().TaskRuns(h.ns).List(ctx, one)
		if err != nil {
			return false, err
		}
		pods, err := h.kube.CoreV1().Pods(h.ns).List(ctx, one)
		if err != nil {
			return false, err
		}
		return len(prs.Items)+len(trs.Items)+len(pods.Items) == 0, nil
	})
}

// creations records when each pod and TaskRun of the namespace was created, by UID.
type creations struct {
	mu             sync.Mutex
	pods, taskRuns map[types.UID]time.Time
}

// watchCreations follows the namespace's pods and TaskRuns until ctx ends, through
// clients of the harness whose requests are not counted.
func (h *harness) watchCreations(ctx context.Context) *creations {
	c := &creations{pods: map[types.UID]time.Time{}, taskRuns: map[types.UID]time.Time{}}
	follow := func(into map[types.UID]time.Time, open func() (watch.Interface, error)) {
		go func() {
			for ctx.Err() == nil {
				w, err := open()
				if err != nil {
					// Tried again: a creation meanwhile is seen when the watch opens.
					time.Sleep(time.Second)
					continue
				}
				// Opened again when the API server ends it: what is there is added again,
				// and kept once.
				for e := range w.ResultChan() {
					if o, ok := e.Object.(metav1.Object); ok && e.Type == watch.Added {
						c.mu.Lock()
						if _, seen := into[o.GetUID()]; !seen {
							into[o.GetUID()] = o.GetCreationTimestamp().Time
						}
						c.mu.Unlock()
					}
				}
				w.Stop()
			}
		}()
	}
	follow(c.pods, func() (watch.Interface, error) { return h.kube.CoreV1().Pods(h.ns).Watch(ctx, metav1.ListOptions{}) })
	follow(c.taskRuns, func() (watch.Interface, error) {
		return h.tekton.TektonV1().TaskRuns(h.ns).Watch(ctx, metav1.ListOptions{})
	})
	return c
}

// between counts the pods and TaskRuns created from from to to (creation times are in
// whole seconds).
func (c *creations) between(from, to time.Time) (pods, taskRuns int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	from = from.Truncate(time.Second)
	count := func(m map[types.UID]time.Time) int {
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

// apiserverCPU is the CPU time, user and system, in seconds, that the local e2e
// cluster's API server (a process of this machine) has used, from its /proc/PID/stat;
// false when it cannot be read.
func apiserverCPU(b *testing.B) (float64, bool) {
	out, err := exec.Command("../cluster/cluster.sh", "pid", "kube-apiserver").Output()
	if err != nil {
		b.Logf("the API server's pid: %v", err)
		return 0, false
	}
	fields, err := procStat(strings.TrimSpace(string(out)))
	if err != nil {
		b.Logf("the API server's CPU time: %v", err)
		return 0, false
	}
	return ticks(fields, 11, 12), true
}

// procStat is the fields of /proc/PID/stat after the command's name (which is in
// parentheses): the state is the first, utime, stime, cutime and cstime the 12th to the
// 15th (the 14th to the 17th of the whole line).
func procStat(pid string) ([]string, error) {
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return nil, err
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if len(fields) < 15 {
		return nil, fmt.Errorf("/proc/%s/stat has %d fields after the command's name", pid, len(fields))
	}
	return fields, nil
}

// ticks sums fields at indexes, in clock ticks (100 a second), in seconds.
func ticks(fields []string, indexes ...int) float64 {
	sum := 0.0
	for _, i := range indexes {
		v, _ := strconv.ParseFloat(fields[i], 64)
		sum += v
	}
	return sum / 100
}

// localRunner is the one runner of this machine that serves the checks of every
// simulated session pod: `concourse-runner serve`, as a session pod's main process, and
// the runner's session-key for the exec that reads a pod's key (a podexec.Streamer).
type localRunner struct {
	bin, creds string
	serve      *exec.Cmd
}

// startLocalRunner builds the runner, and starts it serving checks for hold at most,
// its check a check script that finds one version at once; b's cleanup stops it.
func startLocalRunner(b *testing.B, hold time.Duration) *localRunner {
	dir := b.TempDir()
	r := &localRunner{bin: filepath.Join(dir, "concourse-runner"), creds: filepath.Join(dir, "creds")}
	build := exec.Command("go", "build", "-o", r.bin, "../../cmd/concourse-runner")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("building the runner: %v\n%s", err, out)
	}
	root, resource := filepath.Join(dir, "checks"), filepath.Join(dir, "opt-resource")
	for _, d := range []string{root, r.creds, resource} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(resource, "check"), []byte(checkScript), 0o755); err != nil {
		b.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(dir, "serve.log"))
	if err != nil {
		b.Fatal(err)
	}
	r.serve = exec.Command(r.bin, "serve", "--timeout="+hold.String(), "--x-session-port=0",
		"--x-session-root="+root, "--x-session-creds="+r.creds, "--x-resource-dir="+resource)
	r.serve.Dir, r.serve.Stdout, r.serve.Stderr = dir, logFile, logFile
	if err := r.serve.Start(); err != nil {
		b.Fatalf("starting the local runner: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		r.serve.Wait()
		close(exited)
	}()
	b.Cleanup(func() {
		r.serve.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			r.serve.Process.Kill()
			<-exited
		}
		logFile.Close()
		if b.Failed() {
			data, _ := os.ReadFile(logFile.Name())
			b.Logf("the local runner's log (tail):\n%s", tail(string(data), 20))
		}
	})
	key := filepath.Join(r.creds, runspec.SessionKeyFile)
	poll(b, "the local runner's key", 30*time.Second, func(context.Context) (bool, error) {
		select {
		case <-exited:
			data, _ := os.ReadFile(logFile.Name())
			return false, fmt.Errorf("the local runner exited: %s", data)
		default:
		}
		_, err := os.Stat(key)
		return err == nil, nil
	})
	return r
}

// Stream runs the command exec'd into a session pod's container: only the runner's
// session-key (reading the pod's key), run here against the local runner.
func (r *localRunner) Stream(ctx context.Context, _, pod, _ string, command []string, o remotecommand.StreamOptions) error {
	if len(command) != 2 || command[1] != string(runspec.ModeSessionKey) {
		return fmt.Errorf("pod %s is simulated: it runs only the runner's %s, not %q", pod, runspec.ModeSessionKey, command)
	}
	cmd := exec.CommandContext(ctx, r.bin, string(runspec.ModeSessionKey), "--x-session-creds="+r.creds)
	cmd.Stdout, cmd.Stderr = o.Stdout, o.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("reading the local runner's key: %w", err)
	}
	return nil
}

// cpu is the CPU time, user and system, in seconds, that the local runner and its
// checks' processes (waited for) have used.
func (r *localRunner) cpu(b *testing.B) float64 {
	fields, err := procStat(strconv.Itoa(r.serve.Process.Pid))
	if err != nil {
		b.Fatalf("the local runner's CPU time: %v", err)
	}
	return ticks(fields, 11, 12, 13, 14)
}
