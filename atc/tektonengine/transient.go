package tektonengine

import (
	"errors"
	"io"
	"net"
	"syscall"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Transient tells an error of the cluster that may go away by itself: the API server
// could not be reached (restarting, say) or answered that it is overloaded or timed out.
// A build that meets one when it starts is started again later rather than errored; any
// other error (a plan that does not compile, a var that is not defined, a permission the
// target lacks) errors the build.
func Transient(err error) bool {
	var netErr net.Error
	switch {
	case err == nil:
		return false
	case errors.As(err, &netErr),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, io.ErrUnexpectedEOF):
		return true
	}
	return apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err)
}
