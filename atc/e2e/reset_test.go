//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// TestPipelineSetAgain: a pipeline destroyed and set again numbers its builds from 1
// again; the new build #1 gets a run of its own, the old build's run giving way, as
// Concourse's builds of a new pipeline never meet the old one's.
func TestPipelineSetAgain(t *testing.T) {
	dumpOnFailure(t)
	t.Parallel()
	config := func(word string) string {
		return fmt.Sprintf(`
jobs:
- name: say
  plan:
  - task: say
    config:
      platform: linux
      image_resource: %s
      run: {path: echo, args: [%s]}
`, busybox(), word)
	}
	setPipeline(t, "again", config("first-life"))
	out := flyOK(t, 5*time.Minute, "trigger-job", "-j", "again/say", "-w")
	inOrder(t, out, "started again/say #1", "first-life", "succeeded")

	// The old build's volume goes only once its pods have, which takes a while on a busy
	// node: held here for a few seconds, so that the new build meets it being deleted.
	ctx := context.Background()
	claims := web.kube.CoreV1().PersistentVolumeClaims(web.ns)
	const volume = "again-say-1-build"
	const hold = "e2e.invalid/hold"
	finalizers := func(edit func([]string) []string) *corev1.PersistentVolumeClaim {
		var c *corev1.PersistentVolumeClaim
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			got, err := claims.Get(ctx, volume, metav1.GetOptions{})
			if err != nil {
				return err
			}
			got.Finalizers = edit(got.Finalizers)
			c, err = claims.Update(ctx, got, metav1.UpdateOptions{})
			return err
		})
		if err != nil && !apierrors.IsNotFound(err) {
			errorf(t, "changing the finalizers of the old build's volume: %v", err)
		}
		return c
	}
	old := finalizers(func(f []string) []string { return append(f, hold) })
	if old == nil {
		t.FailNow()
	}
	var once sync.Once
	release := func() {
		once.Do(func() {
			finalizers(func(f []string) []string {
				return slices.DeleteFunc(f, func(s string) bool { return s == hold })
			})
		})
	}
	t.Cleanup(release)
	time.AfterFunc(15*time.Second, release)

	flyOK(t, time.Minute, "destroy-pipeline", "-n", "-p", "again")
	setPipeline(t, "again", config("second-life"))
	out = flyOK(t, 5*time.Minute, "trigger-job", "-j", "again/say", "-w")
	inOrder(t, out, "started again/say #1", "second-life", "succeeded")
	if c, err := claims.Get(ctx, volume, metav1.GetOptions{}); err == nil && c.UID == old.UID {
		errorf(t, "the new build #1 took the old one's volume")
	}
}
