package tektonrun

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	tektonfake "github.com/tektoncd/pipeline/pkg/client/clientset/versioned/fake"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// TestLand: a landed target starts no new build, but a build it has is still its own
// (attaching to it is no new build); it is landing while a build runs, landed once none
// does, and takes builds again after Resume. A retiring target stays retiring.
func TestLand(t *testing.T) {
	b := newBackend(t, secret("token", "value"), secret("db", "user"))
	ctx := context.Background()
	target := b.client.target
	status := func() Status {
		t.Helper()
		st, err := target.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	if st := status(); st.State != StateRunning || st.Running != 0 {
		t.Errorf("a new target: %+v, want running", st)
	}
	if _, err := b.Run(ctx, taskPlan(), BuildMeta{Pipeline: "app", Job: "unit", Build: "1"}); err != nil {
		t.Fatal(err)
	}
	if err := target.Land(ctx); err != nil {
		t.Fatal(err)
	}
	if st := status(); st.State != StateLanding || st.Running != 1 || time.Since(st.Since) > time.Minute {
		t.Errorf("landed with a build running: %+v, want landing, 1 running, since now", st)
	}
	_, err := b.Run(ctx, taskPlan(), BuildMeta{Pipeline: "app", Job: "unit", Build: "2"})
	if !errors.Is(err, ErrNotRunning) || !strings.Contains(err.Error(), "target ci is landing since") {
		t.Errorf("a new build on a landing target: %v", err)
	}
	if _, err := b.Run(ctx, taskPlan(), BuildMeta{Pipeline: "app", Job: "unit", Build: "1"}); err != nil {
		t.Errorf("attaching to a build of a landing target: %v", err)
	}
	if err := target.Tekton.TektonV1().PipelineRuns("ci").Delete(ctx, "app-unit-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if st := status(); st.State != StateLanded {
		t.Errorf("landing with no build running: %+v, want landed", st)
	}
	if err := target.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	if st := status(); st.State != StateRunning {
		t.Errorf("resumed: %+v, want running", st)
	}
	if _, err := b.Run(ctx, taskPlan(), BuildMeta{Pipeline: "app", Job: "unit", Build: "2"}); err != nil {
		t.Errorf("a new build once resumed: %v", err)
	}

	if err := target.setState(ctx, StateRetiring); err != nil {
		t.Fatal(err)
	}
	if err := target.Land(ctx); err != nil || status().State != StateRetiring {
		t.Errorf("landing a retiring target: %v, %+v; want it retiring still", err, status())
	}
	if err := target.Resume(ctx); err == nil || status().State != StateRetiring {
		t.Errorf("resuming a retiring target: %v, %+v; want an error, and it retiring still", err, status())
	}
}

// TestRunName: BuildMeta.RunName names the PipelineRun Run creates, for every kind of
// build (a one-off's defaults, a team's, an instanced pipeline's).
func TestRunName(t *testing.T) {
	b := newBackend(t, secret("token", "value"), secret("db", "user"))
	ctx := context.Background()
	for _, meta := range []BuildMeta{
		{Pipeline: "app", Job: "unit", Build: "7"},
		{Team: "other", Pipeline: "app", Job: "unit", Build: "7"},
		{Pipeline: "app", Job: "unit", Build: "7", InstanceVars: map[string]any{"branch": "main"}},
		{Pipeline: "App.Pipeline", Job: "unit_test", Build: "7.1"},
		{Build: "42"},
	} {
		build, err := b.Run(ctx, taskPlan(), meta)
		if err != nil {
			t.Fatal(err)
		}
		if got := meta.RunName(); got != build.Name {
			t.Errorf("%+v: RunName %q, Run created %q", meta, got, build.Name)
		}
	}
}

// TestUsage: a target's containers are the pods of its builds that have not ended (nor
// are going), Tekton's step pods (whose managed-by label is Tekton's) and ours alike, its
// volumes its claims of ours; others' are not counted.
func TestUsage(t *testing.T) {
	ours := map[string]string{runspec.LabelManagedBy: runspec.ManagedBy, runspec.LabelBuild: "1"}
	steps := map[string]string{runspec.LabelManagedBy: "tekton-pipelines", runspec.LabelBuild: "1"}
	claims := map[string]string{runspec.LabelManagedBy: runspec.ManagedBy}
	pod := func(name string, phase corev1.PodPhase, labels map[string]string, deleting bool) runtime.Object {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ci", Labels: labels}, Status: corev1.PodStatus{Phase: phase}}
		if deleting {
			now := metav1.Now()
			p.DeletionTimestamp = &now
		}
		return p
	}
	claim := func(name string, labels map[string]string) runtime.Object {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ci", Labels: labels}}
	}
	kube := fake.NewClientset(
		pod("pending", corev1.PodPending, steps, false), pod("running", corev1.PodRunning, steps, false),
		pod("abort", corev1.PodRunning, ours, false),
		pod("succeeded", corev1.PodSucceeded, steps, false), pod("failed", corev1.PodFailed, ours, false),
		pod("going", corev1.PodRunning, steps, true), pod("theirs", corev1.PodRunning, nil, false),
		pod("tekton's", corev1.PodRunning, map[string]string{runspec.LabelManagedBy: "tekton-pipelines"}, false),
		claim("build", claims), claim("cache", claims), claim("theirs", nil),
	)
	// One of ours in another namespace.
	if _, err := kube.CoreV1().Pods("other").Create(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x", Labels: ours}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	target := NewTargetFromClients("ci", kube, tektonfake.NewSimpleClientset())
	got, err := target.Usage(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := (Usage{Containers: 3, Volumes: 2}); got != want {
		t.Errorf("usage %+v, want %+v", got, want)
	}
}

// TestPipelineWrittenOnce: builds of a job started at once, or one after the other, of
// the same version of the job write its Pipeline once (no update to race on); a new
// version of the job updates it.
func TestPipelineWrittenOnce(t *testing.T) {
	b := newBackend(t, secret("token", "value"), secret("db", "user"))
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := b.Run(ctx, taskPlan(), BuildMeta{Pipeline: "app", Job: "unit", Build: strconv.Itoa(i + 1)})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	writes := func() (creates, updates int) {
		for _, a := range b.client.target.Tekton.(*tektonfake.Clientset).Actions() {
			if a.GetResource().Resource == "pipelines" {
				switch a.GetVerb() {
				case "create":
					creates++
				case "update":
					updates++
				}
			}
		}
		return creates, updates
	}
	if creates, updates := writes(); creates != 8 || updates != 0 {
		// Each build tries to create it; all but one find it there, as it should be.
		t.Errorf("pipelines: %d creates, %d updates; want 8 tries to create and no update", creates, updates)
	}
	changed := taskPlan()
	changed.Task.Config.Run.Args = []string{"changed"}
	if _, err := b.Run(ctx, changed, BuildMeta{Pipeline: "app", Job: "unit", Build: "9"}); err != nil {
		t.Fatal(err)
	}
	if _, updates := writes(); updates != 1 {
		t.Errorf("a new version of the job: %d updates, want 1", updates)
	}
}
