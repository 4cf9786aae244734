package gc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/tektoncd/pipeline/pkg/apis/pipeline"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/concourse-tekton/concourse-tekton/internal/pages"
	"github.com/concourse-tekton/concourse-tekton/internal/transient"
	"github.com/concourse-tekton/concourse-tekton/pvc"
	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/tektonrun"
)

// retryDelays are the waits before a call that failed transiently is made again.
var retryDelays = transient.Delays

// Options say how Sweep sweeps.
type Options struct {
	Rules
	// DryRun decides and reports, and changes nothing.
	DryRun bool
	// ImageRegistry is the target's image registry (HOST[:PORT][/PATH], as the builds'
	// --image-registry): the images its builds pushed there go with them. Empty: none.
	// Credentials come from the Docker config ($DOCKER_CONFIG), as docker reads them.
	ImageRegistry string
	// PageSize is how many objects a list request asks for (0: 500).
	PageSize int64
	// ArchiveTimeout bounds the archiving of one build's events (0: 2 minutes).
	ArchiveTimeout time.Duration
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// Report is what Sweep did, or with DryRun would do.
type Report struct {
	Target string `json:"target"`
	DryRun bool   `json:"dryRun"`
	// Deleted are the objects deleted (with DryRun: to delete), in Plan's order. A
	// PipelineRun's TaskRuns, pods, volume, Secrets and archive go with it.
	Deleted []Item `json:"deleted"`
	// Kept are the objects decided on and kept, with why.
	Kept []Item `json:"kept"`
	// Failed are the deletions that failed, and why; their objects stay.
	Failed []Failure `json:"failed,omitempty"`
}

// Failure is an object that could not be deleted (or its build archived).
type Failure struct {
	Item
	Error string `json:"error"`
}

// Sweep deletes from the target's namespace what Plan decides may go: it lists the
// builds' objects by label, in pages, decides, archives the events of the builds whose
// pods go, and deletes each object under a precondition on its UID, so that one made
// again under its name meanwhile stays. The API load is one list per kind and page, a
// get or two per archived build, and a delete per object, within the target client's
// rate limit. A list, release or deletion that fails with a transient error
// (transient.Is) is tried again for about 15 s: a moment of an overloaded or restarting
// API server costs no sweep. Safe to run at any time, from any number of processes: what
// it deletes is what no build needs, by the state it listed.
func Sweep(ctx context.Context, t *tektonrun.Target, o Options) (Report, error) {
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	if o.PageSize == 0 {
		o.PageSize = 500
	}
	if o.ArchiveTimeout == 0 {
		o.ArchiveTimeout = 2 * time.Minute
	}
	report := Report{Target: t.Name, DryRun: o.DryRun, Deleted: []Item{}, Kept: []Item{}}
	var registry, caches *imageRepository
	var objs Objects
	if o.ImageRegistry != "" {
		// The store's tags before its indexes, for the same reason.
		r, err := newImageRepository(ctx, o.ImageRegistry, t.Namespace+"/"+runspec.ResourceCacheRepository)
		if err != nil {
			return report, err
		}
		caches = r
		tags, err := r.tags(ctx)
		if err != nil {
			return report, err
		}
		objs.CacheTags, objs.CacheRepository = make(map[string]CacheTag, len(tags)), r.repo.String()
		for tag, digest := range tags {
			objs.CacheTags[tag] = CacheTag{Digest: digest}
		}
	}
	if err := listIndexes(ctx, t, o.PageSize, &objs); err != nil {
		return report, err
	}
	if caches != nil {
		// When the tags no entry names were pushed: within the grace period, their
		// entries may be on their way.
		named := indexedTags(objs.CacheIndexes)
		for tag, ct := range objs.CacheTags {
			if named[tag] == ct.Digest {
				continue
			}
			pushed, err := caches.pushed(ctx, ct.Digest)
			if err != nil {
				return report, err
			}
			ct.Pushed = pushed
			objs.CacheTags[tag] = ct
		}
	}
	if o.ImageRegistry != "" {
		// Tags first: a tag listed before the TaskRuns whose TaskRun is not among them
		// is one whose TaskRun has gone, not one that is yet to come.
		r, err := newImageRepository(ctx, o.ImageRegistry, t.Namespace)
		if err != nil {
			return report, err
		}
		registry = r
		if objs.Images, err = r.tags(ctx); err != nil {
			return report, err
		}
		objs.Repository = r.repo.String()
	}
	if err := list(ctx, t, o.PageSize, registry != nil, &objs); err != nil {
		return report, err
	}
	d := Plan(objs, o.Rules, now())
	report.Kept = append(report.Kept, d.Keep...)
	if o.DryRun {
		report.Deleted = append(report.Deleted, d.Delete...)
		report.Kept = append(report.Kept, d.Release...)
		sortItems(report.Kept)
		return report, nil
	}

	// A call that fails transiently is tried again (retryDelays), until one has been tried
	// again for as long as they allow: the API server is then away, and each call left is
	// made once, rather than waited on again and again.
	delays := retryDelays
	try := func(call func() error) error {
		err := transient.Retry(ctx, delays, call)
		if transient.Is(err) {
			delays = nil
		}
		return err
	}
	blocked := map[string]error{} // runs that stay: their volume could not be released
	for _, item := range d.Release {
		if err := try(func() error { return release(ctx, t, item, now()) }); err != nil {
			blocked[item.Run] = fmt.Errorf("releasing its volume %s first: %w", item.Name, err)
			continue
		}
		report.Kept = append(report.Kept, item)
	}

	archived := map[string]error{}
	client := tektonrun.NewClient(t)
	defer client.Close()
	for _, run := range d.Archive {
		actx, cancel := context.WithTimeout(ctx, o.ArchiveTimeout)
		_, err := client.Archive(actx, run)
		cancel()
		if err != nil {
			archived[run] = fmt.Errorf("archiving its build's events first: %w", err)
		}
		if ctx.Err() != nil {
			return report, ctx.Err()
		}
	}
	deletedDigests := map[string]bool{}
	deleteItem := func(item Item) error {
		switch item.Kind {
		case KindPipelineRun:
			return t.Tekton.TektonV1().PipelineRuns(t.Namespace).Delete(ctx, item.Name, deleteOptions(item.UID, metav1.DeletePropagationBackground))
		case KindPod:
			return t.Kube.CoreV1().Pods(t.Namespace).Delete(ctx, item.Name, deleteOptions(item.UID, ""))
		case KindVolume:
			return t.Kube.CoreV1().PersistentVolumeClaims(t.Namespace).Delete(ctx, item.Name, deleteOptions(item.UID, ""))
		case KindSecret:
			return t.Kube.CoreV1().Secrets(t.Namespace).Delete(ctx, item.Name, deleteOptions(item.UID, ""))
		case KindImage:
			if deletedDigests[item.Digest] {
				return nil
			}
			err := registry.delete(ctx, item.Digest)
			deletedDigests[item.Digest] = err == nil
			return err
		case KindCacheEntry:
			return removeIndexEntry(ctx, t, item, o.ResourceCacheTTL, now())
		case KindCacheImage:
			return caches.delete(ctx, item.Digest)
		}
		return nil
	}
	for _, item := range d.Delete {
		// A run whose volume could not be released, or a pod whose build's events could not
		// be archived, stays. An object whose deletion fails transiently is tried again.
		var err error
		switch item.Kind {
		case KindPipelineRun:
			err = blocked[item.Name]
		case KindPod:
			err = archived[item.Run]
		}
		if err == nil {
			err = try(func() error { return deleteItem(item) })
		}
		switch {
		case err == nil, apierrors.IsNotFound(err):
			report.Deleted = append(report.Deleted, item)
		case apierrors.IsConflict(err):
			// Made again under its name since it was listed: not what was decided on.
			item.Reason = ReasonRemade
			report.Kept = append(report.Kept, item)
		default:
			report.Failed = append(report.Failed, Failure{Item: item, Error: err.Error()})
		}
		if ctx.Err() != nil {
			return report, ctx.Err()
		}
	}
	sortItems(report.Kept)
	return report, nil
}

// release takes a build volume from its build, so that it stays when the build goes
// (pvc.AnnotationReleased).
func release(ctx context.Context, t *tektonrun.Target, item Item, now time.Time) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"uid":             item.UID, // a precondition: not another volume of its name
		"ownerReferences": nil,
		"annotations":     map[string]string{pvc.AnnotationReleased: now.UTC().Format(time.RFC3339)},
	}})
	if err != nil {
		return err
	}
	_, err = t.Kube.CoreV1().PersistentVolumeClaims(t.Namespace).Patch(ctx, item.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

func deleteOptions(uid types.UID, propagation metav1.DeletionPropagation) metav1.DeleteOptions {
	o := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}
	if propagation != "" {
		o.PropagationPolicy = &propagation
	}
	return o
}

