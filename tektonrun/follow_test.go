package tektonrun

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/concourse-tekton/concourse-tekton/concourse/event"
	"github.com/concourse-tekton/concourse-tekton/runner/redact"
	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/tektonrun/buildevents"
	"github.com/concourse-tekton/concourse-tekton/tektonrun/internal/recordedbuilds"
)

// following says whether a follower of the build is subscribed.
func (w *watcher) following(run string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.subs[run]) > 0
}

// followDeleted follows a recorded build loaded as still running, and once the follower
// is subscribed, writes the run as ended (unless running) and deletes the run, its
// TaskRuns and its pods at once, as retire does once the builds have ended.
func followDeleted(t *testing.T, dir string, running bool) (event.BuildStatus, []buildevents.Event, error) {
	t.Helper()
	c := newMemCluster("ci")
	run := c.loadRecorded(t, dir)
	ctx := context.Background()
	ended, err := c.tekton.TektonV1().PipelineRuns("ci").Get(ctx, run, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pr := ended.DeepCopy()
	pr.Status.Conditions = nil
	if err := c.put(pr); err != nil {
		t.Fatal(err)
	}
	cl := c.client()
	defer cl.Close()
	if err := c.watching(cl); err != nil {
		t.Fatal(err)
	}
	type result struct {
		status event.BuildStatus
		events []buildevents.Event
		err    error
	}
	done := make(chan result, 1)
	fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	go func() {
		var r result
		r.status, r.err = cl.Follow(fctx, run, buildevents.Cursor{}, func(e buildevents.Event) error {
			r.events = append(r.events, e)
			return nil
		})
		done <- r
	}()
	for !cl.watch.following(run) {
		time.Sleep(time.Millisecond)
	}
	if !running {
		if err := c.put(ended); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.remove(ended); err != nil {
		t.Fatal(err)
	}
	trs, _ := c.tekton.TektonV1().TaskRuns("ci").List(ctx, metav1.ListOptions{})
	for i := range trs.Items {
		if err := c.remove(&trs.Items[i]); err != nil {
			t.Fatal(err)
		}
	}
	pods, _ := c.kube.CoreV1().Pods("ci").List(ctx, metav1.ListOptions{})
	for i := range pods.Items {
		if err := c.remove(&pods.Items[i]); err != nil {
			t.Fatal(err)
		}
	}
	r := <-done
	return r.status, r.events, r.err
}

// TestFollowDeletedAsItEnds: a build deleted as soon as it ends (retire, gc) maps to its
// end from what was last seen of it, with the status following it live gives; one deleted
// while it ran is an error that says so, not a wait.
func TestFollowDeletedAsItEnds(t *testing.T) {
	// The pods go the moment the follower subscribed, perhaps before it saw them: it then
	// waits out the grace a pod late in the cache has (logLost). A shorter one here.
	defer func(g time.Duration) { notFoundGrace = g }(notFoundGrace)
	notFoundGrace = time.Second
	for _, dir := range recordedbuilds.Cases(t, recordedTestdata) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			live := newMemCluster("ci")
			cl := live.client()
			defer cl.Close()
			_, want := follow(t, cl, live.loadRecorded(t, dir), buildevents.Cursor{})

			status, got, err := followDeleted(t, dir, false)
			if err != nil || status != want {
				t.Fatalf("Follow of a build deleted as it ended = %q, %v; want %q", status, err, want)
			}
			if last, ok := got[len(got)-1].Event.(event.Status); !ok || last.Status != want {
				t.Errorf("the last event is %#v, want the status %q", got[len(got)-1].Event, want)
			}

			start := time.Now()
			status, _, err = followDeleted(t, dir, true)
			if err == nil || !strings.Contains(err.Error(), "was deleted from namespace ci before it ended") {
				t.Errorf("Follow of a build deleted while it ran = %q, %v", status, err)
			}
			if d := time.Since(start); d > notFoundGrace {
				t.Errorf("Follow of a build deleted while it ran took %v", d)
			}
		})
	}
}

