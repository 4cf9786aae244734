// Package pages lists Kubernetes objects a page at a time, so that a list of many objects
// is never one answer held whole by the API server and the client.
package pages

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/concourse-tekton/concourse-tekton/internal/transient"
)

// retryDelays are the waits before a page is asked for again (transient.Delays).
var retryDelays = transient.Delays

// Each calls list for each page of a list of kind, from the first: with opts (their
// Limit is the page size) and the page's continue token. list returns the next page's
// token, "" after the last page. A page whose list fails with a transient error
// (transient.Is: the API server restarting or overloaded) is asked for again, for about
// 15 s, so list must keep nothing of a failed call. An error names the kind; a cancelled
// ctx stops between pages.
func Each(ctx context.Context, opts metav1.ListOptions, kind string, list func(metav1.ListOptions) (string, error)) error {
	for {
		var next string
		err := transient.Retry(ctx, retryDelays, func() error {
			var err error
			next, err = list(opts)
			return err
		})
		if err != nil {
			return fmt.Errorf("listing %s: %w", kind, err)
		}
		if next == "" {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		opts.Continue = next
	}
}
