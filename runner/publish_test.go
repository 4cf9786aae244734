package runner_test

import (
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/concourse-tekton/concourse-tekton/runspec"
)

var (
	imageToolOnce sync.Once
	imageTool     string
	imageToolErr  error
)

// buildImageTool builds the real image tool once, for the tests that publish.
func buildImageTool(t *testing.T) string {
	t.Helper()
	imageToolOnce.Do(func() {
		imageTool = filepath.Join(filepath.Dir(binary), "concourse-image")
		build := exec.Command("go", "build", "-o", imageTool, "../cmd/concourse-image")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			imageToolErr = err
			t.Logf("%s", out)
		}
	})
	if imageToolErr != nil {
		t.Fatalf("building the image tool: %v", imageToolErr)
	}
	return imageTool
}

// publishArgs are the runner's arguments for a publish step of spec to registry.
func (w *world) publishArgs(spec runspec.Spec, registry string) []string {
	return append(w.args(spec), "--image-registry="+registry, "--image-namespace=ci", "--image-tag=build-7-publish-img",
		"--x-image-tool="+buildImageTool(w.t), "--x-registry-auth="+filepath.Join(w.root, "no-auth"), "--x-scratch="+w.tmpBuild)
}

func TestPublish(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	w := newWorld(t)
	w.artifact("img", map[string]string{
		"rootfs/bin/hello#x": "#!/bin/sh\necho hello\n",
		"metadata.json":      `{"env": ["MARK=published"], "user": ""}`,
	})
	spec := w.spec(runspec.ModePublish, "2/publish", "img")
	spec.Publish = &runspec.Publish{TaskPlanID: "2", Artifact: "img"}
	r := w.startArgs(w.publishArgs(spec, host+"/builds/"), nil)
	r.results = spec.Paths.Results
	got := r.wait(t)
	w.checkRun(got, "2/publish", runspec.Succeeded)
	if got.failure != "" {
		t.Fatalf("failed: %s", got.failure)
	}

	ref := w.result("2/publish", runspec.ResultImage)
	if !strings.HasPrefix(ref, host+"/builds/ci@sha256:") {
		t.Fatalf("image result %q, want the image in %s/builds/ci by digest", ref, host)
	}
	for _, s := range []string{ref, host + "/builds/ci:build-7-publish-img"} {
		parsed, err := name.ParseReference(s)
		if err != nil {
			t.Fatal(err)
		}
		img, err := remote.Image(parsed)
		if err != nil {
			t.Fatalf("pulling %s: %v", s, err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if len(cf.Config.Env) != 1 || cf.Config.Env[0] != "MARK=published" {
			t.Errorf("%s has env %q, want metadata.json's", s, cf.Config.Env)
		}
	}
	if entries, _ := os.ReadDir(w.tmpBuild); len(entries) != 0 {
		t.Errorf("the scratch directory keeps %d entries", len(entries))
	}
}

func TestPublishErrors(t *testing.T) {
	w := newWorld(t)
	w.artifact("files", map[string]string{"README": "not an image"})
	for _, tc := range []struct {
		name, artifact, registry, want string
	}{
		{"no registry", "files", "", `the task's image is the artifact "files", which must be pushed to an image registry the cluster pulls from, and the build has none`},
		{"no such artifact", "nope", "127.0.0.1:1", "missing image artifact source: nope"},
		{"no image in it", "files", "127.0.0.1:1", `publishing image artifact "files" to 127.0.0.1:1/ci: it holds no image`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := w.spec(runspec.ModePublish, "2/publish", tc.artifact)
			spec.Publish = &runspec.Publish{TaskPlanID: "2", Artifact: tc.artifact}
			r := w.startArgs(w.publishArgs(spec, tc.registry), nil)
			r.results = spec.Paths.Results
			got := r.wait(t)
			w.checkRun(got, "2/publish", runspec.Errored)
			if !strings.Contains(got.failure, tc.want) {
				t.Errorf("error %q, want it to say %q", got.failure, tc.want)
			}
			if img := w.result("2/publish", runspec.ResultImage); img != "" {
				t.Errorf("image result %q after an error", img)
			}
		})
	}
}

// A step the cluster cannot run (a resource type no image is known for) ends errored with
// the spec's error as soon as it is entered, running nothing.
func TestSpecError(t *testing.T) {
	w := newWorld(t)
	w.script("check", "#!/bin/sh\necho ran >&2\necho '[]'\n")
	spec := w.spec(runspec.ModeCheck, "1", "r")
	spec.Check = &runspec.Check{Type: "weird", Resource: "r"}
	spec.Error = "base resource type not found: weird"
	r := w.run(spec)
	w.checkRun(r, "1", runspec.Errored)
	if r.failure != spec.Error || strings.Contains(r.stderr, "ran") {
		t.Errorf("error %q, log %q: want the spec's error and nothing run", r.failure, r.stderr)
	}
}
