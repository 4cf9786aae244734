package ociimage

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Epoch is the timestamp of every file and of the image itself: a fixed time keeps the
// digest a function of the content alone.
var Epoch = time.Unix(0, 0).UTC()

// File is one entry of the image's filesystem. Exactly one kind applies: a directory when
// Mode has fs.ModeDir, a symlink to Target when Mode has fs.ModeSymlink, else a regular
// file holding Data. Parent directories that are not listed are added with mode 0755.
type File struct {
	Path   string      // path inside the image, with or without the leading slash
	Mode   fs.FileMode // type bits plus permissions, e.g. 0o755 or fs.ModeDir|0o1777
	Data   []byte      // contents of a regular file
	Target string      // target of a symlink
}

// Config is the part of the image configuration a container runtime reads.
type Config struct {
	Entrypoint []string
	Cmd        []string
	Env        []string
	User       string
	WorkingDir string
}

// Build returns a one-layer linux image holding files, owned by root, with cfg.
func Build(files []File, cfg Config) (v1.Image, error) {
	layer, err := Layer(files)
	if err != nil {
		return nil, err
	}
	img, err := mutate.Append(empty.Image, mutate.Addendum{
		Layer:   layer,
		History: v1.History{Created: v1.Time{Time: Epoch}, CreatedBy: "ociimage"},
	})
	if err != nil {
		return nil, fmt.Errorf("adding layer: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	cf = cf.DeepCopy()
	cf.OS = "linux"
	cf.Architecture = runtime.GOARCH
	cf.Created = v1.Time{Time: Epoch}
	cf.Config.Entrypoint = cfg.Entrypoint
	cf.Config.Cmd = cfg.Cmd
	cf.Config.Env = cfg.Env
	cf.Config.User = cfg.User
	cf.Config.WorkingDir = cfg.WorkingDir
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("setting config: %w", err)
	}
	return img, nil
}

// WithLabels is img with labels added to its configuration's, a label of the same key
// replaced: what describes it (org.opencontainers.image.version, .source, ...: the OCI
// annotation keys, as image labels).
func WithLabels(img v1.Image, labels map[string]string) (v1.Image, error) {
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	cf = cf.DeepCopy()
	if cf.Config.Labels == nil {
		cf.Config.Labels = map[string]string{}
	}
	for k, v := range labels {
		cf.Config.Labels[k] = v
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("setting config: %w", err)
	}
	return img, nil
}

// Layer returns an uncompressed-reproducible layer of files: entries sorted by path,
// fixed timestamps, root ownership.
func Layer(files []File) (v1.Layer, error) {
	data, err := layerTar(files)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	})
	if err != nil {
		return nil, fmt.Errorf("making layer: %w", err)
	}
	return layer, nil
}

func layerTar(files []File) ([]byte, error) {
	entries := map[string]File{}
	var errs []error
	for _, f := range files {
		p, err := cleanPath(f.Path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if _, dup := entries[p]; dup {
			errs = append(errs, fmt.Errorf("%s: listed twice", f.Path))
			continue
		}
		if f.Mode&fs.ModeSymlink != 0 && f.Target == "" {
			errs = append(errs, fmt.Errorf("%s: symlink without a target", f.Path))
		}
		if f.Mode&fs.ModeSymlink == 0 && f.Target != "" {
			errs = append(errs, fmt.Errorf("%s: target given but mode is not a symlink", f.Path))
		}
		if f.Mode&(fs.ModeDir|fs.ModeSymlink) != 0 && f.Data != nil {
			errs = append(errs, fmt.Errorf("%s: data given for a directory or symlink", f.Path))
		}
		if f.Mode.Type()&^(fs.ModeDir|fs.ModeSymlink) != 0 {
			errs = append(errs, fmt.Errorf("%s: unsupported file type %v", f.Path, f.Mode.Type()))
		}
		f.Path = p
		entries[p] = f
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	// Add missing parents so that every runtime sees a well-formed tree.
	for p := range entries {
		for dir := path.Dir(p); dir != "."; dir = path.Dir(dir) {
			if e, ok := entries[dir]; ok {
				if !e.Mode.IsDir() {
					return nil, fmt.Errorf("%s: parent %s is not a directory", p, dir)
				}
				continue
			}
			entries[dir] = File{Path: dir, Mode: fs.ModeDir | 0o755}
		}
	}
	paths := make([]string, 0, len(entries))
	for p := range entries {
		paths = append(paths, p)
	}
	sort.Strings(paths)

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, p := range paths {
		f := entries[p]
		hdr := &tar.Header{
			Name:    p,
			Mode:    tarMode(f.Mode),
			ModTime: Epoch,
			Format:  tar.FormatPAX,
		}
		switch {
		case f.Mode.IsDir():
			hdr.Typeflag = tar.TypeDir
			hdr.Name += "/"
		case f.Mode&fs.ModeSymlink != 0:
			hdr.Typeflag = tar.TypeSymlink
			hdr.Linkname = f.Target
		default:
			hdr.Typeflag = tar.TypeReg
			hdr.Size = int64(len(f.Data))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("writing %s: %w", p, err)
		}
		if hdr.Typeflag == tar.TypeReg {
			if _, err := tw.Write(f.Data); err != nil {
				return nil, fmt.Errorf("writing %s: %w", p, err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("closing layer: %w", err)
	}
	return buf.Bytes(), nil
}

// tarMode keeps the permission bits and the setuid, setgid and sticky bits, in tar's
// (Unix) numbering.
func tarMode(m fs.FileMode) int64 {
	mode := int64(m.Perm())
	if m&fs.ModeSetuid != 0 {
		mode |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		mode |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		mode |= 0o1000
	}
	return mode
}

func cleanPath(p string) (string, error) {
	c := path.Clean("/" + p)
	if c == "/" || strings.Contains(p, "..") {
		return "", fmt.Errorf("%q: not a path below the root", p)
	}
	return strings.TrimPrefix(c, "/"), nil
}

// WriteTarball writes img as a docker-save tarball tagged ref to file, atomically: a
// reader sees either the old file or the complete new one.
func WriteTarball(file, ref string, img v1.Image) error {
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return fmt.Errorf("parsing reference %q (it needs an explicit tag): %w", ref, err)
	}
	dir := filepath.Dir(file)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(file)+".*")
	if err != nil {
		return fmt.Errorf("creating temporary file: %w", err)
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	if err := tarball.Write(tag, img, tmp); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", file, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", file, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", file, err)
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return fmt.Errorf("writing %s: %w", file, err)
	}
	return nil
}

// Push uploads img to the registry reference ref. opts configure the transport and
// authentication (remote.WithAuthFromKeychain, remote.WithTransport, ...).
func Push(ctx context.Context, ref string, img v1.Image, opts ...remote.Option) error {
	r, err := name.ParseReference(ref)
	if err != nil {
		return fmt.Errorf("parsing reference %q: %w", ref, err)
	}
	if err := remote.Write(r, img, append([]remote.Option{remote.WithContext(ctx)}, opts...)...); err != nil {
		return fmt.Errorf("pushing %s: %w", ref, err)
	}
	return nil
}