// A TaskRun whose step ran has lost its pod only when the pod was seen and then left the
// cache: one not seen yet may be late in it, and looking for the build's archive again
// then is a request for nothing.
func TestPodsGone(t *testing.T) {
	tr := &v1.TaskRun{Status: v1.TaskRunStatus{TaskRunStatusFields: v1.TaskRunStatusFields{
		PodName: "p",
		Steps:   []v1.StepState{{Name: runspec.StepRun, ContainerState: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}},
	}}}
	notStarted := &v1.TaskRun{Status: v1.TaskRunStatus{TaskRunStatusFields: v1.TaskRunStatusFields{PodName: "q"}}}
	pod := &corev1.Pod{}
	for _, tc := range []struct {
		name string
		trs  []*v1.TaskRun
		pods map[string]*corev1.Pod
		seen map[string]bool
		want bool
	}{
		{"there", []*v1.TaskRun{tr}, map[string]*corev1.Pod{"p": pod}, map[string]bool{"p": true}, false},
		{"seen, then gone", []*v1.TaskRun{tr}, nil, map[string]bool{"p": true}, true},
		{"not seen yet", []*v1.TaskRun{tr}, nil, nil, false},
		{"its step not started", []*v1.TaskRun{notStarted}, nil, map[string]bool{"q": true}, false},
	} {
		if got := podsGone(tc.trs, tc.pods, tc.seen); got != tc.want {
			t.Errorf("%s: podsGone = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A step's log is lost with its pod once the pod was seen and then left the cache, or has
// been missing for longer than a new pod takes to reach it, counted from when it was
// first found missing (not from when the build was first followed: a pod of a long
// build's later step is late in the cache as a first step's is).
func TestLogLost(t *testing.T) {
	start := time.Now()
	seen := map[string]bool{"gone": true}
	missing := map[string]time.Time{}
	for _, tc := range []struct {
		name string
		pod  string
		at   time.Duration
		want bool
	}{
		{"seen, then gone", "gone", 0, true},
		{"first found missing", "late", 0, false},
		{"still late in the cache", "late", notFoundGrace / 2, false},
		{"another found missing later in the build", "later", notFoundGrace, false},
		{"missing for longer than a pod takes", "late", notFoundGrace + time.Second, true},
		{"the later one, not yet", "later", notFoundGrace + time.Second, false},
	} {
		if got := logLost(tc.pod, seen, missing, start.Add(tc.at)); got != tc.want {
			t.Errorf("%s: logLost = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// observed records what a follower hands it, and fails with err.
type observed struct {
	name  string
	calls *[]string
	err   error
}

func (o observed) Observe(_ context.Context, pr *v1.PipelineRun, trs []*v1.TaskRun, secrets *redact.Secrets) error {
	if secrets == nil {
		return errors.New("no secrets to add to")
	}
	*o.calls = append(*o.calls, fmt.Sprintf("%s %s %d", o.name, pr.Name, len(trs)))
	return o.err
}

// The follower hands what it sees of the build to its observers, in their order, before it
// maps it; an observer's error stops it.
func TestFollowObservers(t *testing.T) {
	dir := recordedbuilds.Cases(t, recordedTestdata)[0]
	c := newMemCluster("ci")
	run := c.loadRecorded(t, dir)
	cl := c.client()
	defer cl.Close()
	trs, err := c.tekton.TektonV1().TaskRuns("ci").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var calls []string
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	emitted := 0
	if _, err := cl.Follow(ctx, run, buildevents.Cursor{}, func(buildevents.Event) error {
		if len(calls) == 0 {
			t.Error("an event emitted before the observers saw the build")
		}
		emitted++
		return nil
	}, observed{"a", &calls, nil}, observed{"b", &calls, nil}); err != nil {
		t.Fatal(err)
	}
	seen := fmt.Sprintf("%s %d", run, len(trs.Items))
	if len(calls) < 2 || calls[0] != "a "+seen || calls[1] != "b "+seen || emitted == 0 {
		t.Errorf("observers called %q, %d events", calls, emitted)
	}

	calls = nil
	stop := errors.New("no Secret for you")
	if _, err := cl.Follow(ctx, run, buildevents.Cursor{}, func(buildevents.Event) error { return nil },
		observed{"a", &calls, stop}, observed{"b", &calls, nil}); !errors.Is(err, stop) {
		t.Errorf("Follow with a failing observer = %v", err)
	}
	if diff := cmp.Diff([]string{"a " + seen}, calls); diff != "" {
		t.Errorf("observers called (-want +got):\n%s", diff)
	}
}
