package ociimage

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/concourse-tekton/concourse-tekton/internal/tarstream"
)

// The layouts an artifact may hold an image in, as Concourse's image steps write them.
const (
	// LayoutRootfs is a `rootfs/` directory and an optional `metadata.json` ({"env": [...],
	// "user": "..."}): registry-image's `format: rootfs`, and what Concourse runs a task's
	// `image:` artifact from.
	LayoutRootfs = "rootfs"
	// LayoutArchive is an `image.tar` docker archive (`docker save`, registry-image's
	// `format: oci`, oci-build-task's output).
	LayoutArchive = "docker archive"
	// LayoutOCI is an OCI image layout: a directory with `oci-layout` and `index.json`
	// (the artifact's root or its `image/`), or an `image.tar` holding one.
	LayoutOCI = "OCI layout"
)

// FromArtifact reads the image an artifact holds, in whichever layout it is (see the
// Layout constants), and says which. scratch is an empty directory for unpacking an
// archived OCI layout; nothing in dir is written.
func FromArtifact(dir, scratch string) (v1.Image, string, error) {
	tarPath := filepath.Join(dir, "image.tar")
	if fi, err := os.Stat(tarPath); err == nil && fi.Mode().IsRegular() {
		oci, err := holdsOCILayout(tarPath)
		if err != nil {
			return nil, "", err
		}
		if !oci {
			img, err := tarball.ImageFromPath(tarPath, nil)
			if err != nil {
				return nil, "", fmt.Errorf("reading image.tar as a docker archive: %w", err)
			}
			return img, LayoutArchive, nil
		}
		if err := untar(tarPath, scratch); err != nil {
			return nil, "", fmt.Errorf("unpacking the OCI layout of image.tar: %w", err)
		}
		img, err := fromLayout(scratch)
		return img, LayoutOCI, err
	}
	for _, d := range []string{dir, filepath.Join(dir, "image")} {
		if fi, err := os.Stat(filepath.Join(d, "oci-layout")); err == nil && fi.Mode().IsRegular() {
			img, err := fromLayout(d)
			return img, LayoutOCI, err
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "rootfs")); err == nil && fi.IsDir() {
		img, err := fromRootfs(dir)
		return img, LayoutRootfs, err
	}
	return nil, "", errors.New("it holds no image: Concourse runs an image artifact from rootfs/ (with metadata.json), image.tar (a docker archive or an OCI layout) or an OCI layout directory (oci-layout and index.json, at its root or in image/)")
}

// holdsOCILayout tells an image.tar holding an OCI layout (index.json) from a docker
// archive (manifest.json).
func holdsOCILayout(file string) (bool, error) {
	f, err := os.Open(file)
	if err != nil {
		return false, err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return false, errors.New("image.tar holds neither manifest.json (a docker archive) nor index.json (an OCI layout)")
		}
		if err != nil {
			return false, fmt.Errorf("reading image.tar: %w", err)
		}
		switch strings.TrimPrefix(hdr.Name, "./") {
		case "manifest.json":
			return false, nil
		case "index.json", "oci-layout":
			return true, nil
		}
	}
}

// untar unpacks the regular files and directories of an archived OCI layout into dir,
// confined to it: an OCI layout has nothing else.
func untar(file, dir string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Clean(strings.TrimPrefix(hdr.Name, "./"))
		if name == "." {
			continue
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := root.MkdirAll(name, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := root.MkdirAll(filepath.Dir(name), 0o755); err != nil {
				return err
			}
			out, err := root.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
			if err != nil {
				return err
			}
			_, err = io.Copy(out, tr)
			if err := errors.Join(err, out.Close()); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s: an OCI layout holds only files and directories", hdr.Name)
		}
	}
}

// fromLayout is the image of an OCI layout: its only image, or among several (a
// multi-platform index) the one for linux on this machine's architecture.
func fromLayout(dir string) (v1.Image, error) {
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the OCI layout: %w", err)
	}
	return pickImage(idx, 0)
}

