package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// TestWebImage: the web node where its entrypoint says, fly's archives where Concourse's
// web node serves them from (each holding the binary under the name fly sync asks for), a
// user that is not root, and the same inputs give the same image.
func TestWebImage(t *testing.T) {
	dir, flies := t.TempDir(), t.TempDir()
	web := writeBinary(t, dir, "concourse-tekton-web", "#!web")
	writeBinary(t, flies, "fly-linux-amd64", "#!fly linux")
	writeBinary(t, flies, "fly-darwin-arm64", "#!fly darwin")
	writeBinary(t, flies, "fly-windows-amd64.exe", "#!fly windows")
	writeBinary(t, flies, "README", "not a fly")
	build := func() (v1.Image, error) { return webImage(web, flies) }
	digest, cfg, files := buildImage(t, build)

	var paths []string
	archives := map[string]string{}
	for _, f := range files {
		path, rest, _ := strings.Cut(f, " ")
		paths = append(paths, path)
		_, data, _ := strings.Cut(rest, " ")
		archives[filepath.Base(path)] = data
	}
	want := []string{WebPath, FlyAssetsPath + "/fly-darwin-arm64.tgz", FlyAssetsPath + "/fly-linux-amd64.tgz", FlyAssetsPath + "/fly-windows-amd64.zip"}
	if diff := cmp.Diff(want, paths, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Fatalf("files (-want +got):\n%s", diff)
	}
	if got := untgz(t, archives["fly-linux-amd64.tgz"]); got != "fly: #!fly linux" {
		t.Errorf("fly-linux-amd64.tgz holds %q", got)
	}
	if got := unzip(t, archives["fly-windows-amd64.zip"]); got != "fly.exe: #!fly windows" {
		t.Errorf("fly-windows-amd64.zip holds %q", got)
	}
	if ep := cfg.Config.Entrypoint; len(ep) != 1 || ep[0] != WebPath || cfg.Config.User != "65532:65532" {
		t.Errorf("entrypoint %v, user %q", ep, cfg.Config.User)
	}
	if again, _, _ := buildImage(t, build); again != digest {
		t.Errorf("two builds of the same binaries differ: %s, %s", digest, again)
	}
}

func TestWebImageRefuses(t *testing.T) {
	web := writeBinary(t, t.TempDir(), "concourse-tekton-web", "#!web")
	wrongExe := t.TempDir()
	writeBinary(t, wrongExe, "fly-linux-amd64.exe", "#!fly")
	noFly := t.TempDir()
	writeBinary(t, noFly, "fly", "#!fly")
	for dir, want := range map[string]string{
		wrongExe: "a Windows fly is fly-windows-<arch>.exe",
		noFly:    "holds no fly binary",
	} {
		if _, err := webImage(web, dir); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", dir, err, want)
		}
	}
}

// untgz is "name: content" of the one file of a gzipped tar.
func untgz(t *testing.T, data string) string {
	t.Helper()
	gz, err := gzip.NewReader(strings.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	h, err := tr.Next()
	if err != nil {
		t.Fatal(err)
	}
	content, _ := io.ReadAll(tr)
	if _, err := tr.Next(); err != io.EOF {
		t.Errorf("more than one file: %v", err)
	}
	return h.Name + ": " + string(content)
}

// unzip is "name: content" of the one file of a zip.
func unzip(t *testing.T, data string) string {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader([]byte(data)), int64(len(data)))
	if err != nil || len(zr.File) != 1 {
		t.Fatalf("zip: %v, %d files", err, len(zr.File))
	}
	rc, err := zr.File[0].Open()
	if err != nil {
		t.Fatal(err)
	}
	content, _ := io.ReadAll(rc)
	return zr.File[0].Name + ": " + string(content)
}
