package tektonengine

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"syscall"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	k8sschema "k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/concourse-tekton/concourse-tekton/concourse/vars"
	"github.com/concourse-tekton/concourse-tekton/translate"
)

func TestTransient(t *testing.T) {
	refused := &url.Error{Op: "Get", URL: "https://127.0.0.1:6443/apis", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}
	prs := k8sschema.GroupResource{Group: "tekton.dev", Resource: "pipelineruns"}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"the API server refused the connection", fmt.Errorf("looking for build app-unit-1: %w", refused), true},
		{"the API server is unavailable", apierrors.NewServiceUnavailable("restarting"), true},
		{"too many requests", apierrors.NewTooManyRequests("slow down", 1), true},
		{"a server timeout", apierrors.NewServerTimeout(prs, "create", 1), true},
		{"forbidden", apierrors.NewForbidden(prs, "app-unit-1", errors.New("no")), false},
		{"a plan that does not compile", &translate.UnsupportedError{PlanID: "1", Step: "t", Reason: "no image"}, false},
		{"undefined vars", vars.UndefinedVarsError{Vars: []string{"x"}}, false},
		{"nil", nil, false},
	}
	for _, tt := range tests {
		if got := Transient(tt.err); got != tt.want {
			t.Errorf("%s: Transient(%v) = %t, want %t", tt.name, tt.err, got, tt.want)
		}
	}
}
