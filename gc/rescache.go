package gc

import (
	"encoding/json"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/concourse-tekton/concourse-tekton/pvc"
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// The shared resource caches (runspec's ResourceCacheIndex): the teams' indexes, and the
// store's tags. An entry goes once no build used it for the retention period
// (Rules.ResourceCacheTTL), and a tag once no kept entry names it and it is older than
// the grace period (a get pushes before its build's follower writes the entry).
const (
	KindCacheEntry = "ResourceCacheEntry"
	KindCacheImage = "ResourceCache"

	ReasonCacheUsed     = "a build used it within the resource cache retention"
	ReasonCacheUnused   = "no build used it within the resource cache retention"
	ReasonCacheIndexed  = "a team's index names it"
	ReasonCacheOrphan   = "no team's index names it"
	ReasonCacheRecent   = "pushed within the grace period, its index entry may be on its way"
	ReasonCacheSameBlob = "a kept resource cache has the same digest"
)

// CacheTag is a tag of the store: its manifest's digest and when it was pushed (zero:
// not known, or not read because an entry names it).
type CacheTag struct {
	Digest string
	Pushed time.Time
}

// cacheEntry is one entry of an index as Plan reads it.
type cacheEntry struct {
	index, name string
	entry       runspec.IndexEntry
}

// indexEntries are the entries of the teams' indexes, sorted; an entry whose value is
// not an IndexEntry is one with no manifest and no time of use.
func indexEntries(indexes []corev1.ConfigMap) []cacheEntry {
	var out []cacheEntry
	for _, cm := range indexes {
		for _, name := range slices.Sorted(maps.Keys(cm.Data)) {
			e := cacheEntry{index: cm.Name, name: name}
			_ = json.Unmarshal([]byte(cm.Data[name]), &e.entry)
			out = append(out, e)
		}
	}
	return out
}

// indexedTags are the store's tags that an index entry names with its digest: Sweep
// reads when the others were pushed.
func indexedTags(indexes []corev1.ConfigMap) map[string]string {
	out := map[string]string{}
	for _, e := range indexEntries(indexes) {
		out[e.name] = e.entry.Manifest
	}
	return out
}

// resourceCaches decides on the teams' index entries and the store's tags.
func resourceCaches(objs Objects, rules Rules, now time.Time) (gone, kept []Item) {
	named := map[string]string{} // tag → digest, of the kept entries
	for _, e := range indexEntries(objs.CacheIndexes) {
		item := Item{Kind: KindCacheEntry, Name: e.index + "/" + e.name, Reason: ReasonCacheUsed, Digest: e.entry.Manifest}
		if rules.ResourceCacheTTL > 0 && now.Sub(e.entry.Used) > rules.ResourceCacheTTL {
			item.Reason = ReasonCacheUnused
			gone = append(gone, item)
			continue
		}
		named[e.name] = e.entry.Manifest
		kept = append(kept, item)
	}
	keptDigests := map[string]bool{}
	var tagsGone []Item
	for _, tag := range slices.Sorted(maps.Keys(objs.CacheTags)) {
		t := objs.CacheTags[tag]
		item := Item{Kind: KindCacheImage, Name: objs.CacheRepository + ":" + tag, Reason: ReasonCacheOrphan, Digest: t.Digest}
		switch {
		case named[tag] != "" && named[tag] == t.Digest:
			item.Reason = ReasonCacheIndexed
		case !t.Pushed.IsZero() && now.Sub(t.Pushed) < pvc.Grace:
			item.Reason = ReasonCacheRecent
		default:
			tagsGone = append(tagsGone, item)
			continue
		}
		keptDigests[t.Digest] = true
		kept = append(kept, item)
	}
	for _, item := range tagsGone {
		if keptDigests[item.Digest] {
			// A registry deletes a manifest with every tag of it.
			item.Reason = ReasonCacheSameBlob
			kept = append(kept, item)
			continue
		}
		gone = append(gone, item)
	}
	return gone, kept
}
