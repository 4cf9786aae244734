package main

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// TestRunnerImage: the image holds the binary where the translator's Tasks run it from, and
// the image tool where publish steps run it, and the same binaries give the same image,
// byte for byte.
func TestRunnerImage(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "concourse-runner")
	if err := os.WriteFile(bin, []byte("#!runner"), 0o755); err != nil {
		t.Fatal(err)
	}
	tool := filepath.Join(dir, "concourse-image")
	if err := os.WriteFile(tool, []byte("#!image-tool"), 0o755); err != nil {
		t.Fatal(err)
	}
	var digests []string
	for i := 0; i < 2; i++ {
		out := filepath.Join(dir, "runner.tar")
		if err := run(bin, tool, "example.invalid/runner:test", out, false); err != nil {
			t.Fatal(err)
		}
		img, err := tarball.ImageFromPath(out, nil)
		if err != nil {
			t.Fatal(err)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		digests = append(digests, d.String())
		layers, err := img.Layers()
		if err != nil || len(layers) != 1 {
			t.Fatalf("layers: %v %v", len(layers), err)
		}
		rc, err := layers[0].Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		found, foundTool := false, false
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if "/"+h.Name == runspec.RunnerBinary && h.Mode&0o111 != 0 {
				data, _ := io.ReadAll(tr)
				found = string(data) == "#!runner"
			}
			if "/"+h.Name == runspec.ImageTool && h.Mode&0o111 != 0 {
				data, _ := io.ReadAll(tr)
				foundTool = string(data) == "#!image-tool"
			}
		}
		rc.Close()
		if !found || !foundTool {
			t.Errorf("the image lacks an executable %s with the runner (%v) or %s with the image tool (%v)", runspec.RunnerBinary, found, runspec.ImageTool, foundTool)
		}
		cfg, err := img.ConfigFile()
		if err != nil || len(cfg.Config.Entrypoint) != 1 || cfg.Config.Entrypoint[0] != runspec.RunnerBinary {
			t.Errorf("entrypoint = %v (%v)", cfg.Config.Entrypoint, err)
		}
	}
	if digests[0] != digests[1] {
		t.Errorf("two builds of the same binary differ: %v", digests)
	}
	if err := run(bin, tool, "example.invalid/runner:test", "", false); err == nil {
		t.Errorf("no output and no push should be an error")
	}
}
