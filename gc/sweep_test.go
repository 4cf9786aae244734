package gc

import (
	"context"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	tektonfake "github.com/tektoncd/pipeline/pkg/client/clientset/versioned/fake"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/concourse-tekton/concourse-tekton/pvc"
	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/tektonrun"
)

// fakeTarget serves objs from fake clientsets in namespace ci.
func fakeTarget(objs Objects) *tektonrun.Target {
	var kube, tekton []runtime.Object
	for i := range objs.Claims {
		objs.Claims[i].Namespace = "ci"
		kube = append(kube, &objs.Claims[i])
	}
	for i := range objs.Pods {
		objs.Pods[i].Namespace = "ci"
		kube = append(kube, &objs.Pods[i])
	}
	for i := range objs.Runs {
		objs.Runs[i].Namespace = "ci"
		tekton = append(tekton, &objs.Runs[i])
	}
	for i := range objs.Verdicts {
		objs.Verdicts[i].Namespace = "ci"
		objs.Verdicts[i].Labels[runspec.LabelBuild] = "x"
		tekton = append(tekton, &objs.Verdicts[i])
	}
	return tektonrun.NewTargetFromClients("ci", k8sfake.NewClientset(kube...), tektonfake.NewSimpleClientset(tekton...))
}

// TestSweep lists, decides and deletes: with --dry-run nothing changes; then the build
// beyond its retention goes, its volume, a recent cache source, is released from it
// first, and an unclean volume goes.
func TestSweep(t *testing.T) {
	ctx := context.Background()
	target := fakeTarget(namespace([]fixture{
		{job: "unit", n: 1, outcome: runspec.Succeeded, ended: 3, volume: true},
		{job: "unit", n: 2, outcome: runspec.Succeeded, ended: 3, volume: true},
		{job: "unit", n: 3, outcome: runspec.Errored, ended: 3, volume: true, noVerdict: true, retention: `{"builds":1}`},
	}))
	now := t0.Add(3*time.Hour + 5*time.Minute)
	opts := Options{DryRun: true, Now: func() time.Time { return now }, PageSize: 1}
	want := []string{"PipelineRun/app-unit-2: " + ReasonBeyond, "PersistentVolumeClaim/app-unit-3-build: " + pvc.ReasonNoSource}

	r, err := Sweep(ctx, target, opts)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, names(r.Deleted)); diff != "" || !r.DryRun {
		t.Errorf("dry run: Deleted (-want +got):\n%s", diff)
	}
	if !slices.Contains(names(r.Kept), "PersistentVolumeClaim/app-unit-2-build: "+ReasonReleased) {
		t.Errorf("dry run: the released volume is not among the kept: %v", names(r.Kept))
	}
	if _, err := target.Tekton.TektonV1().PipelineRuns("ci").Get(ctx, "app-unit-2", metav1.GetOptions{}); err != nil {
		t.Errorf("a dry run deleted: %v", err)
	}

	opts.DryRun = false
	r, err = Sweep(ctx, target, opts)
	if err != nil || len(r.Failed) > 0 {
		t.Fatalf("Sweep: %v, %+v", err, r.Failed)
	}
	if diff := cmp.Diff(want, names(r.Deleted)); diff != "" {
		t.Errorf("Deleted (-want +got):\n%s", diff)
	}
	if _, err := target.Tekton.TektonV1().PipelineRuns("ci").Get(ctx, "app-unit-2", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the build beyond its retention: err = %v, want it gone", err)
	}
	if _, err := target.Kube.CoreV1().PersistentVolumeClaims("ci").Get(ctx, "app-unit-3-build", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the unclean volume: err = %v, want it gone", err)
	}
	released, err := target.Kube.CoreV1().PersistentVolumeClaims("ci").Get(ctx, "app-unit-2-build", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(released.OwnerReferences) > 0 || released.Annotations[pvc.AnnotationReleased] != now.Format(time.RFC3339) {
		t.Errorf("the released volume: owners %v, annotations %v", released.OwnerReferences, released.Annotations)
	}

	// Once the grace period is over, the released volume goes too.
	now = now.Add(pvc.Grace)
	r, err = Sweep(ctx, target, opts)
	if err != nil || len(r.Failed) > 0 {
		t.Fatalf("Sweep: %v, %+v", err, r.Failed)
	}
	if diff := cmp.Diff([]string{"PersistentVolumeClaim/app-unit-2-build: " + pvc.ReasonNoRun}, names(r.Deleted)); diff != "" {
		t.Errorf("after the grace period: Deleted (-want +got):\n%s", diff)
	}
}

