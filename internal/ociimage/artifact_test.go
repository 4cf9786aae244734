package ociimage

import (
	"archive/tar"
	"context"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// writeFiles makes a tree: a path ending in / is a directory, "->x" a symlink to x.
func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		switch {
		case strings.HasSuffix(p, "/"):
			err := os.MkdirAll(full, 0o755)
			if err != nil {
				t.Fatal(err)
			}
		case strings.HasPrefix(content, "->"):
			if err := os.Symlink(strings.TrimPrefix(content, "->"), full); err != nil {
				t.Fatal(err)
			}
		default:
			if err := os.WriteFile(full, []byte(content), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestFromArtifactRootfs(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"rootfs/bin/hello": "#!/bin/sh\necho hi\n",
		"rootfs/bin/sh":    "->hello",
		"rootfs/tmp/":      "",
		"metadata.json":    `{"env": ["PATH=/bin", "MARK=rootfs"], "user": "1000"}`,
	})
	if err := os.Link(filepath.Join(dir, "rootfs/bin/hello"), filepath.Join(dir, "rootfs/bin/hello2")); err != nil {
		t.Fatal(err)
	}
	img, kind, err := FromArtifact(dir, t.TempDir())
	if err != nil {
		t.Fatalf("FromArtifact: %v", err)
	}
	if kind != LayoutRootfs {
		t.Errorf("layout %q, want %q", kind, LayoutRootfs)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cf.Config.Env, " "); got != "PATH=/bin MARK=rootfs" || cf.Config.User != "1000" || cf.OS != "linux" {
		t.Errorf("config env %q user %q os %q, want metadata.json's on linux", got, cf.Config.User, cf.OS)
	}
	var names []string
	for _, e := range contents(t, img) {
		desc := e.Name
		switch e.Type {
		case tar.TypeSymlink:
			desc += " -> " + e.Linkname
		case tar.TypeLink:
			desc += " => " + e.Linkname
		case tar.TypeReg:
			desc += " " + e.Data
		}
		names = append(names, desc)
	}
	want := []string{"bin", "bin/hello #!/bin/sh\necho hi\n", "bin/hello2 => bin/hello", "bin/sh -> hello", "tmp"}
	if strings.Join(names, "|") != strings.Join(want, "|") {
		t.Errorf("layer holds\n%q\nwant\n%q", names, want)
	}
	// The same tree is the same image: the layer is read again for each use.
	again, _, err := FromArtifact(dir, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if mustDigest(t, again) != mustDigest(t, img) {
		t.Error("two reads of one rootfs gave two digests")
	}
}

func TestFromArtifactArchives(t *testing.T) {
	img := mustBuild(t, sample, sampleConfig)
	want := mustDigest(t, img)

	archive := t.TempDir()
	if err := WriteTarball(filepath.Join(archive, "image.tar"), "example.invalid/xx:v1", img); err != nil {
		t.Fatal(err)
	}

	layoutDir := t.TempDir()
	writeLayout := func(dir string) {
		p, err := layout.Write(dir, empty.Index)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.AppendImage(img); err != nil {
			t.Fatal(err)
		}
	}
	writeLayout(filepath.Join(layoutDir, "image"))
	atRoot := t.TempDir()
	writeLayout(atRoot)

	// An OCI layout as one tar, as registry-image's `format: oci` may write it.
	ociTar := t.TempDir()
	tarTree(t, atRoot, filepath.Join(ociTar, "image.tar"))

	for _, tc := range []struct{ name, dir, kind string }{
		{"docker archive", archive, LayoutArchive},
		{"OCI layout in image/", layoutDir, LayoutOCI},
		{"OCI layout at the root", atRoot, LayoutOCI},
		{"OCI layout in image.tar", ociTar, LayoutOCI},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, kind, err := FromArtifact(tc.dir, t.TempDir())
			if err != nil {
				t.Fatalf("FromArtifact: %v", err)
			}
			if kind != tc.kind {
				t.Errorf("layout %q, want %q", kind, tc.kind)
			}
			if d := mustDigest(t, got); d != want {
				t.Errorf("digest %v, want the image's own %v", d, want)
			}
		})
	}
}

// tarTree archives the files under dir into file, paths relative to dir.
func tarTree(t *testing.T, dir, file string) {
	t.Helper()
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	err = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		hdr, err := tar.FileInfoHeader(fi, "")
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(rel)
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			_, err = tw.Write(data)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestFromArtifactRefuses(t *testing.T) {
	empty := t.TempDir()
	writeFiles(t, empty, map[string]string{"README": "no image here"})
	badTar := t.TempDir()
	writeFiles(t, badTar, map[string]string{"image.tar": ""})
	escaping := t.TempDir()
	{
		f, err := os.Create(filepath.Join(escaping, "image.tar"))
		if err != nil {
			t.Fatal(err)
		}
		tw := tar.NewWriter(f)
		for _, n := range []string{"oci-layout", "../escape"} {
			if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: 2, Typeflag: tar.TypeReg}); err != nil {
				t.Fatal(err)
			}
			tw.Write([]byte("{}"))
		}
		tw.Close()
		f.Close()
	}
	for _, tc := range []struct{ name, dir, want string }{
		{"no image", empty, "it holds no image"},
		{"an empty image.tar", badTar, "neither manifest.json"},
		{"a layout tar reaching out", escaping, "escape"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			scratch := t.TempDir()
			_, _, err := FromArtifact(tc.dir, scratch)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to say %q", err, tc.want)
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(scratch), "escape")); err == nil {
				t.Error("a file was written outside the scratch directory")
			}
		})
	}
}

func TestPublish(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	img := mustBuild(t, sample, sampleConfig)
	ref, err := Publish(context.Background(), img, host+"/builds/ns", "ns-build-1-publish")
	if err != nil {
		t.Fatalf("Publish: %v", err)
	}
	if want := host + "/builds/ns@" + mustDigest(t, img).String(); ref != want {
		t.Errorf("Publish = %q, want %q", ref, want)
	}
	for _, r := range []string{ref, host + "/builds/ns:ns-build-1-publish"} {
		parsed, err := name.ParseReference(r)
		if err != nil {
			t.Fatal(err)
		}
		pulled, err := remote.Image(parsed)
		if err != nil {
			t.Fatalf("pulling %s: %v", r, err)
		}
		if mustDigest(t, pulled) != mustDigest(t, img) {
			t.Errorf("%s is another image", r)
		}
	}
	if _, err := Publish(context.Background(), img, "Not A Repo", "t"); err == nil || !strings.Contains(err.Error(), "invalid image repository") {
		t.Errorf("a bad repository: err = %v", err)
	}
}
