package tektonworker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"code.cloudfoundry.org/lager/v3/lagertest"
	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	tektonfake "github.com/tektoncd/pipeline/pkg/client/clientset/versioned/fake"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"knative.dev/pkg/apis"

	"github.com/concourse-tekton/concourse-tekton/gc"
	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/tektonrun"
)

// endedRuns are n ended builds of job unit and of the check of resource repo, an hour
// apart.
func endedRuns(n int) []runtime.Object {
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var out []runtime.Object
	for _, job := range []string{"unit", "check-repo"} {
		for i := 1; i <= n; i++ {
			name := fmt.Sprintf("app-%s-%d", job, i)
			run := &v1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ci", UID: types.UID("uid-" + name),
				CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(i) * time.Hour)),
				Labels: map[string]string{runspec.LabelManagedBy: runspec.ManagedBy, runspec.LabelTeam: "main", runspec.LabelPipeline: "app",
					runspec.LabelJob: job, runspec.LabelBuild: fmt.Sprint(i)}}}
			ended := metav1.NewTime(t0.Add(time.Duration(i)*time.Hour + time.Minute))
			run.Status.CompletionTime = &ended
			run.Status.SetCondition(&apis.Condition{Type: apis.ConditionSucceeded, Status: corev1.ConditionTrue})
			out = append(out, run)
		}
	}
	return out
}

// TestSweeper sweeps the namespace every interval under the web node's rules: of each
// job's and each check's ended builds, the newest stays.
func TestSweeper(t *testing.T) {
	tekton := tektonfake.NewSimpleClientset(endedRuns(3)...)
	target := tektonrun.NewTargetFromClients("ci", k8sfake.NewClientset(), tekton)
	logger := lagertest.NewTestLogger("gc")
	s := &Sweeper{Target: target, Options: gc.Options{Rules: ATCRules(120*time.Hour, 5*time.Minute)}, Interval: 50 * time.Millisecond, Logger: logger}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Run(ctx) }()
	var left []string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		l, err := tekton.TektonV1().PipelineRuns("ci").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		left = left[:0]
		for _, r := range l.Items {
			left = append(left, r.Name)
		}
		if len(left) == 2 {
			break
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if strings.Join(left, " ") != "app-check-repo-3 app-unit-3" {
		t.Errorf("left %q; want the newest build of the job and of the check", left)
	}
	// Each deletion is logged (a sweep may time out part of the way: each may take at
	// most the interval), and each sweep that ended.
	var deleted []string
	swept := false
	for _, l := range logger.Logs() {
		switch l.Message {
		case "gc.deleted":
			deleted = append(deleted, fmt.Sprint(l.Data["name"]))
		case "gc.swept":
			swept = true
		}
	}
	slices.Sort(deleted)
	if want := []string{"app-check-repo-1", "app-check-repo-2", "app-unit-1", "app-unit-2"}; !slices.Equal(deleted, want) || !swept {
		t.Errorf("the sweeps logged %q deleted (a sweep ended: %v), want %q: %s", deleted, swept, want, logger.Buffer().Contents())
	}
}

// TestSweepFails logs a sweep that failed, and goes on.
func TestSweepFails(t *testing.T) {
	logger := lagertest.NewTestLogger("gc")
	s := &Sweeper{Logger: logger, sweep: func(context.Context, *tektonrun.Target, gc.Options) (gc.Report, error) {
		return gc.Report{}, errors.New("listing PipelineRuns: forbidden")
	}}
	s.Sweep(context.Background())
	if !strings.Contains(string(logger.Buffer().Contents()), "listing PipelineRuns: forbidden") {
		t.Errorf("the failure is not logged: %s", logger.Buffer().Contents())
	}
}
