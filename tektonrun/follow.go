package tektonrun

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
	"knative.dev/pkg/apis"

	"github.com/concourse-tekton/concourse-tekton/concourse/event"
	"github.com/concourse-tekton/concourse-tekton/runner/redact"
	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/tektonrun/buildevents"
	"github.com/concourse-tekton/concourse-tekton/tektonrun/podexec"
)

// Client runs builds on one target and follows their events. One Client keeps one watch
// per kind on the namespace however many builds it follows; it is safe for concurrent use.
type Client struct {
	target *Target
	logs   LogSource
	pods   *podexec.Pods

	// runnerVolume is what was last learnt of whether the cluster mounts images.
	runnerVolume runnerVolumeChoice

	once     sync.Once
	watch    *watcher
	watchErr error
	stop     context.CancelFunc
	// watchLog is where the watches say what they meet (klog's logger when unset).
	watchLog klog.Logger
}

// NewClient returns a client of the target. Close it to stop its watches.
func NewClient(t *Target) *Client {
	c := &Client{target: t, logs: kubeLogs{kube: t.Kube}, pods: podexec.New(t.Namespace, t.Kube, t.Tekton, t.Config)}
	c.pods.CanExec = t.canExec
	return c
}

// Target is the client's target.
func (c *Client) Target() *Target { return c.target }

// Close stops the client's watches and log streams.
func (c *Client) Close() {
	if c.stop != nil {
		c.stop()
	}
}

func (c *Client) watcher() (*watcher, error) {
	c.once.Do(func() {
		logger := c.watchLog
		if logger.GetSink() == nil {
			logger = klog.Background()
		}
		ctx, stop := context.WithCancel(klog.NewContext(context.Background(), logger))
		c.stop = stop
		c.watch, c.watchErr = newWatcher(ctx, c.target)
	})
	return c.watch, c.watchErr
}

// notFoundGrace is how long Follow waits for a build it was asked for to appear in the
// watch's cache (it may have just been created).
var notFoundGrace = 10 * time.Second

// Observer is handed what the follower of a build sees of it. Following only reads and
// maps; what a build needs done as it goes (the vars Secrets of its task files, the
// index of its team's resource caches) is done by the observers its starter passes to
// the follower (Build.observers).
type Observer interface {
	// Observe is handed the build's PipelineRun and TaskRuns each time the follower
	// looks at them, while the build is not deleted, before they are mapped. secrets are
	// the values the follower redacts in the build's events: an observer that reads
	// more of the build's credentials adds them. Its error stops the follow.
	Observe(ctx context.Context, pr *v1.PipelineRun, trs []*v1.TaskRun, secrets *redact.Secrets) error
}

// Follow maps the build's events to emit, in order, from where after stops, until the
// build has ended and its final status was emitted (which Follow returns). It reads the
// objects from the watch's caches and the logs through the API: a dropped watch, a broken
// log stream or an apiserver restart costs time, not events. emit's error stops Follow,
// as an observer's does; the observers are handed what Follow sees, in their order.
func (c *Client) Follow(ctx context.Context, run string, after buildevents.Cursor, emit func(buildevents.Event) error, observers ...Observer) (event.BuildStatus, error) {
	return c.follow(ctx, run, after, emit, observers, nil)
}

