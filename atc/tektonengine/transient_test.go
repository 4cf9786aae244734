package tektonengine

import (
	"fmt"
	"net"
	"net/url"
	"syscall"
	"testing"

	"github.com/concourse-tekton/concourse-tekton/concourse/vars"
	"github.com/concourse-tekton/concourse-tekton/internal/transient"
	"github.com/concourse-tekton/concourse-tekton/translate"
)

// TestStartErrorsTransient: a build whose start meets an unreachable cluster is started
// again later (exec.Retriable); one whose plan does not compile, or whose vars are not
// defined, errors.
func TestStartErrorsTransient(t *testing.T) {
	refused := &url.Error{Op: "Get", URL: "https://127.0.0.1:6443/apis", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}
	if err := fmt.Errorf("looking for build app-unit-1: %w", refused); !transient.Is(err) {
		t.Errorf("transient.Is(%v) = false, want the build started again later", err)
	}
	for _, err := range []error{
		&translate.UnsupportedError{PlanID: "1", Step: "t", Reason: "no image"},
		vars.UndefinedVarsError{Vars: []string{"x"}},
	} {
		if transient.Is(err) {
			t.Errorf("transient.Is(%v) = true, want the build errored", err)
		}
	}
}
