package tektonrun

import (
	"context"
	"io"
	"sync"
	"time"

	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/tektonrun/buildevents"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// LogSource opens a container's log through the API, each line prefixed with its RFC 3339
// timestamp (kubectl logs --timestamps). With follow, the stream stays open while the
// container runs; since, when set, asks for the lines from that second on.
type LogSource interface {
	Open(ctx context.Context, namespace, pod, container string, follow bool, since *metav1.Time) (io.ReadCloser, error)
}

// kubeLogs reads logs through the apiserver (pods/log).
type kubeLogs struct{ kube kubernetes.Interface }

var _ LogSource = kubeLogs{}

func (k kubeLogs) Open(ctx context.Context, namespace, pod, container string, follow bool, since *metav1.Time) (io.ReadCloser, error) {
	return k.kube.CoreV1().Pods(namespace).GetLogs(pod, &corev1.PodLogOptions{
		Container:  container,
		Follow:     follow,
		Timestamps: true,
		SinceTime:  since,
	}).Stream(ctx)
}

// containerPhase is what a follower needs to know of its container between two reads.
type containerPhase int

const (
	containerRunning containerPhase = iota
	containerEnded
	containerGone
)

// logFollower reads one container's log to its end (buildevents.LogReader), keeping
// its lines for the build's follower and waking it at each.
type logFollower struct {
	mu    sync.Mutex
	lines []buildevents.LogLine
	done  bool

	reader buildevents.LogReader
	wake   func()
}

// retryDelay is how long a log follower waits before it reconnects after an error.
var retryDelay = time.Second

// logEndedDelay is how long a follower waits for the kubelet to report the end of a
// container whose log stream ended.
var logEndedDelay = 200 * time.Millisecond

// maxLogFailures is how many times in a row an ended container's log may fail to open
// before the follower gives up on the rest of it (the node is gone, say).
const maxLogFailures = 30

func (f *logFollower) snapshot() ([]buildevents.LogLine, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lines, f.done
}

func (f *logFollower) finish() {
	f.mu.Lock()
	f.done = true
	f.mu.Unlock()
	f.wake()
}

func (f *logFollower) run(ctx context.Context, src LogSource, namespace, pod string, phase func() containerPhase) {
	failures := 0
	for ctx.Err() == nil {
		p := phase()
		if p == containerGone {
			f.finish()
			return
		}
		var since *metav1.Time
		if t := f.reader.Since(); !t.IsZero() {
			since = &metav1.Time{Time: t}
		}
		rc, err := src.Open(ctx, namespace, pod, runspec.StepContainer, p == containerRunning, since)
		if err == nil {
			err = f.reader.Read(rc, p == containerEnded, f.keep)
			rc.Close()
		}
		if ctx.Err() != nil {
			return
		}
		if err == nil && p == containerEnded {
			f.finish()
			return
		}
		if err == nil {
			// The log ended before the kubelet said the container did: look again soon,
			// not at once (that would be a loop of requests).
			select {
			case <-ctx.Done():
				return
			case <-time.After(logEndedDelay):
			}
			continue
		}
		failures++
		if p == containerEnded && failures >= maxLogFailures {
			f.finish()
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(retryDelay):
		}
	}
}

func (f *logFollower) keep(l buildevents.LogLine) {
	f.mu.Lock()
	f.lines = append(f.lines, l)
	f.mu.Unlock()
	f.wake()
}
