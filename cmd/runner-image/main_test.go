package main

import (
	"archive/tar"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// writeBinary writes a stand-in binary holding content into dir.
func writeBinary(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// buildImage runs the command's build into a tarball and reads it back: its digest, its
// config, and its one layer's regular files as "path mode content".
func buildImage(t *testing.T, build func() (v1.Image, error)) (string, *v1.ConfigFile, []string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "image.tar")
	if err := run(build, "example.invalid/image:test", out, false); err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	digest, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers: %v %v", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var files []string
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			data, _ := io.ReadAll(tr)
			files = append(files, fmt.Sprintf("/%s %o %s", h.Name, h.Mode, data))
		}
	}
	return digest.String(), cfg, files
}

// TestRunnerImage: the image holds the binary where the translator's Tasks run it from, and
// the image tool where publish steps run it, and the same binaries give the same image,
// byte for byte.
func TestRunnerImage(t *testing.T) {
	dir := t.TempDir()
	bin := writeBinary(t, dir, "concourse-runner", "#!runner")
	tool := writeBinary(t, dir, "concourse-image", "#!image-tool")
	build := func() (v1.Image, error) { return runnerImage(bin, tool) }
	digest, cfg, files := buildImage(t, build)
	want := []string{runspec.ImageTool + " 755 #!image-tool", runspec.RunnerBinary + " 755 #!runner"} // in path order
	if diff := cmp.Diff(want, files); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	if ep := cfg.Config.Entrypoint; len(ep) != 1 || ep[0] != runspec.RunnerBinary {
		t.Errorf("entrypoint = %v", ep)
	}
	if again, _, _ := buildImage(t, build); again != digest {
		t.Errorf("two builds of the same binary differ: %s, %s", digest, again)
	}
	if err := run(build, "example.invalid/runner:test", "", false); err == nil {
		t.Errorf("no output and no push should be an error")
	}
}

// TestCLIImage: the command's image runs it, as a user that is not root.
func TestCLIImage(t *testing.T) {
	bin := writeBinary(t, t.TempDir(), "concourse-tekton", "#!cli")
	_, cfg, files := buildImage(t, func() (v1.Image, error) { return cliImage(bin) })
	if diff := cmp.Diff([]string{CLIPath + " 755 #!cli"}, files); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	if ep := cfg.Config.Entrypoint; len(ep) != 1 || ep[0] != CLIPath || cfg.Config.User != "65532:65532" {
		t.Errorf("entrypoint %v, user %q", ep, cfg.Config.User)
	}
}
