package tektonrun

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/tektoncd/pipeline/pkg/apis/pipeline"
	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	tektonlisters "github.com/tektoncd/pipeline/pkg/client/listers/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// Labels Tekton puts on the TaskRuns and pods of a PipelineRun.
const (
	labelPipelineRun  = pipeline.PipelineRunLabelKey
	labelPipelineTask = pipeline.PipelineTaskLabelKey
)

// indexPipelineRun indexes TaskRuns and pods by "<namespace>/<PipelineRun>".
const indexPipelineRun = "pipelineRun"

// buildSelector selects the objects of builds: Tekton copies a PipelineRun's labels to its
// TaskRuns and pods (but sets its own managed-by on pods).
const buildSelector = runspec.LabelBuild

// watcher keeps one watch per kind (PipelineRuns, TaskRuns, pods) on the target's
// namespace, for any number of builds, and wakes the followers of a build when one of its
// objects changes. Informers relist after a dropped watch or an apiserver restart, so a
// follower that maps what the caches hold misses nothing.
type watcher struct {
	runs     tektonlisters.PipelineRunLister
	taskRuns cache.Indexer
	pods     corelisters.PodLister
	podIndex cache.Indexer

	mu   sync.Mutex
	subs map[string]map[chan struct{}]bool
	// gone holds the last state of the deleted PipelineRuns and TaskRuns of the builds
	// being followed, by build, until their last follower leaves: a build deleted as it
	// ends (by retire, gc or kubectl) still maps to its end.
	gone map[string]*goneBuild
}

// goneBuild is what was last seen of a deleted build's objects.
type goneBuild struct {
	run      *v1.PipelineRun
	taskRuns map[string]*v1.TaskRun
}

func newWatcher(ctx context.Context, t *Target) (*watcher, error) {
	w := &watcher{subs: map[string]map[chan struct{}]bool{}, gone: map[string]*goneBuild{}}
	ns := t.Namespace
	// A build's TaskRuns and pods by an index on its name: looking a build up must not
	// cost a scan of every build the caches hold. (Each informer its own map: an
	// informer's indexer keeps the map it is given and adds to it.)
	byPipelineRun := func(obj any) ([]string, error) {
		if o, ok := obj.(metav1.Object); ok && o.GetLabels()[labelPipelineRun] != "" {
			return []string{o.GetNamespace() + "/" + o.GetLabels()[labelPipelineRun]}, nil
		}
		return nil, nil
	}
	indexers := func(byRun bool) cache.Indexers {
		ix := cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
		if byRun {
			ix[indexPipelineRun] = byPipelineRun
		}
		return ix
	}
	runs := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(
		buildsListWatch("PipelineRuns", t.Tekton.TektonV1().PipelineRuns(ns).List, t.Tekton.TektonV1().PipelineRuns(ns).Watch), t.Tekton),
		&v1.PipelineRun{}, 0, indexers(false))
	taskRuns := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(
		buildsListWatch("TaskRuns", t.Tekton.TektonV1().TaskRuns(ns).List, t.Tekton.TektonV1().TaskRuns(ns).Watch), t.Tekton),
		&v1.TaskRun{}, 0, indexers(true))
	pods := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(
		buildsListWatch("pods", t.Kube.CoreV1().Pods(ns).List, t.Kube.CoreV1().Pods(ns).Watch), t.Kube),
		&corev1.Pod{}, 0, indexers(true))
	w.runs, w.pods = tektonlisters.NewPipelineRunLister(runs.GetIndexer()), corelisters.NewPodLister(pods.GetIndexer())
	w.taskRuns, w.podIndex = taskRuns.GetIndexer(), pods.GetIndexer()
	informers := []cache.SharedIndexInformer{runs, taskRuns, pods}
	for _, inf := range informers {
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    w.added,
			UpdateFunc: func(_, obj any) { w.changed(obj) },
			DeleteFunc: w.deleted,
		}); err != nil {
			return nil, err
		}
	}
	for _, inf := range informers {
		go inf.RunWithContext(ctx)
	}
	for i, inf := range informers {
		if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			return nil, fmt.Errorf("watching %s in %s: the cache did not sync", []string{"PipelineRuns", "TaskRuns", "pods"}[i], t.Name)
		}
	}
	return w, nil
}

// buildsListWatch lists and watches the builds' objects (buildSelector) of one kind,
// through its typed client's List and Watch. Its watches say in the log (klog's,
// client-go's own) when they are refused because the resource version they resume from
// is gone (410: etcd compacted it away, or a restarted API server's watch cache does not
// hold it). The informer then lists again, and what changed meanwhile reaches the
// followers as the differences the list shows, deletions included; client-go itself says
// so only at verbosity 4.
func buildsListWatch[L runtime.Object](kind string, list func(context.Context, metav1.ListOptions) (L, error), watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error)) *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = buildSelector
			return list(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = buildSelector
			logger := klog.FromContext(ctx)
			w, err := watchFn(ctx, o)
			if err != nil {
				logGone(logger, kind, o.ResourceVersion, err)
				return nil, err
			}
			g := &goneWatch{Interface: w, result: make(chan watch.Event), done: make(chan struct{})}
			go g.relay(logger, kind, o.ResourceVersion)
			return g, nil
		},
	}
}

