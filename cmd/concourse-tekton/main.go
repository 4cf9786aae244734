// Command concourse-tekton runs Concourse pipelines on Kubernetes through Tekton.
package main

import (
	"os"

	// Its image (make cli-image) holds no CA bundle: without these roots, no image
	// registry's TLS certificate could be verified there. A system's roots win.
	_ "golang.org/x/crypto/x509roots/fallback"

	"github.com/concourse-tekton/concourse-tekton/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
