package runspec

import (
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// Shared resource caches. Concourse's worker serves any build the resource cache it has
// (type, source, params and version fetched once); here the namespace is the worker. A
// job's get keeps what it fetched on the job's volume chain (ResourceCachesDir) for the
// job's next build; with a registry, it also pushes it to the namespace's store, the
// repository <registry>/<namespace>/ResourceCacheRepository, where the gets of every
// job of its team find it:
//
//   - The store is found through the team's index, a ConfigMap (ResourceCacheIndex of
//     the team, labelled LabelResourceCacheIndex) that the steps mount at
//     ResourceCacheIndexDir (optional: an absent index is an empty one). An entry is
//     named ResourceCacheEntry(image, key): the step's image and the key of what it
//     fetched (a hash of type, image, source, params and version, the runner's); its
//     value is an IndexEntry, the manifest's digest. A step finds its entry, pulls the
//     manifest and its one layer by digest, checks both, and has the cache.
//   - A step that fetched pushes the cache (one layer, a tar of data/ and result.json)
//     tagged with its entry's name, and reports the key and the manifest's digest as its
//     result ResultResourceCache, a list of ResourceCacheRecord (as does a step that
//     found it, so that its use counts).
//   - Only the build's follower writes the index, from that result: the entry's name is
//     made from the image the TaskRun ran (its param), so that a step reporting another
//     key than its own can only name an entry of its own image, which a get of another
//     type never reads; and the team's index is mounted by its own builds only.
//   - gc deletes the entries unused for the retention period, and the store's tags that
//     no index names once they are older than the grace period.
//
// The steps that share run the user's resource types: they never see the credentials the
// build pushes its images with (ParamImageRegistrySecret). A registry that wants
// credentials for the store takes those of the Secret ParamResourceCacheSecret names
// (default DefaultResourceCacheSecret, optional), best scoped to the store's repository.
const (
	ResultResourceCache        = "resource-cache"
	ParamResourceCacheIndex    = "resource-cache-index"
	ParamResourceCacheSecret   = "resource-cache-secret"
	DefaultResourceCacheSecret = "concourse-resource-cache-registry"
	ResourceCacheIndexDir      = "/concourse-resource-caches"
	ResourceCacheRepository    = "resource-caches"
	LabelResourceCacheIndex    = LabelPrefix + "resource-cache-index"
)

// ResourceCacheIndex is the name of a team's index of resource caches.
func ResourceCacheIndex(team string) string {
	return "concourse-resource-caches-" + ShortHash(team)
}

// ResourceCacheEntry is the index entry of what a step running image fetched under key,
// and the store's tag of it.
func ResourceCacheEntry(image, key string) string {
	sum := sha256.Sum256([]byte(image + "\x00" + key))
	return hex.EncodeToString(sum[:])
}

// ResourceCacheRecord is an element of the result ResultResourceCache: the key of a cache
// the step found or saved, and the digest of its manifest in the store.
type ResourceCacheRecord struct {
	Key      string `json:"key"`
	Manifest string `json:"manifest"`
}

// IndexEntry is an entry's value in a team's index: the manifest's digest, and when a
// build last used it.
type IndexEntry struct {
	Manifest string    `json:"manifest"`
	Used     time.Time `json:"used"`
}
