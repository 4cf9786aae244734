// Package transient tells the errors of a cluster that may go away by themselves, and asks
// again after them.
package transient

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/url"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Is tells an error of the cluster that may go away by itself: the API server could not be
// reached (restarting, say, or too loaded to finish a TLS handshake) or answered that it is
// overloaded or timed out. Any other error (a permission the caller lacks, an object that
// is not there, a conflict) is an answer, and asking again would not change it.
func Is(err error) bool {
	var netErr net.Error
	var urlErr *url.Error
	switch {
	case err == nil:
		return false
	case errors.As(err, &netErr) && netErr.Timeout(),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return true
	case errors.As(err, &urlErr):
		// A request that got no answer (client-go's requests fail as *url.Error): the
		// connection failed, or was lost (http2's GOAWAY, "client connection lost"), unless
		// the server is not the one the client trusts, or speaks no TLS.
		return !untrusted(urlErr.Err)
	}
	return apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err)
}

// untrusted tells a TLS error that asking again would not mend: a certificate the client
// does not trust, or a server that does not speak TLS.
func untrusted(err error) bool {
	var verify *tls.CertificateVerificationError
	var header tls.RecordHeaderError
	var authority x509.UnknownAuthorityError
	var invalid x509.CertificateInvalidError
	var host x509.HostnameError
	return errors.As(err, &verify) || errors.As(err, &header) || errors.As(err, &authority) ||
		errors.As(err, &invalid) || errors.As(err, &host)
}

// Delays are the waits Retry makes between its attempts: seven attempts over 15.75 s,
// enough for an API server to restart or a burst of load to pass.
var Delays = []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second}

// Retry calls fn until it returns nil or an error that is not transient (Is), waiting
// delays[i] before the attempt after the i-th, and returns its last error. A cancelled ctx
// ends the waiting with ctx's error (a deadline exceeded is a net.Error, so Is alone would
// not stop it).
func Retry(ctx context.Context, delays []time.Duration, fn func() error) error {
	for i := 0; ; i++ {
		err := fn()
		if err == nil || !Is(err) || i == len(delays) || ctx.Err() != nil {
			return err
		}
		timer := time.NewTimer(delays[i])
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-timer.C:
		}
	}
}