// follow is Follow; it hands final, when set, the observation the build's final events
// were mapped from (none when they were replayed from its archive).
func (c *Client) follow(ctx context.Context, run string, after buildevents.Cursor, emit func(buildevents.Event) error, observers []Observer, final func(buildevents.Observation)) (event.BuildStatus, error) {
	w, err := c.watcher()
	if err != nil {
		return "", err
	}
	after = after.Clone()
	ns := c.target.Namespace
	wake, unsubscribe := w.subscribe(run)
	defer unsubscribe()
	fctx, stop := context.WithCancel(ctx)
	defer stop()
	followers := map[string]*logFollower{}
	logWake := func() { w.wake(run) }
	var missingSince, endedSince time.Time
	var archiveChecked, archiveRechecked bool
	seenPods := map[string]bool{}
	podMissingSince := map[string]time.Time{}
	var secrets *redact.Secrets
	for {
		pr, trs, pods, deleted, err := w.observe(ns, run)
		switch {
		case apierrors.IsNotFound(err):
			if missingSince.IsZero() {
				missingSince = time.Now()
			}
			if time.Since(missingSince) > notFoundGrace {
				return "", fmt.Errorf("build %s not found in namespace %s", run, ns)
			}
		case err != nil:
			return "", err
		case deleted && !buildevents.Done(pr.Status.GetCondition(apis.ConditionSucceeded)):
			return "", fmt.Errorf("build %s was deleted from namespace %s before it ended", run, ns)
		default:
			if secrets == nil {
				if secrets, err = c.buildSecrets(ctx, pr); err != nil {
					return "", err
				}
			}
			for _, o := range observers {
				if deleted {
					// A deleted build leaves nothing new behind it (retire counts on that).
					break
				}
				if err := o.Observe(ctx, pr, trs, secrets); err != nil {
					return "", err
				}
			}
			if buildevents.Done(pr.Status.GetCondition(apis.ConditionSucceeded)) && endedSince.IsZero() {
				endedSince = time.Now()
			}
			for name := range pods {
				seenPods[name] = true
			}
			if !endedSince.IsZero() && (!archiveChecked || (podsGone(trs, pods, seenPods) && !archiveRechecked)) {
				// An ended build's archive is whole, and its pods may be gone: replay it.
				archiveRechecked, archiveChecked = archiveChecked, true
				events, status, err := c.readArchive(ctx, run)
				if err == nil {
					return replay(events, status, &after, emit)
				}
				if !errors.Is(err, errNoArchive) {
					return "", err
				}
			}
			obs := buildevents.Observation{Run: pr, Steps: make(map[string]*buildevents.StepObservation, len(trs)),
				Settled: !endedSince.IsZero() && time.Since(endedSince) > notFoundGrace}
			for _, tr := range trs {
				name := tr.Labels[labelPipelineTask]
				pod := pods[tr.Status.PodName]
				so := &buildevents.StepObservation{TaskRun: tr, Pod: pod}
				f := followers[name]
				if f == nil && pod != nil && buildevents.Started(tr, pod) {
					f = &logFollower{wake: logWake}
					followers[name] = f
					go f.run(fctx, c.logs, ns, pod.Name, podPhase(w, ns, pod.Name))
				}
				if f != nil {
					so.Log, so.LogDone = f.snapshot()
				} else if pod == nil && buildevents.Started(tr, nil) {
					so.LogDone = logLost(tr.Status.PodName, seenPods, podMissingSince, time.Now())
				}
				obs.Steps[name] = so
			}
			events, ended := buildevents.Map(obs, &after)
			for _, e := range events {
				e.Event = buildevents.Redact(secrets, e.Event)
				if err := emit(e); err != nil {
					return "", err
				}
				if err := after.Advance(e.Key); err != nil {
					return "", err
				}
			}
			if ended {
				if final != nil {
					final(obs)
				}
				if s, ok := events[len(events)-1].Event.(event.Status); ok {
					return s.Status, nil
				}
				return lastStatus(obs), nil
			}
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-wake:
		case <-time.After(time.Second):
			// Time alone settles a run whose TaskRuns are gone (notFoundGrace); every change
			// wakes the loop.
		}
	}
}

// lastStatus is the final status of a build whose every event a consumer already had.
func lastStatus(o buildevents.Observation) event.BuildStatus {
	events, _ := buildevents.Map(o, nil)
	for i := len(events) - 1; i >= 0; i-- {
		if s, ok := events[i].Event.(event.Status); ok {
			return s.Status
		}
	}
	return ""
}

// podsGone says whether a TaskRun whose step ran has lost its pod: one seen before and
// gone from the watch's cache (deleted, as gc does once it archived the build). A pod not
// seen yet may only be late in the cache: the pods' watch and the TaskRuns' deliver
// their events apart.
func podsGone(trs []*v1.TaskRun, pods map[string]*corev1.Pod, seen map[string]bool) bool {
	for _, tr := range trs {
		if name := tr.Status.PodName; pods[name] == nil && seen[name] && buildevents.Started(tr, nil) {
			return true
		}
	}
	return false
}

// logLost says whether the log of a TaskRun whose step ran, and whose pod is not in the
// watch's cache, is gone with its pod: the pod was seen and then left the cache, or has
// been missing since longer than a new pod takes to reach it (notFoundGrace: a build
// whose pods were deleted before it was followed). A pod not seen yet may only be late
// in the cache, with its log to read. missingSince records when each pod was first
// found missing, at now.
func logLost(pod string, seen map[string]bool, missingSince map[string]time.Time, now time.Time) bool {
	if seen[pod] {
		return true
	}
	since, ok := missingSince[pod]
	if !ok {
		missingSince[pod] = now
		return false
	}
	return now.Sub(since) > notFoundGrace
}

// podPhase reads a pod's step container from the watch's cache.
func podPhase(w *watcher, namespace, name string) func() containerPhase {
	return func() containerPhase {
		pod, err := w.pods.Pods(namespace).Get(name)
		if err != nil {
			return containerGone
		}
		for _, s := range pod.Status.ContainerStatuses {
			if s.Name == runspec.StepContainer && s.State.Terminated != nil {
				return containerEnded
			}
		}
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			return containerEnded
		}
		return containerRunning
	}
}
