package tektonengine

import (
	"context"
	"testing"

	"github.com/tektoncd/pipeline/pkg/apis/pipeline"
	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	tektonfake "github.com/tektoncd/pipeline/pkg/client/clientset/versioned/fake"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8sfake "k8s.io/client-go/kubernetes/fake"

	"github.com/concourse-tekton/concourse-tekton/tektonrun"
)

// TestDeleteCheckRun deletes a check build's run by its container (a TaskRun of it),
// and leaves a job build's alone; a container whose run is gone is no error.
func TestDeleteCheckRun(t *testing.T) {
	run := func(name string, check bool) *v1.PipelineRun {
		pr := &v1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ci", UID: types.UID("uid-" + name), Annotations: map[string]string{}}}
		if check {
			pr.Annotations[AnnotationCheck] = "true"
		}
		return pr
	}
	taskRun := func(name, run string) *v1.TaskRun {
		return &v1.TaskRun{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ci", Labels: map[string]string{pipeline.PipelineRunLabelKey: run}}}
	}
	objects := []runtime.Object{
		run("app-check-repo-12", true), taskRun("app-check-repo-12-check-tr", "app-check-repo-12"),
		run("app-unit-3", false), taskRun("app-unit-3-task-tr", "app-unit-3"),
	}
	tekton := tektonfake.NewSimpleClientset(objects...)
	target := tektonrun.NewTargetFromClients("ci", k8sfake.NewClientset(), tekton)
	ctx := context.Background()
	for h, want := range map[string]bool{"app-check-repo-12-check-tr": true, "app-unit-3-task-tr": false, "gone-tr": false} {
		if check, err := DeleteCheckRun(ctx, target, h); err != nil || check != want {
			t.Errorf("%s: %v, %v; want a check's: %v", h, check, err, want)
		}
	}
	runs := tekton.TektonV1().PipelineRuns("ci")
	if _, err := runs.Get(ctx, "app-check-repo-12", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the check's run is there (%v); want it deleted", err)
	}
	if _, err := runs.Get(ctx, "app-unit-3", metav1.GetOptions{}); err != nil {
		t.Errorf("the job build's run: %v; want it left", err)
	}
}