// handshakeTimeout is net/http's error when the API server is too loaded to finish a TLS
// handshake in time.
type handshakeTimeout struct{}

func (handshakeTimeout) Error() string   { return "net/http: TLS handshake timeout" }
func (handshakeTimeout) Timeout() bool   { return true }
func (handshakeTimeout) Temporary() bool { return true }

// TestSweepTransientErrors: a list and a deletion that fail once with an overloaded API
// server's errors are tried again, and the sweep does all it would have done.
func TestSweepTransientErrors(t *testing.T) {
	delays := retryDelays
	retryDelays = []time.Duration{time.Millisecond}
	t.Cleanup(func() { retryDelays = delays })
	ctx := context.Background()
	target := fakeTarget(namespace([]fixture{
		{job: "unit", n: 1, outcome: runspec.Succeeded, ended: 3},
		{job: "unit", n: 2, outcome: runspec.Succeeded, ended: 3, retention: `{"builds":1}`},
	}))
	failOnce := func(err error) k8stesting.ReactionFunc {
		failed := false
		return func(k8stesting.Action) (bool, runtime.Object, error) {
			if failed {
				return false, nil, nil
			}
			failed = true
			return true, nil, err
		}
	}
	target.Kube.(*k8sfake.Clientset).PrependReactor("list", "configmaps", failOnce(&url.Error{Op: "Get", URL: "https://10.96.0.1/api/v1/namespaces/ci/configmaps", Err: handshakeTimeout{}}))
	target.Tekton.(*tektonfake.Clientset).PrependReactor("delete", "pipelineruns", failOnce(apierrors.NewServiceUnavailable("restarting")))
	now := t0.Add(3*time.Hour + 5*time.Minute)

	r, err := Sweep(ctx, target, Options{Now: func() time.Time { return now }})
	if err != nil || len(r.Failed) > 0 {
		t.Fatalf("Sweep: %v, %+v", err, r.Failed)
	}
	if diff := cmp.Diff([]string{"PipelineRun/app-unit-1: " + ReasonBeyond}, names(r.Deleted)); diff != "" {
		t.Errorf("Deleted (-want +got):\n%s", diff)
	}
	if _, err := target.Tekton.TektonV1().PipelineRuns("ci").Get(ctx, "app-unit-1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the build beyond its retention: err = %v, want it gone", err)
	}
}

// TestSweepAPIServerAway: when the API server stays away through one deletion's retries,
// the deletions left are tried once each, and all are reported failed.
func TestSweepAPIServerAway(t *testing.T) {
	delays := retryDelays
	retryDelays = []time.Duration{time.Millisecond, time.Millisecond}
	t.Cleanup(func() { retryDelays = delays })
	target := fakeTarget(namespace([]fixture{
		{job: "unit", n: 1, outcome: runspec.Succeeded, ended: 3},
		{job: "unit", n: 2, outcome: runspec.Succeeded, ended: 3},
		{job: "unit", n: 3, outcome: runspec.Succeeded, ended: 3, retention: `{"builds":1}`},
	}))
	deletes := 0
	target.Tekton.(*tektonfake.Clientset).PrependReactor("delete", "pipelineruns", func(k8stesting.Action) (bool, runtime.Object, error) {
		deletes++
		return true, nil, apierrors.NewServiceUnavailable("restarting")
	})
	now := t0.Add(3*time.Hour + 5*time.Minute)

	r, err := Sweep(context.Background(), target, Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Failed) != 2 || len(r.Deleted) != 0 {
		t.Errorf("deleted %v, failed %+v; want both builds beyond their retention failed", names(r.Deleted), r.Failed)
	}
	if deletes != 3+1 {
		t.Errorf("%d deletions asked for, want 3 (the first, tried again twice) and 1", deletes)
	}
}
