package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/concourse-tekton/concourse-tekton/internal/ociimage"
)

// Where the web node's image holds the web node and fly's archives: Concourse's web node
// serves fly-<platform>-<arch>.tgz (.zip for Windows) from fly-assets beside its bin
// directory, for the UI's download links and fly sync.
const (
	WebPath       = "/usr/local/concourse/bin/concourse-tekton-web"
	FlyAssetsPath = "/usr/local/concourse/fly-assets"
)

// flyBinary is a fly binary's name in -fly-dir: fly-<os>-<arch>, .exe for Windows.
var flyBinary = regexp.MustCompile(`^fly-([a-z0-9]+)-([a-z0-9]+)(\.exe)?$`)

// webImage is the web node's image: the static web node, its UI embedded, and an archive
// of each fly binary in flyDir, as Concourse's own image has them. It runs as a user that
// is not root (Pod Security "restricted").
func webImage(binary, flyDir string) (v1.Image, error) {
	data, err := os.ReadFile(binary)
	if err != nil {
		return nil, err
	}
	files := []ociimage.File{{Path: WebPath, Mode: 0o755, Data: data}}
	assets, err := flyAssets(flyDir)
	if err != nil {
		return nil, err
	}
	files = append(files, assets...)
	return ociimage.Build(files, ociimage.Config{Entrypoint: []string{WebPath}, Cmd: []string{"web"}, User: "65532:65532"})
}

// flyAssets packs each fly-<os>-<arch>[.exe] of dir into the archive the web node serves
// for it, reproducibly (fixed times, root ownership); none when dir is empty.
func flyAssets(dir string) ([]ociimage.File, error) {
	if dir == "" {
		return nil, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []ociimage.File
	for _, e := range entries {
		m := flyBinary.FindStringSubmatch(e.Name())
		if m == nil || !e.Type().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		goos, arch, windows := m[1], m[2], m[3] != ""
		if windows != (goos == "windows") {
			return nil, fmt.Errorf("%s: a Windows fly is fly-windows-<arch>.exe, any other has no .exe", e.Name())
		}
		name, archive, pack := "fly", "fly-"+goos+"-"+arch+".tgz", tgz
		if windows {
			name, archive, pack = "fly.exe", "fly-"+goos+"-"+arch+".zip", zipped
		}
		packed, err := pack(name, data)
		if err != nil {
			return nil, fmt.Errorf("packing %s: %w", e.Name(), err)
		}
		files = append(files, ociimage.File{Path: FlyAssetsPath + "/" + archive, Mode: 0o644, Data: packed})
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s holds no fly binary (fly-<os>-<arch>, fly-windows-<arch>.exe)", dir)
	}
	slices.SortFunc(files, func(a, b ociimage.File) int { return strings.Compare(a.Path, b.Path) })
	return files, nil
}

// tgz is a gzipped tar of one executable file, name, holding data.
func tgz(name string, data []byte) ([]byte, error) {
	var buf bytes.Buffer
	gz, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(gz)
	h := &tar.Header{Name: name, Mode: 0o755, Size: int64(len(data)), ModTime: ociimage.Epoch, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
	if err := tw.WriteHeader(h); err != nil {
		return nil, err
	}
	if _, err := tw.Write(data); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// zipped is a zip of one executable file, name, holding data.
func zipped(name string, data []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	h := &zip.FileHeader{Name: name, Method: zip.Deflate, Modified: ociimage.Epoch}
	h.SetMode(0o755)
	w, err := zw.CreateHeader(h)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(data); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