// goneWatch relays a watch's events, saying a 410 among them in the log. Unlike
// watch.Filter, it drops what it holds once stopped rather than wait for a reader that
// has gone.
type goneWatch struct {
	watch.Interface
	result chan watch.Event
	done   chan struct{}
	stop   sync.Once
}

func (g *goneWatch) ResultChan() <-chan watch.Event { return g.result }

func (g *goneWatch) Stop() {
	g.stop.Do(func() { close(g.done) })
	g.Interface.Stop()
}

func (g *goneWatch) relay(logger klog.Logger, kind, resourceVersion string) {
	defer close(g.result)
	for e := range g.Interface.ResultChan() {
		if e.Type == watch.Error {
			logGone(logger, kind, resourceVersion, apierrors.FromObject(e.Object))
		}
		select {
		case g.result <- e:
		case <-g.done:
			return
		}
	}
}

// logGone says err in the log when it is a 410.
func logGone(logger klog.Logger, kind, resourceVersion string, err error) {
	if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
		logger.Info("a watch's resource version is gone (410): listing again", "kind", kind, "resourceVersion", resourceVersion, "err", err.Error())
	}
}

// changed wakes the followers of the build an object belongs to.
func (w *watcher) changed(obj any) {
	if name := buildOf(obj); name != "" {
		w.wake(name)
	}
}

// added is changed; a PipelineRun added under a deleted one's name is a new build, and
// what was kept of the old one goes.
func (w *watcher) added(obj any) {
	if pr, ok := obj.(*v1.PipelineRun); ok {
		w.mu.Lock()
		delete(w.gone, pr.Name)
		w.mu.Unlock()
	}
	w.changed(obj)
}

// deleted is changed; it keeps the last state of a followed build's PipelineRun or
// TaskRun.
func (w *watcher) deleted(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	name := buildOf(obj)
	if name == "" {
		return
	}
	w.mu.Lock()
	if len(w.subs[name]) > 0 {
		g := w.gone[name]
		if g == nil {
			g = &goneBuild{taskRuns: map[string]*v1.TaskRun{}}
			w.gone[name] = g
		}
		switch o := obj.(type) {
		case *v1.PipelineRun:
			g.run = o
		case *v1.TaskRun:
			g.taskRuns[o.Name] = o
		}
	}
	w.mu.Unlock()
	w.wake(name)
}

// buildOf is the name of the build (PipelineRun) an object of the caches belongs to.
func buildOf(obj any) string {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	switch o := obj.(type) {
	case *v1.PipelineRun:
		return o.Name
	case *v1.TaskRun:
		return o.Labels[labelPipelineRun]
	case *corev1.Pod:
		return o.Labels[labelPipelineRun]
	}
	return ""
}

func (w *watcher) wake(run string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for ch := range w.subs[run] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// subscribe returns a channel that receives (coalesced) when the build's objects change,
// and a function that ends the subscription.
func (w *watcher) subscribe(run string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	w.mu.Lock()
	if w.subs[run] == nil {
		w.subs[run] = map[chan struct{}]bool{}
	}
	w.subs[run][ch] = true
	w.mu.Unlock()
	return ch, func() {
		w.mu.Lock()
		delete(w.subs[run], ch)
		if len(w.subs[run]) == 0 {
			delete(w.subs, run)
			delete(w.gone, run)
		}
		w.mu.Unlock()
	}
}

// observe fetches a build's objects from the caches. A followed build that was deleted is
// what was last seen of it, with deleted set; its pods are gone.
func (w *watcher) observe(namespace, run string) (pr *v1.PipelineRun, trs []*v1.TaskRun, pods map[string]*corev1.Pod, deleted bool, err error) {
	pr, err = w.runs.PipelineRuns(namespace).Get(run)
	var gone map[string]*v1.TaskRun
	if apierrors.IsNotFound(err) {
		w.mu.Lock()
		if g := w.gone[run]; g != nil && g.run != nil {
			pr, gone, deleted, err = g.run, maps.Clone(g.taskRuns), true, nil
		}
		w.mu.Unlock()
	}
	if err != nil {
		return nil, nil, nil, false, err
	}
	key := namespace + "/" + run
	objs, err := w.taskRuns.ByIndex(indexPipelineRun, key)
	if err != nil {
		return nil, nil, nil, false, err
	}
	trs = make([]*v1.TaskRun, 0, len(objs)+len(gone))
	for _, o := range objs {
		tr := o.(*v1.TaskRun)
		delete(gone, tr.Name)
		trs = append(trs, tr)
	}
	for _, name := range slices.Sorted(maps.Keys(gone)) {
		trs = append(trs, gone[name])
	}
	objs, err = w.podIndex.ByIndex(indexPipelineRun, key)
	if err != nil {
		return nil, nil, nil, false, err
	}
	pods = make(map[string]*corev1.Pod, len(objs))
	for _, o := range objs {
		p := o.(*corev1.Pod)
		pods[p.Name] = p
	}
	return pr, trs, pods, deleted, nil
}
