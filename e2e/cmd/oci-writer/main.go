// Command oci-writer writes an image in the layouts a build task leaves for a later task
// to run, for the e2e tests of images from artifacts: it reads a rootfs/ directory with its
// metadata.json (as registry-image's `format: rootfs` writes them) and writes the same
// image as a docker archive, an OCI layout directory, or an OCI layout in one tar.
//
//	oci-writer -in DIR [-env K=V]... -format docker-archive|oci-layout|oci-tar -o PATH
package main

import (
	"archive/tar"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/concourse-tekton/concourse-tekton/internal/ociimage"
)

type envFlag []string

func (e *envFlag) String() string     { return strings.Join(*e, ",") }
func (e *envFlag) Set(v string) error { *e = append(*e, v); return nil }

func main() {
	in := flag.String("in", "", "a directory holding rootfs/ and metadata.json")
	format := flag.String("format", "", "docker-archive, oci-layout or oci-tar")
	out := flag.String("o", "", "the file (docker-archive, oci-tar) or directory (oci-layout) to write")
	var env envFlag
	flag.Var(&env, "env", "an environment variable to add to the image's, K=V (repeatable)")
	flag.Parse()
	if err := run(*in, *format, *out, env); err != nil {
		fmt.Fprintf(os.Stderr, "oci-writer: %v\n", err)
		os.Exit(1)
	}
}

func run(in, format, out string, env []string) error {
	if in == "" || out == "" {
		return fmt.Errorf("give -in and -o")
	}
	scratch, err := os.MkdirTemp("", "oci-writer-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	img, _, err := ociimage.FromArtifact(in, scratch)
	if err != nil {
		return err
	}
	if len(env) > 0 {
		cf, err := img.ConfigFile()
		if err != nil {
			return err
		}
		cf = cf.DeepCopy()
		cf.Config.Env = append(cf.Config.Env, env...)
		if img, err = mutate.ConfigFile(img, cf); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	switch format {
	case "docker-archive":
		return ociimage.WriteTarball(out, "oci-writer.invalid/image:v1", img)
	case "oci-layout", "oci-tar":
		dir := out
		if format == "oci-tar" {
			dir = filepath.Join(scratch, "layout")
		}
		p, err := layout.Write(dir, empty.Index)
		if err != nil {
			return err
		}
		if err := p.AppendImage(img); err != nil {
			return err
		}
		if format == "oci-tar" {
			return tarDir(dir, out)
		}
		return nil
	}
	return fmt.Errorf("unknown -format %q: docker-archive, oci-layout or oci-tar", format)
}

// tarDir archives the files under dir into file, named relative to dir.
func tarDir(dir, file string) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		hdr, err := tar.FileInfoHeader(fi, "")
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(rel)
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			return nil
		}
		src, err := os.Open(p)
		if err != nil {
			return err
		}
		defer src.Close()
		_, err = io.Copy(tw, src)
		return err
	})
	if err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return f.Close()
}
