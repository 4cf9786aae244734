package gc

import (
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	tektonfake "github.com/tektoncd/pipeline/pkg/client/clientset/versioned/fake"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sfake "k8s.io/client-go/kubernetes/fake"

	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/tektonrun"
)

// index is a team's index of shared resource caches with entries name → (manifest, used).
func index(team string, entries map[string]runspec.IndexEntry) corev1.ConfigMap {
	cm := corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: runspec.ResourceCacheIndex(team), Namespace: "ci", Labels: map[string]string{
		runspec.LabelManagedBy: runspec.ManagedBy, runspec.LabelResourceCacheIndex: "true", runspec.LabelTeam: team}}, Data: map[string]string{}}
	for k, e := range entries {
		raw, _ := json.Marshal(e)
		cm.Data[k] = string(raw)
	}
	return cm
}

// TestPlanResourceCaches: an index entry goes once no build used it for the retention
// period; a tag of the store stays while a kept entry names it with its digest, or it
// was pushed within the grace period, or a kept tag has its digest; any other goes.
func TestPlanResourceCaches(t *testing.T) {
	now := t0.Add(100 * time.Hour)
	idx := runspec.ResourceCacheIndex("main")
	objs := Objects{
		CacheRepository: "registry:5000/ci/resource-caches",
		CacheIndexes: []corev1.ConfigMap{index("main", map[string]runspec.IndexEntry{
			"fresh":    {Manifest: "sha256:f", Used: now.Add(-time.Hour)},
			"stale":    {Manifest: "sha256:s", Used: now.Add(-73 * time.Hour)},
			"repushed": {Manifest: "sha256:old", Used: now.Add(-time.Hour)},
		})},
		CacheTags: map[string]CacheTag{
			"fresh":    {Digest: "sha256:f"},
			"stale":    {Digest: "sha256:s", Pushed: now.Add(-80 * time.Hour)},
			"repushed": {Digest: "sha256:new", Pushed: now.Add(-time.Hour)},
			"pushing":  {Digest: "sha256:p", Pushed: now.Add(-time.Minute)},
			"unknown":  {Digest: "sha256:u"},
			"same":     {Digest: "sha256:f", Pushed: now.Add(-time.Hour)},
		},
	}
	d := Plan(objs, Rules{ResourceCacheTTL: 72 * time.Hour}, now)
	repo := "ResourceCache/registry:5000/ci/resource-caches:"
	wantDelete := []string{
		"ResourceCacheEntry/" + idx + "/stale: " + ReasonCacheUnused,
		repo + "repushed: " + ReasonCacheOrphan,
		repo + "stale: " + ReasonCacheOrphan,
		repo + "unknown: " + ReasonCacheOrphan,
	}
	if diff := cmp.Diff(wantDelete, names(d.Delete)); diff != "" {
		t.Errorf("Delete (-want +got):\n%s", diff)
	}
	for _, k := range []string{
		"ResourceCacheEntry/" + idx + "/fresh: " + ReasonCacheUsed,
		repo + "fresh: " + ReasonCacheIndexed,
		repo + "pushing: " + ReasonCacheRecent,
		repo + "same: " + ReasonCacheSameBlob,
	} {
		if !slices.Contains(names(d.Keep), k) {
			t.Errorf("not kept: %s\nkept: %v", k, names(d.Keep))
		}
	}
	// Without a retention, entries stay.
	if d := Plan(objs, Rules{}, now); slices.ContainsFunc(d.Delete, func(i Item) bool { return i.Kind == KindCacheEntry }) {
		t.Errorf("no retention: deleted %v", names(d.Delete))
	}
}

// TestSweepResourceCaches: against a registry and an index, Sweep deletes the stale
// entry from its index and the tags no kept entry names from the store, reading when
// those were pushed from their manifests; an entry used since the listing stays.
func TestSweepResourceCaches(t *testing.T) {
	ctx := context.Background()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	now := t0.Add(100 * time.Hour)
	// A pushed manifest, by digest: a registry deletes manifests by digest (and with
	// them, in a distribution registry, their tags).
	push := func(tag string, pushed time.Time) (name.Reference, string) {
		t.Helper()
		img := mutate.Annotations(empty.Image, map[string]string{"org.opencontainers.image.created": pushed.Format(time.RFC3339), "tag": tag}).(v1.Image)
		ref, err := name.ParseReference(host + "/ci/" + runspec.ResourceCacheRepository + ":" + tag)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(ref, img); err != nil {
			t.Fatal(err)
		}
		digest, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return ref.Context().Digest(digest.String()), digest.String()
	}
	freshRef, fresh := push("fresh", now.Add(-80*time.Hour))
	staleRef, stale := push("stale", now.Add(-80*time.Hour))
	recentRef, _ := push("recent", now.Add(-time.Minute))
	orphanRef, _ := push("orphan", now.Add(-time.Hour))
	cm := index("main", map[string]runspec.IndexEntry{
		"fresh": {Manifest: fresh, Used: now.Add(-time.Hour)},
		"stale": {Manifest: stale, Used: now.Add(-73 * time.Hour)},
	})
	target := tektonrun.NewTargetFromClients("ci", k8sfake.NewClientset(&cm), tektonfake.NewSimpleClientset())
	r, err := Sweep(ctx, target, Options{Rules: DefaultRules, ImageRegistry: host, Now: func() time.Time { return now }})
	if err != nil || len(r.Failed) > 0 {
		t.Fatalf("Sweep: %v, %+v", err, r.Failed)
	}
	repo := "ResourceCache/" + host + "/ci/" + runspec.ResourceCacheRepository + ":"
	want := []string{
		"ResourceCacheEntry/" + cm.Name + "/stale: " + ReasonCacheUnused,
		repo + "orphan: " + ReasonCacheOrphan,
		repo + "stale: " + ReasonCacheOrphan,
	}
	if diff := cmp.Diff(want, names(r.Deleted)); diff != "" {
		t.Errorf("Deleted (-want +got):\n%s", diff)
	}
	got, err := target.Kube.CoreV1().ConfigMaps("ci").Get(ctx, cm.Name, metav1.GetOptions{})
	if err != nil || len(got.Data) != 1 || got.Data["fresh"] == "" {
		t.Errorf("the index after: %v, %v; want the fresh entry alone", got.Data, err)
	}
	for ref, wantThere := range map[name.Reference]bool{freshRef: true, recentRef: true, staleRef: false, orphanRef: false} {
		_, err := remote.Head(ref)
		if there := err == nil; there != wantThere {
			t.Errorf("%s: there %t (%v), want %t", ref, there, err, wantThere)
		}
	}

	// An entry used again between the listing and the deletion stays.
	cm2 := index("main", map[string]runspec.IndexEntry{"fresh": {Manifest: fresh, Used: now.Add(-time.Hour)}})
	target = tektonrun.NewTargetFromClients("ci", k8sfake.NewClientset(&cm2), tektonfake.NewSimpleClientset())
	item := Item{Kind: KindCacheEntry, Name: cm2.Name + "/fresh", Digest: fresh}
	if err := removeIndexEntry(ctx, target, item, 72*time.Hour, now); err != nil {
		t.Fatal(err)
	}
	if got, _ := target.Kube.CoreV1().ConfigMaps("ci").Get(ctx, cm2.Name, metav1.GetOptions{}); got.Data["fresh"] == "" {
		t.Errorf("an entry used within the retention was removed")
	}
}
