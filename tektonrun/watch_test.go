package tektonrun

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	k8stesting "k8s.io/client-go/testing"

	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// TestWatchGone: a watch that resumes from a resource version the API server no longer
// has (410 Gone: etcd compacted it away, or a restarted API server's watch cache does not
// hold it) lists again. A pod deleted while the watch was away leaves the cache, one
// created meanwhile joins it, and the log says why the list was made.
func TestWatchGone(t *testing.T) {
	var mu sync.Mutex
	var logged []string
	logger := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		logged = append(logged, args)
	}, funcr.Options{})

	c := newMemCluster("ci")
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ci", Labels: map[string]string{runspec.LabelBuild: "b", labelPipelineRun: "run-1"}}}
	}
	if err := c.put(pod("before")); err != nil {
		t.Fatal(err)
	}
	// The pods' next watch waits until the test has changed what it would have seen,
	// then is refused as a real API server refuses a resource version it has no more.
	var gone atomic.Bool
	proceed := make(chan struct{})
	c.kube.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) {
		if !gone.CompareAndSwap(true, false) {
			return false, nil, nil
		}
		<-proceed
		return true, nil, apierrors.NewResourceExpired("too old resource version: 5 (9)")
	})
	cl := c.client()
	cl.watchLog = logger
	defer cl.Close()
	if err := c.watching(cl); err != nil {
		t.Fatal(err)
	}
	w, err := cl.watcher()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.pods.Pods("ci").Get("before"); err != nil {
		t.Fatalf("the pod made before the watch: %v", err)
	}
	gone.Store(true)
	c.mu.Lock()
	for _, mw := range c.open {
		if mw.resource == "pods" {
			mw.Stop()
		}
	}
	c.mu.Unlock()
	if err := c.remove(pod("before")); err != nil {
		t.Fatal(err)
	}
	if err := c.put(pod("meanwhile")); err != nil {
		t.Fatal(err)
	}
	close(proceed)

	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		_, errBefore := w.pods.Pods("ci").Get("before")
		_, errMeanwhile := w.pods.Pods("ci").Get("meanwhile")
		if apierrors.IsNotFound(errBefore) && errMeanwhile == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the 410: the pod deleted meanwhile: %v; the pod created meanwhile: %v", errBefore, errMeanwhile)
		}
	}
	if n := c.reads()["list pods"]; n != 2 {
		t.Errorf("pods listed %d times, want twice (once more after the 410)", n)
	}
	mu.Lock()
	defer mu.Unlock()
	said := false
	for _, l := range logged {
		said = said || strings.Contains(l, `"msg"="a watch's resource version is gone (410): listing again"`) && strings.Contains(l, "too old resource version: 5 (9)")
	}
	if !said {
		t.Errorf("the log did not say why the pods were listed again: %q", logged)
	}
}
