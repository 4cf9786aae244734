package tektonrun

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// TestTaskCaches starts builds with and without the ATC's records of the job's task
// caches, and reads back the caches a build's tasks reported.
func TestTaskCaches(t *testing.T) {
	ctx := context.Background()
	b := newBackend(t, secret("token", "value"), secret("db", "user"))
	recordsOf := func(build *Build) *runspec.CacheRecords {
		t.Helper()
		for _, pt := range build.Compiled.Pipeline.Spec.Tasks {
			for _, p := range pt.Params {
				if p.Name != runspec.ParamSpec {
					continue
				}
				s, err := runspec.Decode(p.Value.StringVal)
				if err != nil {
					t.Fatal(err)
				}
				if s.Mode == runspec.ModeTask {
					return s.Task.CacheRecords
				}
			}
		}
		t.Fatal("no task in the build")
		return nil
	}
	recorded, err := b.Run(ctx, taskPlan(), BuildMeta{Pipeline: "app", Job: "unit", Build: "1"}, WithTaskCaches(map[string]map[string]int{"unit": {"c": 3}}))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&runspec.CacheRecords{IDs: map[string]int{"c": 3}}, recordsOf(recorded)); diff != "" {
		t.Errorf("records of build 1 (-want +got):\n%s", diff)
	}
	noneYet, err := b.Run(ctx, taskPlan(), BuildMeta{Pipeline: "app", Job: "unit", Build: "2"}, WithTaskCaches(nil))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&runspec.CacheRecords{}, recordsOf(noneYet)); diff != "" {
		t.Errorf("records of build 2, with none yet (-want +got):\n%s", diff)
	}
	plain, err := b.Run(ctx, taskPlan(), BuildMeta{Pipeline: "app", Job: "unit", Build: "3"})
	if err != nil {
		t.Fatal(err)
	}
	if got := recordsOf(plain); got != nil {
		t.Errorf("records of build 3, started without: %+v, want none", got)
	}

	taskRun := func(name, run string, s runspec.Spec, caches string) {
		t.Helper()
		spec, err := s.Encode()
		if err != nil {
			t.Fatal(err)
		}
		tr := &v1.TaskRun{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ci", Labels: map[string]string{labelPipelineRun: run}},
			Spec:       v1.TaskRunSpec{Params: v1.Params{{Name: runspec.ParamSpec, Value: *v1.NewStructuredValues(spec)}}},
		}
		if caches != "" {
			tr.Status.Results = append(tr.Status.Results, v1.TaskRunResult{Name: runspec.ResultCaches, Type: v1.ResultsTypeString, Value: *v1.NewStructuredValues(caches)})
		}
		if _, err := b.client.target.Tekton.TektonV1().TaskRuns("ci").Create(ctx, tr, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	task := func(plan, name string) runspec.Spec {
		return runspec.Spec{Mode: runspec.ModeTask, PlanID: plan, Name: name, Task: &runspec.Task{}}
	}
	taskRun(recorded.Name+"-unit", recorded.Name, task("1", "unit"), `["c","b"]`)
	// Two attempts of one step (attempts, across): one list.
	taskRun(recorded.Name+"-lint", recorded.Name, task("2", "lint"), `["x"]`)
	taskRun(recorded.Name+"-lint-2", recorded.Name, task("3", "lint"), `["x","y"]`)
	// A task that ended before it saved its caches, one without caches, a get.
	taskRun(recorded.Name+"-early", recorded.Name, task("4", "early"), "")
	taskRun(recorded.Name+"-bad", recorded.Name, task("5", "bad"), `{`)
	taskRun(recorded.Name+"-get", recorded.Name, runspec.Spec{Mode: runspec.ModeGet, PlanID: "6", Name: "repo", Get: &runspec.Get{Type: "git"}}, `["g"]`)
	// Another build's.
	taskRun(noneYet.Name+"-unit", noneYet.Name, task("1", "unit"), `["other"]`)
	got, err := recorded.TaskCaches(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"unit": {"b", "c"}, "lint": {"x", "y"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("TaskCaches (-want +got):\n%s", diff)
	}
}
