package tektonrun

import (
	"bufio"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/concourse-tekton/concourse-tekton/runspec"
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

// logFollower reads one container's log to its end. A stream that breaks (a dropped
// connection, an apiserver restart) is opened again from the second of the last line
// kept, and the lines already kept are skipped by their timestamps: no line is lost or
// kept twice, so the n-th line is the same line in every process.
type logFollower struct {
	mu    sync.Mutex
	lines []LogLine
	done  bool

	// last is the timestamp of the last line kept, and atLast how many kept lines have it.
	last   time.Time
	atLast int
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

func (f *logFollower) snapshot() ([]LogLine, bool) {
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
		if !f.last.IsZero() {
			t := metav1.NewTime(f.last.Truncate(time.Second))
			since = &t
		}
		rc, err := src.Open(ctx, namespace, pod, runspec.StepContainer, p == containerRunning, since)
		if err == nil {
			err = f.read(rc, p == containerEnded)
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

// read keeps the stream's lines that are not kept yet. A last line without its newline is
// kept only when the stream is of an ended container and reached its end: any other
// stream may have been cut in the middle of the line (an apiserver restart, a dropped
// connection, a follow stream closed as the container ended), and the next stream,
// opened from that line's second, brings it whole.
func (f *logFollower) read(rc io.Reader, ended bool) error {
	r := bufio.NewReaderSize(rc, 64<<10)
	skipAtLast := f.atLast
	for {
		line, err := r.ReadString('\n')
		if line != "" && !strings.HasSuffix(line, "\n") && !(ended && errors.Is(err, io.EOF)) {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if line != "" {
			ts, text := splitTimestamp(line)
			switch {
			case !f.last.IsZero() && ts.Before(f.last):
			case !f.last.IsZero() && ts.Equal(f.last) && skipAtLast > 0:
				skipAtLast--
			default:
				f.keep(ts, text)
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func (f *logFollower) keep(ts time.Time, text string) {
	f.mu.Lock()
	f.lines = append(f.lines, LogLine{Time: ts, Text: text})
	f.mu.Unlock()
	if ts.Equal(f.last) {
		f.atLast++
	} else if ts.After(f.last) {
		f.last, f.atLast = ts, 1
	}
	f.wake()
}

// splitTimestamp cuts the API's timestamp off a log line.
func splitTimestamp(line string) (time.Time, string) {
	stamp, text, ok := strings.Cut(line, " ")
	if !ok {
		// A line that is only a timestamp is an empty line without its newline.
		if ts, err := time.Parse(time.RFC3339Nano, strings.TrimSuffix(line, "\n")); err == nil {
			return ts, ""
		}
		return time.Time{}, line
	}
	ts, err := time.Parse(time.RFC3339Nano, stamp)
	if err != nil {
		return time.Time{}, line
	}
	return ts, text
}
