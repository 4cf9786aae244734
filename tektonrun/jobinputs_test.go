package tektonrun

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	tektonfake "github.com/tektoncd/pipeline/pkg/client/clientset/versioned/fake"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

func specParams(t *testing.T, spec runspec.Spec, image string) v1.Params {
	t.Helper()
	args, err := spec.Args()
	if err != nil {
		t.Fatal(err)
	}
	return v1.Params{
		{Name: runspec.ParamImage, Value: *v1.NewStructuredValues(image)},
		{Name: runspec.ParamSpec, Value: *v1.NewStructuredValues(args[1][len("--spec="):])},
	}
}

func TestJobInputs(t *testing.T) {
	meta := func(name string, build string) metav1.ObjectMeta {
		m := metav1.ObjectMeta{Name: name, Namespace: "ci",
			Labels:      map[string]string{runspec.LabelTeam: "main", runspec.LabelPipeline: "app", runspec.LabelJob: "unit"},
			Annotations: map[string]string{runspec.LabelTeam: "main", runspec.LabelPipeline: "app", runspec.LabelJob: "unit"}}
		if build != "" {
			m.Annotations[runspec.LabelBuild] = build
		}
		return m
	}
	get := func(plan, name string) runspec.Spec {
		return runspec.Spec{Mode: runspec.ModeGet, PlanID: plan, Name: name, Get: &runspec.Get{Type: "git", Resource: name, Source: map[string]any{"uri": name + ".git"}}}
	}
	pipeline := &v1.Pipeline{ObjectMeta: meta("app-unit", ""), Spec: v1.PipelineSpec{Tasks: []v1.PipelineTask{
		{Name: "get-repo", Params: specParams(t, get("1", "repo"), "git-resource:1")},
		{Name: "get-ci", Params: specParams(t, get("2", "ci"), "git-resource:1")},
		{Name: "get-image", Params: specParams(t, get("3/image-get", "image"), "registry-image-resource")},
		{Name: "task-test", Params: specParams(t, runspec.Spec{Mode: runspec.ModeTask, PlanID: "4", Name: "test", Task: &runspec.Task{}}, "busybox")},
	}}}
	run := func(name, build string) *v1.PipelineRun {
		return &v1.PipelineRun{ObjectMeta: meta(name, build)}
	}
	fetched := func(run, task, version string) *v1.TaskRun {
		tr := &v1.TaskRun{ObjectMeta: metav1.ObjectMeta{Name: run + "-" + task, Namespace: "ci",
			Labels: map[string]string{labelPipelineRun: run, labelPipelineTask: task}}}
		if version != "" {
			tr.Status.Results = []v1.TaskRunResult{{Name: runspec.ResultVersion, Value: *v1.NewStructuredValues(version)}}
		}
		return tr
	}
	tekton := tektonfake.NewSimpleClientset(pipeline,
		run("app-unit-1", "1"), run("app-unit-2", "2"), run("app-unit-10", "10"),
		fetched("app-unit-1", "get-repo", `{"ref":"old"}`), fetched("app-unit-1", "get-ci", `{"ref":"c1"}`),
		fetched("app-unit-2", "get-repo", `{"ref":"r2"}`),
		fetched("app-unit-10", "get-repo", ""), // errored before it fetched
	)
	c := NewClient(NewTargetFromClients("ci", kubefake.NewClientset(), tekton))
	got, err := c.JobInputs(context.Background(), "main", "app", "unit")
	if err != nil {
		t.Fatal(err)
	}
	want := []JobInput{
		{Name: "repo", Image: "git-resource:1", Get: concourse.GetPlan{Name: "repo", Type: "git", Resource: "repo", Source: concourse.Source{"uri": "repo.git"}, Version: &concourse.Version{"ref": "r2"}}},
		{Name: "ci", Image: "git-resource:1", Get: concourse.GetPlan{Name: "ci", Type: "git", Resource: "ci", Source: concourse.Source{"uri": "ci.git"}, Version: &concourse.Version{"ref": "c1"}}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("JobInputs (-want +got):\n%s", diff)
	}
	if _, err := c.JobInputs(context.Background(), "main", "app", "nope"); err == nil {
		t.Errorf("the inputs of a job that is not there")
	}
}
