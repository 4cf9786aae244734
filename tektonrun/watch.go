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
	tektoninformers "github.com/tektoncd/pipeline/pkg/client/informers/externalversions"
	tektonlisters "github.com/tektoncd/pipeline/pkg/client/listers/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeinformers "k8s.io/client-go/informers"
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
	tweak := func(o *metav1.ListOptions) { o.LabelSelector = buildSelector }
	tf := tektoninformers.NewSharedInformerFactoryWithOptions(t.Tekton, 0, tektoninformers.WithNamespace(t.Namespace), tektoninformers.WithTweakListOptions(tweak))
	kf := kubeinformers.NewSharedInformerFactoryWithOptions(t.Kube, 0, kubeinformers.WithNamespace(t.Namespace), kubeinformers.WithTweakListOptions(tweak))
	runs := tf.Tekton().V1().PipelineRuns()
	taskRuns := tf.Tekton().V1().TaskRuns()
	pods := kf.Core().V1().Pods()
	// A build's TaskRuns and pods by an index on its name: looking a build up must not
	// cost a scan of every build the caches hold.
	byRun := cache.Indexers{indexPipelineRun: func(obj any) ([]string, error) {
		if o, ok := obj.(metav1.Object); ok && o.GetLabels()[labelPipelineRun] != "" {
			return []string{o.GetNamespace() + "/" + o.GetLabels()[labelPipelineRun]}, nil
		}
		return nil, nil
	}}
	for _, inf := range []cache.SharedIndexInformer{taskRuns.Informer(), pods.Informer()} {
		if err := inf.AddIndexers(byRun); err != nil {
			return nil, err
		}
	}
	w.runs, w.pods = runs.Lister(), pods.Lister()
	w.taskRuns, w.podIndex = taskRuns.Informer().GetIndexer(), pods.Informer().GetIndexer()
	for _, inf := range []cache.SharedIndexInformer{runs.Informer(), taskRuns.Informer(), pods.Informer()} {
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    w.added,
			UpdateFunc: func(_, obj any) { w.changed(obj) },
			DeleteFunc: w.deleted,
		}); err != nil {
			return nil, err
		}
	}
	for _, inf := range []cache.SharedIndexInformer{runs.Informer(), taskRuns.Informer(), pods.Informer()} {
		if err := inf.SetWatchErrorHandlerWithContext(watchError); err != nil {
			return nil, err
		}
	}
	tf.Start(ctx.Done())
	kf.Start(ctx.Done())
	for typ, ok := range tf.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return nil, fmt.Errorf("watching %v in %s: the cache did not sync", typ, t.Name)
		}
	}
	for typ, ok := range kf.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return nil, fmt.Errorf("watching %v in %s: the cache did not sync", typ, t.Name)
		}
	}
	return w, nil
}

// watchError says in the log (klog's, client-go's own) when a watch resumed from a
// resource version that etcd has compacted away, or that a restarted API server's watch
// cache no longer holds (410 Gone): the informer lists again, and what changed meanwhile
// reaches the followers as the differences the list shows, deletions included. Other
// errors are logged as client-go logs them; it logs this one only at verbosity 4.
func watchError(ctx context.Context, r *cache.Reflector, err error) {
	if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
		klog.FromContext(ctx).Info("a watch's resource version is gone (410): listing again", "reflector", r.Name(), "type", r.TypeDescription(), "err", err.Error())
		return
	}
	cache.DefaultWatchErrorHandler(ctx, r, err)
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
