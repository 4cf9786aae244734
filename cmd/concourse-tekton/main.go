// Command concourse-tekton runs Concourse pipelines on Kubernetes through Tekton.
package main

import (
	// First: validate, plan and --version run from here, before the package
	// initialisation of the libraries below.
	_ "github.com/concourse-tekton/concourse-tekton/internal/cli/fastpath"

	"crypto/x509"
	"os"

	"golang.org/x/crypto/x509roots/fallback/bundle"

	"github.com/concourse-tekton/concourse-tekton/internal/cli"
)

func main() {
	// Its image (make cli-image) holds no CA bundle: without these roots, no image
	// registry's TLS certificate could be verified there. A system's roots win. Set here,
	// not by importing x509roots/fallback, whose package initialisation (parsing them, a
	// millisecond or two) validate would pay too.
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
