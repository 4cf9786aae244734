// Command runner-image builds the step runner's container image, reproducibly and without
// a Docker engine: one layer holding the static runner binary at the path the translator's
// Tasks run it from, and the image tool (concourse-image) that publish steps run. It writes a docker-save tarball (for `ctr images import`, `kind load
// image-archive`, or the local e2e cluster) and can push to a registry.
//
//	runner-image -binary bin/concourse-runner -ref ghcr.io/concourse-tekton/runner:dev -o bin/images/runner.tar
//	runner-image -binary bin/concourse-runner -ref registry.example/runner:v1 -push
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

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
	flag.Parse()
	if err := run(*binary, *tool, *ref, *out, *push); err != nil {
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		os.Exit(1)
	}
}

func run(binary, tool, ref, out string, push bool) error {
	if out == "" && !push {
		return fmt.Errorf("nothing to do: give -o FILE, -push, or both")
	}
	data, err := os.ReadFile(binary)
	if err != nil {
		return err
	}
	toolData, err := os.ReadFile(tool)
	if err != nil {
		return err
	}
	img, err := ociimage.Build([]ociimage.File{
		{Path: runspec.RunnerBinary, Mode: 0o755, Data: data},
		{Path: runspec.ImageTool, Mode: 0o755, Data: toolData},
	}, ociimage.Config{Entrypoint: []string{runspec.RunnerBinary}})
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
