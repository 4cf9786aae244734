package tektonrun

import (
	"context"
	"fmt"
	"io"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/tektonrun/buildevents"
	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	tektonfake "github.com/tektoncd/pipeline/pkg/client/clientset/versioned/fake"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// memCluster is one namespace of a fake API server for following builds: the fake
// clientsets, whose watches feed informers, and a LogSource that serves logs from memory.
// It counts the requests a Client makes.
//
// The test plays the controllers: its writes go to the fakes' stores directly (put,
// remove), so they are neither counted as the client's requests nor recorded by the
// fakes, and the watches see them as they would a real API server's. Both fakes are the
// simple ones: the field management of kube's NewClientset costs more per write than all
// the client under test does with it.
type memCluster struct {
	namespace string
	kube      *kubefake.Clientset
	tekton    *tektonfake.Clientset
	logs      *memLogs

	mu       sync.Mutex
	requests map[string]int // "<verb> <resource>"
	watches  atomic.Int64
	open     []*memWatch

	writing sync.Mutex
}

func newMemCluster(namespace string) *memCluster {
	c := &memCluster{
		namespace: namespace,
		kube:      kubefake.NewSimpleClientset(),
		tekton:    tektonfake.NewSimpleClientset(),
		logs:      &memLogs{logs: map[string]*memLog{}},
		requests:  map[string]int{},
	}
	c.instrument(&c.kube.Fake, c.kube.Tracker())
	c.instrument(&c.tekton.Fake, c.tekton.Tracker())
	return c
}

// instrument counts a fake's requests, and keeps its watches, for put to wait for.
func (c *memCluster) instrument(f *k8stesting.Fake, tracker k8stesting.ObjectTracker) {
	f.PrependReactor("*", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		c.mu.Lock()
		c.requests[a.GetVerb()+" "+a.GetResource().Resource]++
		c.mu.Unlock()
		return false, nil, nil
	})
	f.PrependWatchReactor("*", func(a k8stesting.Action) (bool, watch.Interface, error) {
		var opts metav1.ListOptions
		if w, ok := a.(k8stesting.WatchActionImpl); ok {
			opts = w.ListOptions
		}
		w, err := tracker.Watch(a.GetResource(), a.GetNamespace(), opts)
		if err != nil {
			return true, nil, err
		}
		mw := &memWatch{Interface: w, resource: a.GetResource().Resource}
		c.mu.Lock()
		c.requests["watch "+a.GetResource().Resource]++
		c.open = append(c.open, mw)
		c.mu.Unlock()
		// Counted once the watch is registered: events written after it are not lost.
		c.watches.Add(1)
		return true, mw, nil
	})
}

// client is a Client of the namespace whose logs are the memCluster's.
func (c *memCluster) client() *Client {
	cl := NewClient(NewTargetFromClients(c.namespace, c.kube, c.tekton))
	cl.logs = c.logs
	return cl
}

// watching starts the client's watches and waits until each kind's watch is registered.
func (c *memCluster) watching(cl *Client) error {
	if _, err := cl.watcher(); err != nil {
		return err
	}
	for deadline := time.Now().Add(10 * time.Second); c.watches.Load() < 3; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of 3 watches started", c.watches.Load())
		}
	}
	return nil
}

// reads counts the client's requests by "<verb> <resource>": the fakes got no others.
func (c *memCluster) reads() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.requests)
}

func (c *memCluster) store(obj runtime.Object) (k8stesting.ObjectTracker, schema.GroupVersionResource) {
	switch obj.(type) {
	case *v1.PipelineRun:
		return c.tekton.Tracker(), v1.SchemeGroupVersion.WithResource("pipelineruns")
	case *v1.TaskRun:
		return c.tekton.Tracker(), v1.SchemeGroupVersion.WithResource("taskruns")
	case *corev1.Pod:
		return c.kube.Tracker(), corev1.SchemeGroupVersion.WithResource("pods")
	}
	panic(fmt.Sprintf("memCluster: no store for %T", obj))
}

