package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/concourse-tekton/concourse-tekton/e2e/images"
	"github.com/concourse-tekton/concourse-tekton/internal/ociimage"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	out := flag.String("out", "", "directory to write the tarballs to")
	prefix := flag.String("prefix", "e2e.invalid", "registry part of every reference (never pulled from)")
	busybox := flag.String("busybox", "/bin/busybox", "a static busybox binary")
	pause := flag.String("pause", "", "the pause binary")
	tektonDir := flag.String("tekton", "", "directory holding Tekton's entrypoint, nop and workingdirinit binaries")
	tektonTag := flag.String("tekton-tag", "", "tag of Tekton's images (its version)")
	mock := flag.String("mock", "", "the mock resource binary")
	probe := flag.String("probe", "", "the probe binary (e2e/cmd/probe)")
	gitResource := flag.String("git-resource", "", "the git resource binary (optional: no git resource image without it)")
	bash := flag.String("bash", "/bin/bash", "the host's bash to put in the mock resource image, with its libraries (empty: a stand-in that runs busybox's sh)")
	gitBinaries := flag.String("git", "/usr/bin/git,/usr/lib/git-core/git-daemon", "the host's git binaries to put in the git resource image, with their libraries")
	flag.Parse()
	if *out == "" || *pause == "" || *tektonDir == "" || *tektonTag == "" || *mock == "" || *probe == "" {
		flag.Usage()
		return fmt.Errorf("-out, -pause, -tekton, -tekton-tag, -mock and -probe are required")
	}

	bb, err := os.ReadFile(*busybox)
	if err != nil {
		return fmt.Errorf("reading busybox: %w", err)
	}
	list, err := exec.Command(*busybox, "--list-full").Output()
	if err != nil {
		return fmt.Errorf("listing busybox applets: %w", err)
	}
	applets := strings.Fields(string(list))
	read := func(p string) ([]byte, error) {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", p, err)
		}
		return b, nil
	}

	var all []images.Image
	p, err := read(*pause)
	if err != nil {
		return err
	}
	all = append(all, images.Pause(*prefix+"/pause:3.10", p), images.Busybox(*prefix+"/busybox:1.35", bb, applets),
		images.TektonShell(*prefix+"/tekton/shell:1.35", bb, applets))
	for _, name := range []string{"entrypoint", "nop", "workingdirinit"} {
		b, err := read(filepath.Join(*tektonDir, name))
		if err != nil {
			return err
		}
		all = append(all, images.Tekton(*prefix+"/tekton/"+name+":"+*tektonTag, name, b))
	}
	m, err := read(*mock)
	if err != nil {
		return err
	}
	var host []ociimage.File
	if *bash != "" {
		if host, err = hostFiles([]string{*bash}); err != nil {
			return err
		}
		// At the path scripts name, whatever the host's is.
		host[0].Path = "/bin/bash"
	}
	all = append(all, images.Resource(*prefix+"/mock-resource:v1", m, bb, applets, host...))
	pr, err := read(*probe)
	if err != nil {
		return err
	}
	all = append(all, images.Probe(*prefix+"/probe:v1", pr, bb, applets))
	if *gitResource != "" {
		g, err := read(*gitResource)
		if err != nil {
			return err
		}
		files, err := hostFiles(strings.Split(*gitBinaries, ","))
		if err != nil {
			return err
		}
		all = append(all, images.GitResource(*prefix+"/git-resource:v1", g, bb, applets, files))
	}

	if err := os.MkdirAll(*out, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", *out, err)
	}
	for _, img := range all {
		built, err := ociimage.Build(img.Files, img.Config)
		if err != nil {
			return fmt.Errorf("building %s: %w", img.Ref, err)
		}
		file := filepath.Join(*out, fileName(img.Ref)+".tar")
		if err := ociimage.WriteTarball(file, img.Ref, built); err != nil {
			return err
		}
		fmt.Printf("%s %s\n", img.Ref, file)
	}
	return nil
}

// hostFiles reads binaries and the libraries ldd says they load, each at its path on
// this host (symlinks followed), so that they run the same in an image.
func hostFiles(binaries []string) ([]ociimage.File, error) {
	seen := map[string]bool{}
	var files []ociimage.File
	for _, bin := range binaries {
		out, err := exec.Command("ldd", bin).Output()
		if err != nil {
			return nil, fmt.Errorf("ldd %s: %w", bin, err)
		}
		for _, p := range append([]string{bin}, images.LddPaths(string(out))...) {
			if seen[p] {
				continue
			}
			seen[p] = true
			data, err := os.ReadFile(p)
			if err != nil {
				return nil, fmt.Errorf("reading %s: %w", p, err)
			}
			files = append(files, ociimage.File{Path: p, Mode: 0o755, Data: data})
		}
	}
	return files, nil
}

// fileName turns "e2e.invalid/tekton/nop:v1" into "tekton-nop".
func fileName(ref string) string {
	r := ref[strings.Index(ref, "/")+1:]
	r = r[:strings.LastIndex(r, ":")]
	return strings.ReplaceAll(r, "/", "-")
}
