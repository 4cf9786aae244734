package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/concourse-tekton/concourse-tekton/internal/tarstream"
	"github.com/concourse-tekton/concourse-tekton/runner/state"
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// sharedStore is the namespace's store of resource caches, found through the team's index
// (see runspec's ResourceCacheIndex): a job's get finds there what a get of any job of
// its team fetched, as Concourse's worker serves every build its resource caches.
type sharedStore struct {
	client *registryClient
	index  string // the team's index, mounted: a file per entry
	image  string // the step's image, which names its entries
}

// The store's manifests: an image of one uncompressed layer, the cache's data/ and
// result.json, whose config says nothing but its layer.
const (
	cacheManifestType = "application/vnd.oci.image.manifest.v1+json"
	cacheConfigType   = "application/vnd.oci.image.config.v1+json"
	cacheLayerType    = "application/vnd.oci.image.layer.v1.tar"
)

type ociDescriptor struct {
	MediaType string `json:"mediaType"`
	Digest    string `json:"digest"`
	Size      int64  `json:"size"`
}

type ociManifest struct {
	SchemaVersion int               `json:"schemaVersion"`
	MediaType     string            `json:"mediaType"`
	Config        ociDescriptor     `json:"config"`
	Layers        []ociDescriptor   `json:"layers"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}

// sharedStore is the step's store; nil when it has none: no registry or namespace given
// (a build without a registry, a build with no team's index), or no index mounted.
func (s *step) sharedStore() (*sharedStore, error) {
	o := s.opts.publishing
	if o.registry == "" || o.namespace == "" || s.opts.resourceCacheIndex == "" {
		return nil, nil
	}
	if info, err := os.Stat(s.opts.resourceCacheIndex); err != nil || !info.IsDir() {
		return nil, nil
	}
	client, err := newRegistryClient(o.registry, o.namespace+"/"+runspec.ResourceCacheRepository, o.auth)
	if err != nil {
		return nil, err
	}
	return &sharedStore{client: client, index: s.opts.resourceCacheIndex, image: s.opts.image}, nil
}

// findShared makes the cache c from the store, when the team's index has it; false when
// it does not, or could not be read (said in the log: the get fetches it).
func (s *step) findShared(ctx context.Context, c resourceCache) (state.Result, bool) {
	store, err := s.sharedStore()
	if store == nil {
		if err != nil {
			s.logf("the shared resource caches cannot be read: %v", err)
		}
		return state.Result{}, false
	}
	key := filepath.Base(c.dir)
	raw, err := os.ReadFile(filepath.Join(store.index, runspec.ResourceCacheEntry(store.image, key)))
	if err != nil {
		return state.Result{}, false
	}
	var entry runspec.IndexEntry
	if err := json.Unmarshal(raw, &entry); err != nil || entry.Manifest == "" {
		return state.Result{}, false
	}
	if err := store.pull(ctx, entry.Manifest, c); err != nil {
		if ctx.Err() == nil {
			s.logf("the shared resource cache of %s could not be read: %v", s.spec.Name, err)
		}
		return state.Result{}, false
	}
	r, found := c.lookup()
	if found {
		s.reportShared(key, entry.Manifest)
	}
	return r, found
}

// pull makes c the cache of the manifest digest, whole or not at all.
func (st *sharedStore) pull(ctx context.Context, digest string, c resourceCache) error {
	raw, err := st.client.manifest(ctx, digest, cacheManifestType)
	if err != nil {
		return err
	}
	var m ociManifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return fmt.Errorf("the manifest: %w", err)
	}
	if len(m.Layers) != 1 || m.Layers[0].MediaType != cacheLayerType {
		return errors.New("the manifest is not of a resource cache")
	}
	return c.install(".pull", func(next string) error {
		return st.client.blob(ctx, m.Layers[0].Digest, func(r io.Reader) error { return tarstream.Extract(r, next) })
	})
}

// share pushes the cache c, just saved, to the store, and reports it for the team's
// index; a failure is said in the log, and costs only the sharing.
func (s *step) share(ctx context.Context, c resourceCache) {
	store, err := s.sharedStore()
	if store == nil {
		if err != nil {
			s.logf("the resource cache of %s was not shared: %v", s.spec.Name, err)
		}
		return
	}
	key := filepath.Base(c.dir)
	digest, err := store.push(ctx, c, runspec.ResourceCacheEntry(store.image, key))
	if err != nil {
		if ctx.Err() == nil {
			s.logf("the resource cache of %s was not shared: %v", s.spec.Name, err)
		}
		return
	}
	s.reportShared(key, digest)
}

// push uploads the cache c under tag and returns its manifest's digest.
func (st *sharedStore) push(ctx context.Context, c resourceCache, tag string) (string, error) {
	for _, f := range []string{"data", "result.json"} {
		if _, err := os.Lstat(filepath.Join(c.dir, f)); err != nil {
			return "", err
		}
	}
	layer, size, err := st.client.pushBlob(ctx, func(w io.Writer) error {
		return tarstream.Write(w, c.dir, []string{"data", "result.json"})
	})
	if err != nil {
		return "", err
	}
	cfg, err := json.Marshal(map[string]any{
		"architecture": "amd64", "os": "linux",
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{layer}},
	})
	if err != nil {
		return "", err
	}
	config, cfgSize, err := st.client.pushBlob(ctx, func(w io.Writer) error { _, err := w.Write(cfg); return err })
	if err != nil {
		return "", err
	}
	manifest, err := json.Marshal(ociManifest{
		SchemaVersion: 2,
		MediaType:     cacheManifestType,
		Config:        ociDescriptor{MediaType: cacheConfigType, Digest: config, Size: cfgSize},
		Layers:        []ociDescriptor{{MediaType: cacheLayerType, Digest: layer, Size: size}},
		// When it was pushed: gc keeps a cache no index names yet for a grace period.
		Annotations: map[string]string{
			"org.opencontainers.image.title":   "concourse-tekton resource cache",
			"org.opencontainers.image.created": time.Now().UTC().Format(time.RFC3339),
		},
	})
	if err != nil {
		return "", err
	}
	return st.client.pushManifest(ctx, tag, cacheManifestType, manifest)
}

// reportShared adds a cache to the result that the build's follower makes the team's
// index from: every cache the step found or saved.
func (s *step) reportShared(key, manifest string) {
	s.shared = append(s.shared, runspec.ResourceCacheRecord{Key: key, Manifest: manifest})
	raw, err := json.Marshal(s.shared)
	if err == nil {
		err = s.writeResult(runspec.ResultResourceCache, raw)
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.logf("the use of the resource cache of %s is not recorded: %v", s.spec.Name, err)
	}
}
