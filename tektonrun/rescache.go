package tektonrun

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"knative.dev/pkg/apis"

	"github.com/concourse-tekton/concourse-tekton/runner/redact"
	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/tektonrun/buildevents"
)

// cacheIndexer writes the team's index of shared resource caches (runspec's
// ResourceCacheIndex) from what a build's steps report they found or saved in the
// namespace's store (runspec.ResultResourceCache), once each TaskRun is done. An entry
// is named after the image the TaskRun ran, from its param, not after anything the step
// says: a step can only name entries of its own image. Failing to write the index costs
// the team that sharing, never the build: a TaskRun is tried a few times, then left. It
// is an observer of the build's follower.
type cacheIndexer struct {
	client *Client
	tries  map[string]int // TaskRun → attempts; indexTries once written or not to be
	now    func() time.Time
}

const indexTries = 3

var _ Observer = (*cacheIndexer)(nil)

func newCacheIndexer(c *Client) *cacheIndexer {
	return &cacheIndexer{client: c, tries: map[string]int{}, now: time.Now}
}

// Observe records the build's TaskRuns; it never fails.
func (x *cacheIndexer) Observe(ctx context.Context, pr *v1.PipelineRun, trs []*v1.TaskRun, _ *redact.Secrets) error {
	x.record(ctx, pr, trs)
	return nil
}

// record writes the entries of the build's TaskRuns that are done and not yet written.
func (x *cacheIndexer) record(ctx context.Context, pr *v1.PipelineRun, trs []*v1.TaskRun) {
	team := pr.Labels[runspec.LabelTeam]
	for _, tr := range trs {
		if x.tries[tr.Name] >= indexTries || !buildevents.Done(tr.Status.GetCondition(apis.ConditionSucceeded)) {
			continue
		}
		entries := indexEntries(tr, team, x.now())
		if len(entries) == 0 {
			x.tries[tr.Name] = indexTries
			continue
		}
		x.tries[tr.Name]++
		if err := x.write(ctx, pr, team, entries); err == nil {
			x.tries[tr.Name] = indexTries
		}
	}
}

// indexEntries are the index entries a TaskRun's result reports: none unless the TaskRun
// shares the caches of the build's team (its param names the team's index).
func indexEntries(tr *v1.TaskRun, team string, now time.Time) map[string]string {
	raw := buildevents.Result(tr, runspec.ResultResourceCache)
	image := buildevents.Param(tr.Spec.Params, runspec.ParamImage)
	if raw == "" || image == "" || team == "" || buildevents.Param(tr.Spec.Params, runspec.ParamResourceCacheIndex) != runspec.ResourceCacheIndex(team) {
		return nil
	}
	var recs []runspec.ResourceCacheRecord
	if json.Unmarshal([]byte(raw), &recs) != nil {
		return nil
	}
	entries := map[string]string{}
	for _, r := range recs {
		digest, ok := strings.CutPrefix(r.Manifest, "sha256:")
		if !ok || !isSHA256(r.Key) || !isSHA256(digest) {
			continue
		}
		value, err := json.Marshal(runspec.IndexEntry{Manifest: r.Manifest, Used: now.UTC().Truncate(time.Second)})
		if err != nil {
			continue
		}
		entries[runspec.ResourceCacheEntry(image, r.Key)] = string(value)
	}
	return entries
}

// isSHA256 tells whether s is a SHA-256 sum in lower-case hexadecimal, as a cache's key
// and its manifest's digest are. A check of a few lines, not a regular expression: one
// compiled when the package is initialised would cost every command's start-up.
func isSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := range len(s) {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// write adds entries to the team's index, which it makes if there is none.
func (x *cacheIndexer) write(ctx context.Context, pr *v1.PipelineRun, team string, entries map[string]string) error {
	cms := x.client.target.Kube.CoreV1().ConfigMaps(x.client.target.Namespace)
	name := runspec.ResourceCacheIndex(team)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm, err := cms.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
				runspec.LabelManagedBy:          runspec.ManagedBy,
				runspec.LabelResourceCacheIndex: "true",
				runspec.LabelTeam:               team,
			}}, Data: entries}
			_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				// Made meanwhile by another build's follower: again, as a conflict.
				return apierrors.NewConflict(corev1.Resource("configmaps"), name, err)
			}
			return err
		}
		if err != nil {
			return err
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		for k, v := range entries {
			cm.Data[k] = v
		}
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		return err
	})
}
