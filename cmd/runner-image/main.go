// Command runner-image builds the step runner's container image, reproducibly and without
// a Docker engine: one layer holding the static runner binary at the path the translator's
// Tasks run it from, and the image tool (concourse-image) that publish steps run. It writes
// a docker-save tarball (for `ctr images import`, `kind load image-archive`, or the local
// e2e cluster) and can push to a registry. With -cli it builds instead the image of the
// concourse-tekton command (CLIPath, its entrypoint; a non-root user), which runs gc in a
// CronJob of the cluster; with -web, the web node's (WebPath, with fly for download from
// -fly-dir; a non-root user). -label describes any of them (make images gives each the
// OCI annotation keys: version, revision, source).
//
//	runner-image -binary bin/concourse-runner -ref ghcr.io/concourse-tekton/runner:dev -o bin/images/runner.tar
//	runner-image -binary bin/concourse-runner -ref registry.example/runner:v1 -push
//	runner-image -cli bin/concourse-tekton -ref ghcr.io/concourse-tekton/concourse-tekton:dev -o bin/images/cli.tar
//	runner-image -web concourse-tekton-web -fly-dir fly-assets -ref ghcr.io/concourse-tekton/web:dev -o bin/images/web.tar
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/concourse-tekton/concourse-tekton/runspec"

	"github.com/concourse-tekton/concourse-tekton/internal/ociimage"
	"github.com/concourse-tekton/concourse-tekton/translate"
)

func main() {
	binary := flag.String("binary", "bin/concourse-runner", "the static runner binary (CGO_ENABLED=0)")
	tool := flag.String("image-tool", "bin/concourse-image", "the static image tool (CGO_ENABLED=0), which publish steps run")
	ref := flag.String("ref", translate.DefaultRunnerImage, "the image reference to tag (and push)")
	out := flag.String("o", "", "write a docker-save tarball here")
	push := flag.Bool("push", false, "push the image to -ref's registry (credentials from the Docker config)")
	cli := flag.String("cli", "", "build the image of this static concourse-tekton binary instead")
	web := flag.String("web", "", "build the web node's image of this static concourse-tekton-web binary instead")
	flyDir := flag.String("fly-dir", "", "with -web: the fly binaries the web node offers for download, fly-<os>-<arch>[.exe]")
	labels := map[string]string{}
	flag.Func("label", "a label of the image, KEY=VALUE (org.opencontainers.image.version=v1, ...; repeatable)", func(s string) error {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return fmt.Errorf("%q is not KEY=VALUE", s)
		}
		labels[k] = v
		return nil
	})
	flag.Parse()
	build := func() (v1.Image, error) { return runnerImage(*binary, *tool) }
	switch {
	case *cli != "" && *web != "":
		fmt.Fprintln(os.Stderr, "error: -cli and -web build two different images: give one")
		os.Exit(2)
	case *cli != "":
		build = func() (v1.Image, error) { return cliImage(*cli) }
	case *web != "":
		build = func() (v1.Image, error) { return webImage(*web, *flyDir) }
	}
	if err := run(labelled(build, labels), *ref, *out, *push); err != nil {
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		os.Exit(1)
	}
}

// CLIPath is where the concourse-tekton image holds the command.
const CLIPath = "/ko-app/concourse-tekton"

// runnerImage is the step runner's image.
func runnerImage(binary, tool string) (v1.Image, error) {
	data, err := os.ReadFile(binary)
	if err != nil {
		return nil, err
	}
	toolData, err := os.ReadFile(tool)
	if err != nil {
		return nil, err
	}
	return ociimage.Build([]ociimage.File{
		{Path: runspec.RunnerBinary, Mode: 0o755, Data: data},
		{Path: runspec.ImageTool, Mode: 0o755, Data: toolData},
	}, ociimage.Config{Entrypoint: []string{runspec.RunnerBinary}})
}

// cliImage is the image of the concourse-tekton command, which runs as a user that is
// not root (Pod Security "restricted").
func cliImage(binary string) (v1.Image, error) {
	data, err := os.ReadFile(binary)
	if err != nil {
		return nil, err
	}
	return ociimage.Build([]ociimage.File{{Path: CLIPath, Mode: 0o755, Data: data}},
		ociimage.Config{Entrypoint: []string{CLIPath}, User: "65532:65532"})
}

// labelled is build, its image given labels (none: as it is).
func labelled(build func() (v1.Image, error), labels map[string]string) func() (v1.Image, error) {
	if len(labels) == 0 {
		return build
	}
	return func() (v1.Image, error) {
		img, err := build()
		if err != nil {
			return nil, err
		}
		return ociimage.WithLabels(img, labels)
	}
}

func run(build func() (v1.Image, error), ref, out string, push bool) error {
	if out == "" && !push {
		return fmt.Errorf("nothing to do: give -o FILE, -push, or both")
	}
	img, err := build()
	if err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	if out != "" {
		if err := ociimage.WriteTarball(out, ref, img); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "wrote %s (%s@%s)\n", out, ref, digest)
	}
	if push {
		if err := ociimage.Push(context.Background(), ref, img); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "pushed %s@%s\n", ref, digest)
	}
	return nil
}
