package pages

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestEach walks the pages by their continue tokens, asks again for a page whose list
// failed transiently, and stops at the first error that is an answer.
func TestEach(t *testing.T) {
	delays := retryDelays
	retryDelays = []time.Duration{time.Millisecond, time.Millisecond}
	t.Cleanup(func() { retryDelays = delays })
	unavailable := apierrors.NewServiceUnavailable("restarting")
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no"))
	tests := []struct {
		name  string
		fails map[string][]error // by continue token: the errors of its first attempts
		want  []string           // the continue tokens listed, in order
		err   string
	}{
		{name: "three pages", want: []string{"", "p2", "p3"}},
		{name: "a page again after transient errors", fails: map[string][]error{"p2": {unavailable, unavailable}}, want: []string{"", "p2", "p2", "p2", "p3"}},
		{name: "stops at an answer", fails: map[string][]error{"p2": {forbidden}}, want: []string{"", "p2"}, err: "listing pods: pods is forbidden: no"},
		{name: "gives up after its delays", fails: map[string][]error{"": {unavailable, unavailable, unavailable}}, want: []string{"", "", ""}, err: "listing pods: restarting"},
	}
	next := map[string]string{"": "p2", "p2": "p3", "p3": ""}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			err := Each(context.Background(), metav1.ListOptions{Limit: 2}, "pods", func(opts metav1.ListOptions) (string, error) {
				if opts.Limit != 2 {
					t.Errorf("Limit = %d, want 2", opts.Limit)
				}
				got = append(got, opts.Continue)
				if errs := tt.fails[opts.Continue]; len(errs) > 0 {
					tt.fails[opts.Continue] = errs[1:]
					return "", errs[0]
				}
				return next[opts.Continue], nil
			})
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("pages listed (-want +got):\n%s", diff)
			}
			if gotErr := errString(err); gotErr != tt.err {
				t.Errorf("Each = %q, want %q", gotErr, tt.err)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