func pickImage(idx v1.ImageIndex, depth int) (v1.Image, error) {
	if depth > 4 {
		return nil, errors.New("the OCI layout's indexes nest too deep")
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("reading the OCI layout's index: %w", err)
	}
	var candidates []v1.Descriptor
	for _, d := range m.Manifests {
		if d.Platform == nil || d.Platform.OS == "" || d.Platform.OS == "linux" && d.Platform.Architecture == runtime.GOARCH {
			candidates = append(candidates, d)
		}
	}
	if len(candidates) == 0 {
		return nil, fmt.Errorf("the OCI layout has no image for linux/%s", runtime.GOARCH)
	}
	if len(candidates) > 1 {
		return nil, fmt.Errorf("the OCI layout has %d images and no platform tells which to run", len(candidates))
	}
	d := candidates[0]
	if d.MediaType.IsIndex() {
		child, err := idx.ImageIndex(d.Digest)
		if err != nil {
			return nil, err
		}
		return pickImage(child, depth+1)
	}
	return idx.Image(d.Digest)
}

// metadata is registry-image's metadata.json beside rootfs/.
type metadata struct {
	Env  []string `json:"env"`
	User string   `json:"user"`
}

// fromRootfs is an image of one layer holding rootfs/ as it is on disk (owners, modes,
// links), with the environment and user of metadata.json.
func fromRootfs(dir string) (v1.Image, error) {
	var md metadata
	if data, err := os.ReadFile(filepath.Join(dir, "metadata.json")); err == nil {
		if err := json.Unmarshal(data, &md); err != nil {
			return nil, fmt.Errorf("reading metadata.json: %w", err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	rootfs := filepath.Join(dir, "rootfs")
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(TarDir(rootfs, pw)) }()
		return pr, nil
	})
	if err != nil {
		return nil, fmt.Errorf("making the rootfs layer: %w", err)
	}
	img, err := mutate.Append(empty.Image, mutate.Addendum{Layer: layer, History: v1.History{Created: v1.Time{Time: Epoch}, CreatedBy: "concourse-tekton: rootfs"}})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Created = "linux", runtime.GOARCH, v1.Time{Time: Epoch}
	cf.Config.Env, cf.Config.User = md.Env, md.User
	return mutate.ConfigFile(img, cf)
}

// TarDir writes the tree under dir as a layer: entries in path order, owners, modes and
// times as on disk, hard links as links to the first path of their file, sockets left
// out (a runtime makes its own).
func TarDir(dir string, w io.Writer) error {
	tw := tar.NewWriter(w)
	links := map[[2]uint64]string{}
	err := walkSorted(dir, "", func(rel string, fi fs.FileInfo) error {
		if fi.Mode()&fs.ModeSocket != 0 {
			return nil
		}
		full := filepath.Join(dir, rel)
		// Owners as on disk: the ids are what a runtime reads.
		hdr, err := tarstream.Header(full, filepath.ToSlash(rel), fi)
		if err != nil {
			return err
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && fi.Mode().IsRegular() && st.Nlink > 1 {
			key := [2]uint64{uint64(st.Dev), st.Ino}
			if first, seen := links[key]; seen {
				hdr.Typeflag, hdr.Linkname, hdr.Size = tar.TypeLink, first, 0
			} else {
				links[key] = hdr.Name
			}
		}
		return tarstream.WriteEntry(tw, hdr, full)
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// walkSorted calls fn for every entry under dir/rel, parents before children, names in
// byte order (the same tree gives the same layer), never following a symlink.
func walkSorted(dir, rel string, fn func(rel string, fi fs.FileInfo) error) error {
	entries, err := os.ReadDir(filepath.Join(dir, rel))
	if err != nil {
		return err
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	for _, e := range entries {
		child := filepath.Join(rel, e.Name())
		fi, err := e.Info()
		if err != nil {
			return err
		}
		if err := fn(child, fi); err != nil {
			return err
		}
		if fi.IsDir() {
			if err := walkSorted(dir, child, fn); err != nil {
				return err
			}
		}
	}
	return nil
}

// Publish pushes img to repository (REGISTRY/PATH) under tag, and returns the reference
// that names it by digest, which a pod then pulls.
func Publish(ctx context.Context, img v1.Image, repository, tag string, opts ...remote.Option) (string, error) {
	repo, err := name.NewRepository(repository)
	if err != nil {
		return "", fmt.Errorf("invalid image repository %q: %w", repository, err)
	}
	digest, err := img.Digest()
	if err != nil {
		return "", err
	}
	if err := remote.Write(repo.Tag(tag), img, append([]remote.Option{remote.WithContext(ctx)}, opts...)...); err != nil {
		return "", fmt.Errorf("pushing to %s: %w", repo, err)
	}
	return repo.Digest(digest.String()).String(), nil
}
