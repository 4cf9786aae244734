// Command concourse-image publishes an artifact that holds an image: it reads the image
// in whichever layout Concourse's image steps write (rootfs/ with metadata.json, an
// image.tar docker archive or OCI layout, an OCI layout directory), pushes it to a
// registry and prints the reference that names it by digest. It ships in the runner
// image, beside the runner, which runs it for a publish step; it keeps the registry
// client out of the runner that every step's container carries.
//
//	concourse-image publish --dir DIR --repository REGISTRY/PATH --tag TAG [--scratch DIR]
//
// Credentials come from the Docker config in $DOCKER_CONFIG (config.json), as docker
// and crane read it. A registry on a private (RFC 1918) address or localhost is spoken
// to over plain HTTP; any other over TLS, trusting the system's roots or, in the runner
// image, which has none, Mozilla's (golang.org/x/crypto/x509roots/fallback).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	// The runner image holds no CA bundle: without these roots, no registry's TLS
	// certificate could be verified there.
	_ "golang.org/x/crypto/x509roots/fallback"

	"github.com/concourse-tekton/concourse-tekton/internal/ociimage"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "publish" {
		fmt.Fprintln(stderr, "usage: concourse-image publish --dir DIR --repository REGISTRY/PATH --tag TAG [--scratch DIR]")
		return 2
	}
	fs := flag.NewFlagSet("concourse-image publish", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "", "the artifact's directory")
	repository := fs.String("repository", "", "where to push: REGISTRY[:PORT]/PATH")
	tag := fs.String("tag", "", "the tag to push under")
	scratch := fs.String("scratch", "", "an empty directory to unpack an archived OCI layout in (default: a temporary one)")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if *dir == "" || *repository == "" || *tag == "" || fs.NArg() != 0 {
		fmt.Fprintln(stderr, "usage: concourse-image publish --dir DIR --repository REGISTRY/PATH --tag TAG [--scratch DIR]")
		return 2
	}
	ref, err := publish(ctx, *dir, *repository, *tag, *scratch)
	if err != nil {
		fmt.Fprintf(stderr, "%v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, ref)
	return 0
}

func publish(ctx context.Context, dir, repository, tag, scratch string) (string, error) {
	if scratch == "" {
		tmp, err := os.MkdirTemp("", "concourse-image-")
		if err != nil {
			return "", err
		}
		defer os.RemoveAll(tmp)
		scratch = tmp
	}
	img, _, err := ociimage.FromArtifact(dir, scratch)
	if err != nil {
		return "", err
	}
	return ociimage.Publish(ctx, img, repository, tag, remote.WithAuthFromKeychain(authn.DefaultKeychain))
}
