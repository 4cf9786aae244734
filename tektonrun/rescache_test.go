package tektonrun

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"

	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// sharingTaskRun is a TaskRun of a step that shares the team's resource caches, done
// when status is not Unknown, reporting recs.
func sharingTaskRun(name, image, index string, status corev1.ConditionStatus, recs any) *v1.TaskRun {
	tr := &v1.TaskRun{ObjectMeta: metav1.ObjectMeta{Name: name}}
	tr.Spec.Params = v1.Params{
		{Name: runspec.ParamImage, Value: *v1.NewStructuredValues(image)},
		{Name: runspec.ParamResourceCacheIndex, Value: *v1.NewStructuredValues(index)},
	}
	tr.Status.Conditions = duckv1.Conditions{{Type: apis.ConditionSucceeded, Status: status}}
	if recs != nil {
		raw, _ := json.Marshal(recs)
		tr.Status.Results = []v1.TaskRunResult{{Name: runspec.ResultResourceCache, Value: *v1.NewStructuredValues(string(raw))}}
	}
	return tr
}

// TestCacheIndexer: the follower writes the team's index from the results of the build's
// finished TaskRuns, each entry named after the image the TaskRun ran (its param) and
// the key reported, valued with the manifest's digest and the time of use; it makes the
// index, adds to it, and ignores what is malformed, a TaskRun not done, and a TaskRun
// that names another team's index.
func TestCacheIndexer(t *testing.T) {
	ctx := context.Background()
	mc := newMemCluster("ci")
	x := newCacheIndexer(mc.client())
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	x.now = func() time.Time { return now }
	pr := &v1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Name: "p-j-1", Labels: map[string]string{runspec.LabelTeam: "main"}}}
	index := runspec.ResourceCacheIndex("main")
	key1, key2 := strings.Repeat("a", 64), strings.Repeat("b", 64)
	digest := "sha256:" + strings.Repeat("c", 64)
	trs := []*v1.TaskRun{
		sharingTaskRun("get-a", "git-resource:1", index, corev1.ConditionTrue, []runspec.ResourceCacheRecord{
			{Key: key1, Manifest: digest},
			{Key: "../escape", Manifest: digest},
			{Key: key2, Manifest: "sha256:short"},
		}),
		sharingTaskRun("get-running", "git-resource:1", index, corev1.ConditionUnknown, []runspec.ResourceCacheRecord{{Key: key2, Manifest: digest}}),
		sharingTaskRun("get-other-team", "git-resource:1", runspec.ResourceCacheIndex("other"), corev1.ConditionTrue, []runspec.ResourceCacheRecord{{Key: key2, Manifest: digest}}),
		sharingTaskRun("get-garbage", "git-resource:1", index, corev1.ConditionTrue, "not a list"),
		sharingTaskRun("task", "busybox", index, corev1.ConditionTrue, nil),
	}
	x.record(ctx, pr, trs)
	cm, err := mc.kube.CoreV1().ConfigMaps("ci").Get(ctx, index, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the index: %v", err)
	}
	used := `{"manifest":"` + digest + `","used":"2026-11-26T12:00:00Z"}`
	want := map[string]string{runspec.ResourceCacheEntry("git-resource:1", key1): used}
	if diff := cmp.Diff(want, cm.Data); diff != "" {
		t.Errorf("the index (-want +got):\n%s", diff)
	}
	if cm.Labels[runspec.LabelTeam] != "main" || cm.Labels[runspec.LabelResourceCacheIndex] != "true" || cm.Labels[runspec.LabelManagedBy] != runspec.ManagedBy {
		t.Errorf("the index's labels: %v", cm.Labels)
	}
	// The running one ends; another image reports the same key: another entry.
	trs[1] = sharingTaskRun("get-running", "git-resource:1", index, corev1.ConditionFalse, []runspec.ResourceCacheRecord{{Key: key2, Manifest: digest}})
	trs = append(trs, sharingTaskRun("get-mock", "mock-resource", index, corev1.ConditionTrue, []runspec.ResourceCacheRecord{{Key: key1, Manifest: digest}}))
	now = now.Add(time.Hour)
	x.record(ctx, pr, trs)
	cm, _ = mc.kube.CoreV1().ConfigMaps("ci").Get(ctx, index, metav1.GetOptions{})
	later := `{"manifest":"` + digest + `","used":"2026-11-26T13:00:00Z"}`
	want[runspec.ResourceCacheEntry("git-resource:1", key2)] = later
	want[runspec.ResourceCacheEntry("mock-resource", key1)] = later
	if diff := cmp.Diff(want, cm.Data); diff != "" {
		t.Errorf("the index, after (-want +got):\n%s", diff)
	}
	// Each TaskRun is written once.
	before := mc.reads()["update configmaps"]
	x.record(ctx, pr, trs)
	if after := mc.reads()["update configmaps"]; after != before {
		t.Errorf("a TaskRun written again: %d updates, then %d", before, after)
	}
}

func TestIsSHA256(t *testing.T) {
	sum := strings.Repeat("0123456789abcdef", 4)
	for _, tt := range []struct {
		name string
		s    string
		want bool
	}{
		{name: "a sum", s: sum, want: true},
		{name: "empty", s: ""},
		{name: "one short", s: sum[1:]},
		{name: "one long", s: sum + "0"},
		{name: "upper case", s: strings.ToUpper(sum)},
		{name: "not hexadecimal", s: "g" + sum[1:]},
		{name: "with its algorithm", s: "sha256:" + sum[7:]},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := isSHA256(tt.s); got != tt.want {
				t.Errorf("isSHA256(%q) = %v, want %v", tt.s, got, tt.want)
			}
		})
	}
}
