package cli

import (
	"crypto/x509"
	"sync"

	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// trustFallbackRoots makes Mozilla's roots (x509roots/fallback) those TLS verifies with
// where the system has none: the image of `make cli-image` holds no CA bundle, and could
// otherwise verify no certificate an API server or image registry presents that chains to
// a public authority. The system's roots win wherever there are any. A command calls it
// before it dials a cluster, not at start-up: parsing the roots costs a few milliseconds of
// CPU, which validate, plan and convert need not pay (nor does importing
// x509roots/fallback, whose package initialisation parses them for every command). It
// runs once: x509.SetFallbackRoots may be called only once.
var trustFallbackRoots = sync.OnceFunc(func() { x509.SetFallbackRoots(fallbackRoots()) })

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
