package runner

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"github.com/concourse-tekton/concourse-tekton/runner/cowcopy"
	"github.com/concourse-tekton/concourse-tekton/runner/state"
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// foundCache is what Concourse prints when a get finds its version in a resource cache
// instead of fetching it.
const foundCache = "\x1b[1;36mINFO: found existing resource cache\x1b[0m\n\n"

// resourceCache is a resource cache of a job: what a get of one resource type (in one
// image) fetched with one source, params and version, which a get of the same in a later
// build of the job finds instead of fetching it again, as Concourse's get finds a
// resource cache on its worker. It lives in the job's volume chain, under
// runspec.ResourceCachesDir, which each build's volume carries to the next: each build
// keeps the caches it used (pruneResourceCaches).
type resourceCache struct {
	dir string // its directory, on the volume
	rel string // the same, relative to the volume
}

// resourceCache is the cache a get of these would use; false when it has none: a one-off
// build (it has no next build), a build without a name, a get without a version (the
// latest is not fixed), or a get whose /tmp/build is the volume (its artifact stays
// where it was fetched).
func (s *step) resourceCache(typ string, source, params map[string]any, version map[string]string) (resourceCache, bool) {
	if s.spec.Build.JobName == "" || s.spec.Build.Name == "" || len(version) == 0 || s.paths.Work != "" {
		return resourceCache{}, false
	}
	key, err := json.Marshal(struct {
		Type    string            `json:"type"`
		Image   string            `json:"image"`
		Source  map[string]any    `json:"source"`
		Params  map[string]any    `json:"params"`
		Version map[string]string `json:"version"`
	}{typ, s.opts.image, nonNil(source), nonNil(params), version})
	if err != nil {
		return resourceCache{}, false
	}
	sum := sha256.Sum256(key)
	rel := path.Join(runspec.ResourceCachesDir, hex.EncodeToString(sum[:]))
	return resourceCache{dir: filepath.Join(s.paths.Volume, rel), rel: rel}, true
}

// data is where the cache's artifact is, relative to the volume.
func (c resourceCache) data() string { return path.Join(c.rel, "data") }

// lookup is the result of the get the cache holds, if it holds one.
func (c resourceCache) lookup() (state.Result, bool) {
	raw, err := os.ReadFile(filepath.Join(c.dir, "result.json"))
	if err != nil {
		return state.Result{}, false
	}
	var r state.Result
	if err := json.Unmarshal(raw, &r); err != nil || r.Version == nil {
		return state.Result{}, false
	}
	if info, err := os.Stat(filepath.Join(c.dir, "data")); err != nil || !info.IsDir() {
		return state.Result{}, false
	}
	return r, true
}

// save makes the content of dir and r the cache, whole or not at all (install).
func (c resourceCache) save(dir string, r state.Result, planID string) error {
	raw, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return c.install(".next-"+runspec.Escape(planID), func(next string) error {
		if _, err := cowcopy.Tree(dir, filepath.Join(next, "data"), cowcopy.Options{}); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(next, "result.json"), raw, 0o644)
	})
}

// install makes the cache whole or not at all: fill writes it in a directory beside it
// (its name and suffix), which is then renamed; when another step of the build made it
// first, that one stays.
func (c resourceCache) install(suffix string, fill func(next string) error) error {
	next := c.dir + suffix
	if err := state.MkdirShared(filepath.Dir(c.dir)); err != nil {
		return err
	}
	if err := os.RemoveAll(next); err != nil {
		return err
	}
	// Shared, as the volume's directories are: a later build's get may run as another
	// user, and marks it used.
	if err := state.MkdirShared(next); err != nil {
		return err
	}
	if err := fill(next); err != nil {
		return errors.Join(err, os.RemoveAll(next))
	}
	if err := os.Rename(next, c.dir); err != nil {
		if _, ok := c.lookup(); ok {
			return os.RemoveAll(next)
		}
		return errors.Join(err, os.RemoveAll(next))
	}
	return nil
}

// use records that build used the cache: it is kept for the job's next build.
func (c resourceCache) use(build string) error {
	used := filepath.Join(c.dir, "used")
	if err := os.Remove(used); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return os.WriteFile(used, []byte(build), 0o644)
}

// pruneResourceCaches deletes, at the end of a job build, the resource caches it did
// not use (and those left half-made), so that a job's volume carries the caches of the
// versions its last build fetched, not of every version it ever fetched.
func pruneResourceCaches(root, build string) error {
	dir := filepath.Join(root, runspec.ResourceCachesDir)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("pruning the resource caches: %w", err)
	}
	var errs []error
	for _, e := range entries {
		if used, err := os.ReadFile(filepath.Join(dir, e.Name(), "used")); err == nil && build != "" && string(used) == build {
			continue
		}
		errs = append(errs, os.RemoveAll(filepath.Join(dir, e.Name())))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("pruning the resource caches: %w", err)
	}
	return nil
}
