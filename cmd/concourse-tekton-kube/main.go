// Command concourse-tekton-kube is the part of the concourse-tekton command that links the
// Kubernetes and Tekton libraries: convert, run, execute, intercept, events, abort,
// check-target, gc, land and retire. The concourse-tekton command runs validate, plan and
// --version itself and hands it every other command line, whole. Run alone, it is the
// whole command line (the image of `make cli-image` holds it alone).
package main

import (
	"crypto/x509"
	"os"

	"golang.org/x/crypto/x509roots/fallback/bundle"

	"github.com/concourse-tekton/concourse-tekton/cmd/internal/cli"
)

func main() {
	// Its image (make cli-image) holds no CA bundle: without these roots, no image
	// registry's TLS certificate could be verified there. A system's roots win. Set here,
	// not by importing x509roots/fallback, whose package initialisation parses them for
	// every command.
	x509.SetFallbackRoots(fallbackRoots())
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// fallbackRoots are Mozilla's roots, as x509roots/fallback gives them.
func fallbackRoots() *x509.CertPool {
	p := x509.NewCertPool()
	for c := range bundle.Roots() {
		cert, err := x509.ParseCertificate(c.Certificate)
		if err != nil {
			panic(err)
		}
		if c.Constraint == nil {
			p.AddCert(cert)
		} else {
			p.AddCertWithConstraint(cert, c.Constraint)
		}
	}
	return p
}