// list lists the builds' objects of the target's namespace into objs, in pages.
func list(ctx context.Context, t *tektonrun.Target, pageSize int64, taskRunNames bool, objs *Objects) error {
	ns := t.Namespace
	selector := func(reqs ...string) string { return strings.Join(reqs, ",") }
	ours := runspec.LabelManagedBy + "=" + runspec.ManagedBy
	build := mustExist(runspec.LabelBuild)

	err := pages.Each(ctx, metav1.ListOptions{Limit: pageSize}, "PipelineRuns", func(opts metav1.ListOptions) (string, error) {
		opts.LabelSelector = selector(ours, build)
		l, err := t.Tekton.TektonV1().PipelineRuns(ns).List(ctx, opts)
		if err != nil {
			return "", err
		}
		objs.Runs = append(objs.Runs, l.Items...)
		return l.Continue, nil
	})
	if err != nil {
		return err
	}
	if taskRunNames {
		objs.TaskRuns = map[string]string{}
	}
	// Every TaskRun of the builds for the images' tags; else the verdict tasks', and the
	// last steps' that hold the verdict.
	taskRunSelectors := []string{build}
	if !taskRunNames {
		taskRunSelectors = []string{selector(build, pipeline.PipelineTaskLabelKey+"="+runspec.VerdictTask), selector(build, runspec.LabelVerdict+"="+runspec.VerdictFused)}
	}
	for _, sel := range taskRunSelectors {
		err = pages.Each(ctx, metav1.ListOptions{Limit: pageSize}, "TaskRuns", func(opts metav1.ListOptions) (string, error) {
			opts.LabelSelector = sel
			l, err := t.Tekton.TektonV1().TaskRuns(ns).List(ctx, opts)
			if err != nil {
				return "", err
			}
			for i := range l.Items {
				tr := &l.Items[i]
				if objs.TaskRuns != nil {
					objs.TaskRuns[tr.Name] = tr.Labels[pipeline.PipelineRunLabelKey]
				}
				if tr.Labels[pipeline.PipelineTaskLabelKey] == runspec.VerdictTask || tr.Labels[runspec.LabelVerdict] == runspec.VerdictFused {
					objs.Verdicts = append(objs.Verdicts, *tr)
				}
			}
			return l.Continue, nil
		})
		if err != nil {
			return err
		}
	}
	err = pages.Each(ctx, metav1.ListOptions{Limit: pageSize}, "PersistentVolumeClaims", func(opts metav1.ListOptions) (string, error) {
		opts.LabelSelector = selector(ours, pvc.LabelVolume+"="+pvc.VolumeBuild)
		l, err := t.Kube.CoreV1().PersistentVolumeClaims(ns).List(ctx, opts)
		if err != nil {
			return "", err
		}
		objs.Claims = append(objs.Claims, l.Items...)
		return l.Continue, nil
	})
	if err != nil {
		return err
	}
	err = pages.Each(ctx, metav1.ListOptions{Limit: pageSize}, "Secrets", func(opts metav1.ListOptions) (string, error) {
		opts.LabelSelector = selector(ours, build)
		l, err := t.Kube.CoreV1().Secrets(ns).List(ctx, opts)
		if err != nil {
			return "", err
		}
		for _, s := range l.Items {
			// Their names and owners only: no value stays in memory.
			objs.Secrets = append(objs.Secrets, corev1.Secret{ObjectMeta: metav1.ObjectMeta{
				Name: s.Name, UID: s.UID, OwnerReferences: s.OwnerReferences, CreationTimestamp: s.CreationTimestamp, DeletionTimestamp: s.DeletionTimestamp}})
		}
		return l.Continue, nil
	})
	if err != nil {
		return err
	}
	// The builds' pods, and the check sessions' (which are no build's).
	for _, sel := range []string{build, mustExist(runspec.LabelCheckSession)} {
		err := pages.Each(ctx, metav1.ListOptions{Limit: pageSize}, "pods", func(opts metav1.ListOptions) (string, error) {
			opts.LabelSelector = sel
			l, err := t.Kube.CoreV1().Pods(ns).List(ctx, opts)
			if err != nil {
				return "", err
			}
			for _, p := range l.Items {
				// Only what Plan reads: a page of step pods is mostly their specs.
				objs.Pods = append(objs.Pods, corev1.Pod{
					ObjectMeta: metav1.ObjectMeta{Name: p.Name, UID: p.UID, Labels: p.Labels, CreationTimestamp: p.CreationTimestamp, DeletionTimestamp: p.DeletionTimestamp},
					Spec:       corev1.PodSpec{ActiveDeadlineSeconds: p.Spec.ActiveDeadlineSeconds},
					Status:     corev1.PodStatus{Phase: p.Status.Phase, StartTime: p.Status.StartTime},
				})
			}
			return l.Continue, nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func mustExist(key string) string {
	r, err := labels.NewRequirement(key, selection.Exists, nil)
	if err != nil {
		panic(err) // a constant key
	}
	return r.String()
}

// listIndexes lists the teams' indexes of shared resource caches.
func listIndexes(ctx context.Context, t *tektonrun.Target, pageSize int64, objs *Objects) error {
	return pages.Each(ctx, metav1.ListOptions{Limit: pageSize}, "ConfigMaps", func(opts metav1.ListOptions) (string, error) {
		opts.LabelSelector = runspec.LabelManagedBy + "=" + runspec.ManagedBy + "," + runspec.LabelResourceCacheIndex + "=true"
		l, err := t.Kube.CoreV1().ConfigMaps(t.Namespace).List(ctx, opts)
		if err != nil {
			return "", err
		}
		objs.CacheIndexes = append(objs.CacheIndexes, l.Items...)
		return l.Continue, nil
	})
}

// removeIndexEntry deletes an entry (item.Name: index/entry) from its index, unless a
// build used it since it was listed.
func removeIndexEntry(ctx context.Context, t *tektonrun.Target, item Item, ttl time.Duration, now time.Time) error {
	index, name, _ := strings.Cut(item.Name, "/")
	cms := t.Kube.CoreV1().ConfigMaps(t.Namespace)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm, err := cms.Get(ctx, index, metav1.GetOptions{})
		if err != nil {
			return err
		}
		raw, ok := cm.Data[name]
		if !ok {
			return nil
		}
		var e runspec.IndexEntry
		if json.Unmarshal([]byte(raw), &e) == nil && e.Manifest == item.Digest && ttl > 0 && now.Sub(e.Used) <= ttl {
			return nil // used meanwhile
		}
		delete(cm.Data, name)
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		return err
	})
}

// imageRepository is the namespace's repository in the image registry.
type imageRepository struct {
	repo name.Repository
	opts []remote.Option
}

func newImageRepository(ctx context.Context, registry, namespace string) (*imageRepository, error) {
	repo, err := name.NewRepository(strings.TrimSuffix(registry, "/") + "/" + namespace)
	if err != nil {
		return nil, fmt.Errorf("image registry %q: %w", registry, err)
	}
	return &imageRepository{repo: repo, opts: []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}}, nil
}

// tags are the repository's tags and their digests; none when it does not exist.
func (r *imageRepository) tags(ctx context.Context) (map[string]string, error) {
	tags, err := remote.List(r.repo, r.opts...)
	if err != nil {
		if isNotFound(err) {
			return map[string]string{}, nil
		}
		return nil, fmt.Errorf("listing the tags of %s: %w", r.repo, err)
	}
	out := make(map[string]string, len(tags))
	for _, tag := range tags {
		desc, err := remote.Head(r.repo.Tag(tag), r.opts...)
		if err != nil {
			if isNotFound(err) {
				continue // deleted meanwhile
			}
			return nil, fmt.Errorf("reading %s:%s: %w", r.repo, tag, err)
		}
		out[tag] = desc.Digest.String()
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// pushed is when the manifest of digest says it was made (its annotation
// org.opencontainers.image.created); zero when it does not say, or is gone.
func (r *imageRepository) pushed(ctx context.Context, digest string) (time.Time, error) {
	desc, err := remote.Get(r.repo.Digest(digest), append(r.opts, remote.WithContext(ctx))...)
	if isNotFound(err) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("reading %s@%s: %w", r.repo, digest, err)
	}
	var m struct {
		Annotations map[string]string `json:"annotations"`
	}
	if json.Unmarshal(desc.Manifest, &m) != nil {
		return time.Time{}, nil
	}
	t, _ := time.Parse(time.RFC3339, m.Annotations["org.opencontainers.image.created"])
	return t, nil
}

// delete deletes the manifest of digest, and so every tag of it.
func (r *imageRepository) delete(ctx context.Context, digest string) error {
	err := remote.Delete(r.repo.Digest(digest), append(r.opts, remote.WithContext(ctx))...)
	if isNotFound(err) {
		return nil
	}
	var terr *transport.Error
	if errors.As(err, &terr) && terr.StatusCode == 405 {
		return fmt.Errorf("the registry does not allow deleting images (a distribution registry needs storage.delete.enabled): %w", err)
	}
	return err
}

func isNotFound(err error) bool {
	var terr *transport.Error
	return errors.As(err, &terr) && terr.StatusCode == 404
}
