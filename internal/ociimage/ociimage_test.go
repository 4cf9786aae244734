package ociimage

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"io/fs"
	"log"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

var sample = []File{
	{Path: "/bin/busybox", Mode: 0o755, Data: []byte("#!busybox")},
	{Path: "bin/sh", Mode: fs.ModeSymlink | 0o777, Target: "busybox"},
	{Path: "/tmp", Mode: fs.ModeDir | fs.ModeSticky | 0o777},
	{Path: "/etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/bin/sh\n")},
}

var sampleConfig = Config{
	Entrypoint: []string{"/bin/sh"},
	Cmd:        []string{"-c", "true"},
	Env:        []string{"PATH=/bin"},
	User:       "0",
	WorkingDir: "/tmp",
}

func mustBuild(t *testing.T, files []File, cfg Config) v1.Image {
	t.Helper()
	img, err := Build(files, cfg)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return img
}

func mustDigest(t *testing.T, img v1.Image) v1.Hash {
	t.Helper()
	d, err := img.Digest()
	if err != nil {
		t.Fatalf("Digest: %v", err)
	}
	return d
}

// entry is what a test compares of one tar entry.
type entry struct {
	Name     string
	Type     byte
	Mode     int64
	Linkname string
	Data     string
	Unix     int64
}

func contents(t *testing.T, img v1.Image) []entry {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	var got []entry
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return got
		}
		if err != nil {
			t.Fatalf("reading layer: %v", err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("reading %s: %v", h.Name, err)
		}
		got = append(got, entry{h.Name, h.Typeflag, h.Mode, h.Linkname, string(data), h.ModTime.Unix()})
	}
}

func TestBuildContents(t *testing.T) {
	got := contents(t, mustBuild(t, sample, sampleConfig))
	want := []entry{
		{Name: "bin", Type: tar.TypeDir, Mode: 0o755},
		{Name: "bin/busybox", Type: tar.TypeReg, Mode: 0o755, Data: "#!busybox"},
		{Name: "bin/sh", Type: tar.TypeSymlink, Mode: 0o777, Linkname: "busybox"},
		{Name: "etc", Type: tar.TypeDir, Mode: 0o755},
		{Name: "etc/passwd", Type: tar.TypeReg, Mode: 0o644, Data: "root:x:0:0:root:/root:/bin/sh\n"},
		{Name: "tmp", Type: tar.TypeDir, Mode: 0o1777},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("layer contents (-want +got):\n%s", diff)
	}
}

func TestBuildConfig(t *testing.T) {
	cf, err := mustBuild(t, sample, sampleConfig).ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	got := Config{cf.Config.Entrypoint, cf.Config.Cmd, cf.Config.Env, cf.Config.User, cf.Config.WorkingDir}
	if diff := cmp.Diff(sampleConfig, got); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
	if cf.OS != "linux" || !cf.Created.Time.Equal(Epoch) {
		t.Errorf("os %q created %v, want linux at %v", cf.OS, cf.Created.Time, Epoch)
	}
}

func TestWithLabels(t *testing.T) {
	img, err := WithLabels(mustBuild(t, sample, sampleConfig), map[string]string{"org.opencontainers.image.version": "v1"})
	if err != nil {
		t.Fatal(err)
	}
	img, err = WithLabels(img, map[string]string{"org.opencontainers.image.version": "v2", "org.opencontainers.image.revision": "abc"})
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"org.opencontainers.image.version": "v2", "org.opencontainers.image.revision": "abc"}
	if diff := cmp.Diff(want, cf.Config.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(sampleConfig.Entrypoint, cf.Config.Entrypoint); diff != "" {
		t.Errorf("entrypoint (-want +got):\n%s", diff)
	}
}

func TestBuildIsReproducible(t *testing.T) {
	reversed := make([]File, len(sample))
	for i, f := range sample {
		reversed[len(sample)-1-i] = f
	}
	first := mustDigest(t, mustBuild(t, sample, sampleConfig))
	for _, tc := range []struct {
		name  string
		files []File
	}{
		{"same input", sample},
		{"entries in another order", reversed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := mustDigest(t, mustBuild(t, tc.files, sampleConfig)); got != first {
				t.Errorf("digest %v, want %v", got, first)
			}
		})
	}
	changed := append([]File{}, sample...)
	changed[0].Data = []byte("other")
	if mustDigest(t, mustBuild(t, changed, sampleConfig)) == first {
		t.Error("different content gave the same digest")
	}
}

func TestBuildRejects(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files []File
		want  string
	}{
		{"root", []File{{Path: "/", Mode: fs.ModeDir}}, "not a path below the root"},
		{"dot-dot", []File{{Path: "a/../../b", Mode: 0o644}}, "not a path below the root"},
		{"duplicate", []File{{Path: "a", Mode: 0o644}, {Path: "/a", Mode: 0o644}}, "listed twice"},
		{"symlink without target", []File{{Path: "a", Mode: fs.ModeSymlink}}, "without a target"},
		{"target on a file", []File{{Path: "a", Mode: 0o644, Target: "b"}}, "not a symlink"},
		{"data on a dir", []File{{Path: "a", Mode: fs.ModeDir, Data: []byte("x")}}, "data given"},
		{"device", []File{{Path: "a", Mode: fs.ModeDevice}}, "unsupported file type"},
		{"file as parent", []File{{Path: "a", Mode: 0o644}, {Path: "a/b", Mode: 0o644}}, "is not a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Build(tc.files, Config{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestWriteTarball(t *testing.T) {
	img := mustBuild(t, sample, sampleConfig)
	file := filepath.Join(t.TempDir(), "img.tar")
	const ref = "e2e.invalid/sample:v1"
	if err := WriteTarball(file, ref, img); err != nil {
		t.Fatalf("WriteTarball: %v", err)
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	back, err := tarball.ImageFromPath(file, &tag)
	if err != nil {
		t.Fatalf("reading the tarball back: %v", err)
	}
	if got, want := mustDigest(t, back), mustDigest(t, img); got != want {
		t.Errorf("digest read back %v, want %v", got, want)
	}
	if matches, _ := filepath.Glob(filepath.Join(filepath.Dir(file), ".*")); len(matches) > 0 {
		t.Errorf("temporary files left behind: %v", matches)
	}
	if err := WriteTarball(file, "e2e.invalid/sample", img); err == nil {
		t.Error("a reference without a tag was accepted")
	}
}

func TestPush(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	img := mustBuild(t, sample, sampleConfig)
	ref := strings.TrimPrefix(srv.URL, "http://") + "/sample:v1"
	if err := Push(context.Background(), ref, img); err != nil {
		t.Fatalf("Push: %v", err)
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	pulled, err := remote.Image(r)
	if err != nil {
		t.Fatalf("pulling back: %v", err)
	}
	if got, want := mustDigest(t, pulled), mustDigest(t, img); got != want {
		t.Errorf("pulled digest %v, want %v", got, want)
	}
}
