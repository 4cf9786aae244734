package transient

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	k8sschema "k8s.io/apimachinery/pkg/runtime/schema"
)

// handshakeTimeout is the error client-go returns when the API server is too loaded to
// finish a TLS handshake in time (net/http's own, which is a net.Error).
type handshakeTimeout struct{}

func (handshakeTimeout) Error() string   { return "net/http: TLS handshake timeout" }
func (handshakeTimeout) Timeout() bool   { return true }
func (handshakeTimeout) Temporary() bool { return true }

func TestIs(t *testing.T) {
	refused := &url.Error{Op: "Get", URL: "https://127.0.0.1:6443/apis", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}
	prs := k8sschema.GroupResource{Group: "tekton.dev", Resource: "pipelineruns"}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"the API server refused the connection", fmt.Errorf("looking for build app-unit-1: %w", refused), true},
		{"a TLS handshake timed out", &url.Error{Op: "Get", URL: "https://10.0.0.1/api/v1/configmaps", Err: handshakeTimeout{}}, true},
		{"the API server is unavailable", apierrors.NewServiceUnavailable("restarting"), true},
		{"too many requests", apierrors.NewTooManyRequests("slow down", 1), true},
		{"a server timeout", apierrors.NewServerTimeout(prs, "create", 1), true},
		{"an internal error", apierrors.NewInternalError(errors.New("etcd leader changed")), true},
		{"forbidden", apierrors.NewForbidden(prs, "app-unit-1", errors.New("no")), false},
		{"not found", apierrors.NewNotFound(prs, "app-unit-1"), false},
		{"a conflict", apierrors.NewConflict(prs, "app-unit-1", errors.New("changed")), false},
		{"the connection was lost", &url.Error{Op: "Get", URL: "https://10.0.0.1/api", Err: io.EOF}, true},
		{"the API server's address is unreachable", &url.Error{Op: "Get", URL: "https://10.0.0.1/api", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.EHOSTUNREACH}}, true},
		{"http2's connection was lost", &url.Error{Op: "Get", URL: "https://10.0.0.1/api", Err: errors.New("http2: client connection lost")}, true},
		{"a certificate of an unknown authority", &url.Error{Op: "Get", URL: "https://10.0.0.1/api", Err: x509.UnknownAuthorityError{}}, false},
		{"a server that speaks no TLS", &url.Error{Op: "Get", URL: "https://10.0.0.1/api", Err: tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}}, false},
		{"a bad certificate", &url.Error{Op: "Get", URL: "https://10.0.0.1/api", Err: &tls.CertificateVerificationError{Err: errors.New("unknown authority")}}, false},
		{"nil", nil, false},
	}
	for _, tt := range tests {
		if got := Is(tt.err); got != tt.want {
			t.Errorf("%s: Is(%v) = %t, want %t", tt.name, tt.err, got, tt.want)
		}
	}
}

func TestRetry(t *testing.T) {
	unavailable := apierrors.NewServiceUnavailable("restarting")
	forbidden := apierrors.NewForbidden(k8sschema.GroupResource{Resource: "pods"}, "p", errors.New("no"))
	delays := []time.Duration{time.Millisecond, time.Millisecond}
	tests := []struct {
		name     string
		errs     []error // what each attempt returns; nil after the last
		want     error
		attempts int
	}{
		{"at once", nil, nil, 1},
		{"after transient errors", []error{unavailable, unavailable}, nil, 3},
		{"not again after an answer", []error{forbidden}, forbidden, 1},
		{"an answer after a transient error", []error{unavailable, forbidden}, forbidden, 2},
		{"until the delays run out", []error{unavailable, unavailable, unavailable, unavailable}, unavailable, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			attempts := 0
			err := Retry(context.Background(), delays, func() error {
				attempts++
				if attempts <= len(tt.errs) {
					return tt.errs[attempts-1]
				}
				return nil
			})
			if !errors.Is(err, tt.want) || (err == nil) != (tt.want == nil) || attempts != tt.attempts {
				t.Errorf("Retry = %v after %d attempts, want %v after %d", err, attempts, tt.want, tt.attempts)
			}
		})
	}
}

// TestRetryCancelled: a cancelled context ends the wait at once, with its error.
func TestRetryCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	attempts := 0
	start := time.Now()
	err := Retry(ctx, []time.Duration{time.Hour}, func() error {
		attempts++
		cancel()
		return apierrors.NewServiceUnavailable("restarting")
	})
	if !apierrors.IsServiceUnavailable(err) {
		t.Errorf("Retry = %v, want the attempt's own error", err)
	}
	if attempts != 1 || time.Since(start) > time.Minute {
		t.Errorf("%d attempts in %s, want 1 and no wait", attempts, time.Since(start))
	}
}
