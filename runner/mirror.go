package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/runner/state"
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// The mock resource, Concourse's test resource, fetches itself with mirror_self: its get
// writes its own root file system and a metadata.json whose environment says which
// version was fetched (MIRRORED_VERSION). A step whose image is such a fetch runs here
// in the mock's own image, which is what the fetch would give; the runner fetches it
// first in the step's container (the same image), and gives the step the environment of
// the fetched image's metadata.json, as Concourse gives a container its image's.

// mirroredImageEnv sets the environment of the step's mirrored image, if it has one
// (runspec.Spec.MirroredImage), in the runner's own, which the step's process and
// scripts inherit (containerEnv).
func (s *step) mirroredImageEnv(ctx context.Context, m *runspec.MirroredImage) error {
	if m == nil {
		return nil
	}
	if m.Artifact != "" {
		volPath, found, err := s.state.Artifact(s.spec.Scope, m.Artifact)
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("the image artifact %s is not there", m.Artifact)
		}
		return setImageEnv(filepath.Join(s.paths.Volume, volPath))
	}
	for _, f := range m.Fetches {
		if err := s.fetchMirror(ctx, f); err != nil {
			return err
		}
	}
	return nil
}

// fetchMirror fetches one image of the chain with the environment the previous one
// gave: its latest version, unless it has one, then its files, whose metadata.json gives
// the environment. The get's log shows, as an image's fetch shows in Concourse; a job
// build keeps what it fetched in the job's resource caches, where its next build finds
// it (quietly, as Concourse's worker finds an image in its resource cache).
func (s *step) fetchMirror(ctx context.Context, f runspec.ImageFetch) error {
	source, err := s.interpolateMap(f.Source)
	if err != nil {
		return err
	}
	params, err := s.interpolateMap(f.Params)
	if err != nil {
		return err
	}
	env := resourceEnv(runspec.Build{}, "", false)
	version := f.Version
	if version == nil {
		request := struct {
			Source  map[string]any    `json:"source"`
			Version map[string]string `json:"version"`
		}{Source: nonNil(source)}
		stdout, status, err := s.runScript(ctx, "check", nil, "", request, env)
		if err != nil {
			return fmt.Errorf("checking the image: %w", err)
		}
		if status != 0 {
			return errors.New("checking the image: its check failed")
		}
		var versions []map[string]string
		if json.Unmarshal(stdout, &versions) != nil || len(versions) == 0 {
			return errors.New("checking the image: no version found")
		}
		version = versions[len(versions)-1]
	}
	cache, cacheable := s.resourceCache(mirrorType, source, params, version)
	if cacheable {
		_, found := cache.lookup()
		if !found {
			_, found = s.findShared(ctx, cache)
		}
		if found {
			if err := cache.use(s.spec.Build.Name); err != nil {
				return err
			}
			return setImageEnv(filepath.Join(cache.dir, "data"))
		}
	}
	// On the build's volume: the mock copies its root file system but the top-level
	// directory its destination is in, and the volume is the step's biggest mount.
	parent := filepath.Join(s.paths.Volume, runspec.WorkDir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	dir, err := os.MkdirTemp(parent, runspec.Escape(s.spec.PlanID)+"%image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	request := struct {
		Source  map[string]any    `json:"source"`
		Params  map[string]any    `json:"params,omitempty"`
		Version map[string]string `json:"version"`
	}{Source: nonNil(source), Params: params, Version: version}
	// Its exit status is not the step's.
	_, status, err := s.runScript(ctx, "in", []string{dir}, "", request, env)
	if err != nil {
		return fmt.Errorf("fetching the image: %w", err)
	}
	if status != 0 {
		return errors.New("fetching the image: its get failed")
	}
	if cacheable {
		if err := cache.save(dir, state.Result{Version: version}, s.spec.PlanID+"%image"); err != nil {
			s.logf("the resource cache of the image was not saved: %v", err)
		} else {
			s.share(ctx, cache)
			if err := cache.use(s.spec.Build.Name); err != nil {
				return err
			}
		}
	}
	return setImageEnv(dir)
}

// mirrorType keys the resource caches of mirrored images: whatever custom type fetched
// them, the mock resource's scripts did.
const mirrorType = "mock"

// setImageEnv sets the environment that the metadata.json of the image fetched into dir
// gives ({"env": ["NAME=value", ...]}), if it has one.
func setImageEnv(dir string) error {
	data, err := os.ReadFile(filepath.Join(dir, "metadata.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var meta struct {
		Env []string `json:"env"`
	}
	if err := json.Unmarshal(data, &meta); err != nil {
		return fmt.Errorf("reading the image's metadata.json: %w", err)
	}
	for _, kv := range meta.Env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return fmt.Errorf("the image's metadata.json sets %q, not NAME=value", kv)
		}
		if err := os.Setenv(k, v); err != nil {
			return err
		}
	}
	return nil
}

// taskMirroredImage is the mirrored image of a task whose config was read when the build
// ran: an image_resource of the mock resource fetching itself, which the resolve step
// ran as the mock's image (imageReference).
func taskMirroredImage(cfg concourse.TaskConfig) *runspec.MirroredImage {
	ir := cfg.ImageResource
	if !mirrorsMock(ir) {
		return nil
	}
	f := runspec.ImageFetch{Source: ir.Source, Params: ir.Params}
	if len(ir.Version) > 0 {
		f.Version = ir.Version
	}
	return &runspec.MirroredImage{Fetches: []runspec.ImageFetch{f}}
}

// mirrorsMock tells an image_resource of the mock resource fetching itself.
func mirrorsMock(ir *concourse.ImageResource) bool {
	if ir == nil || ir.Type != "mock" {
		return false
	}
	mirror, _ := ir.Source["mirror_self"].(bool)
	return mirror
}