// put creates or replaces an object, as a controller's write would.
func (c *memCluster) put(obj runtime.Object) error {
	tracker, gvr := c.store(obj)
	c.writing.Lock()
	defer c.writing.Unlock()
	c.mu.Lock()
	watches := c.open
	c.mu.Unlock()
	for _, w := range watches {
		for !w.stopped.Load() && len(w.ResultChan()) > 90 {
			time.Sleep(10 * time.Microsecond)
		}
	}
	err := tracker.Update(gvr, obj, c.namespace)
	if apierrors.IsNotFound(err) {
		err = tracker.Create(gvr, obj, c.namespace)
	}
	return err
}

func (c *memCluster) remove(obj runtime.Object) error {
	tracker, gvr := c.store(obj)
	return tracker.Delete(gvr, c.namespace, obj.(metav1.Object).GetName())
}

// memWatch is a watch of a fake. Its channel holds 100 events and the fake panics when a
// write finds it full, so put waits while it is nearly full: a real API server does not
// wait for a slow watcher, but it buffers far more for it.
type memWatch struct {
	watch.Interface
	resource string
	stopped  atomic.Bool
}

func (w *memWatch) Stop() {
	w.stopped.Store(true)
	w.Interface.Stop()
}

// memLogs serves step containers' logs from memory the way the API serves them: each line
// with its timestamp, from since on; a follow stream of a container that has not ended
// stays open until it ends. A log is all there from the start (the step wrote it).
type memLogs struct {
	mu    sync.Mutex
	logs  map[string]*memLog // by pod
	opens atomic.Int64
}

var _ LogSource = (*memLogs)(nil)

type memLog struct {
	lines []string // as served, with timestamps and newlines
	times []time.Time
	ended chan struct{}
	// drained receives when a stream opened without follow is closed: the follower read
	// the log to its end after the container ended.
	drained chan struct{}
}

// add serves a pod's log: data is as the API sends it (kubectl logs --timestamps).
func (l *memLogs) add(pod string, data []byte) *memLog {
	m := &memLog{ended: make(chan struct{}), drained: make(chan struct{}, 1)}
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if line == "" {
			continue
		}
		ts := buildevents.ParseLogLine(line).Time
		m.lines = append(m.lines, line)
		m.times = append(m.times, ts)
	}
	l.mu.Lock()
	l.logs[pod] = m
	l.mu.Unlock()
	return m
}

func (l *memLogs) get(pod string) *memLog {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.logs[pod]
}

// end ends a pod's container: its follow streams reach their end.
func (l *memLogs) end(pod string) {
	if m := l.get(pod); m != nil {
		close(m.ended)
	}
}

func (l *memLogs) Open(ctx context.Context, namespace, pod, container string, follow bool, since *metav1.Time) (io.ReadCloser, error) {
	l.opens.Add(1)
	m := l.get(pod)
	if m == nil || container != runspec.StepContainer {
		return nil, apierrors.NewNotFound(corev1.Resource("pods/log"), pod)
	}
	var b strings.Builder
	for i, line := range m.lines {
		if since == nil || !m.times[i].Before(since.Time) {
			b.WriteString(line)
		}
	}
	var r io.Reader = strings.NewReader(b.String())
	if follow {
		r = io.MultiReader(r, untilEnd{ctx: ctx, ended: m.ended})
	}
	return &memStream{Reader: r, log: m, follow: follow}, nil
}

// untilEnd is the open end of a follow stream: it ends with the container.
type untilEnd struct {
	ctx   context.Context
	ended <-chan struct{}
}

func (u untilEnd) Read([]byte) (int, error) {
	select {
	case <-u.ended:
		return 0, io.EOF
	case <-u.ctx.Done():
		return 0, u.ctx.Err()
	}
}

type memStream struct {
	io.Reader
	log    *memLog
	follow bool
}

func (s *memStream) Close() error {
	if !s.follow {
		select {
		case s.log.drained <- struct{}{}:
		default:
		}
	}
	return nil
}
