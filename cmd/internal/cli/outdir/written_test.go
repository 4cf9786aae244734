package outdir

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const pipelineDoc = `apiVersion: tekton.dev/v1
kind: Pipeline
metadata:
  annotations:
    concourse-ci.org/job: unit
    concourse-ci.org/pipeline: app
    concourse-ci.org/team: main
  labels:
    app.kubernetes.io/managed-by: concourse-tekton
  name: app-unit
spec:
  finally:
    - name: verdict
      taskRef:
        name: concourse-step-2222222222
  tasks:
    - name: get-repo
      taskRef:
        name: concourse-step-1111111111
`

const taskDoc = `apiVersion: tekton.dev/v1
kind: Task
metadata:
  labels:
    app.kubernetes.io/managed-by: concourse-tekton
  name: concourse-step-1111111111
spec:
  steps: []
`

func TestParseWritten(t *testing.T) {
	tests := []struct {
		name string
		file string
		data string
		want *Written
	}{
		{
			name: "a pipeline",
			file: "pipeline-app-unit.yaml",
			data: pipelineDoc,
			want: &Written{File: "pipeline-app-unit.yaml", Kind: "Pipeline", Name: "app-unit", Team: "main", Pipeline: "app", Job: "unit",
				TaskRefs: []string{"concourse-step-1111111111", "concourse-step-2222222222"}},
		},
		{
			name: "a task",
			file: "task-concourse-step-1111111111.yaml",
			data: taskDoc,
			want: &Written{File: "task-concourse-step-1111111111.yaml", Kind: "Task", Name: "concourse-step-1111111111"},
		},
		{name: "renamed", file: "pipeline-app-unit-old.yaml", data: pipelineDoc},
		{name: "another kind's name", file: "task-app-unit.yaml", data: pipelineDoc},
		{name: "not labelled", file: "task-mine.yaml", data: "kind: Task\nmetadata:\n  name: mine\n"},
		{name: "labelled by another tool", file: "task-mine.yaml", data: "kind: Task\nmetadata:\n  name: mine\n  labels:\n    app.kubernetes.io/managed-by: helm\n"},
		{name: "more documents", file: "pipeline-app-unit.yaml", data: pipelineDoc + "---\nkind: ConfigMap\n"},
		{name: "not YAML", file: "pipeline-app-unit.yaml", data: "{"},
		{name: "empty", file: "pipeline-app-unit.yaml", data: ""},
		{name: "a README", file: "README.md", data: "# out\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w, ok := ParseWritten(tc.file, []byte(tc.data))
			var got *Written
			if ok {
				got = &w
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadWritten(t *testing.T) {
	dir := t.TempDir()
	layout(t, dir, map[string]string{
		"pipeline-app-unit.yaml":              pipelineDoc,
		"task-concourse-step-1111111111.yaml": taskDoc,
		"README.md":                           "mine\n",
		"pipeline-x.yaml/":                    "",
	})
	got, err := ReadWritten(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, w := range got {
		files = append(files, w.File)
	}
	if diff := cmp.Diff([]string{"pipeline-app-unit.yaml", "task-concourse-step-1111111111.yaml"}, files); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got, err := ReadWritten(filepath.Join(dir, "nope")); err != nil || got != nil {
		t.Errorf("a directory that does not exist: %v, %v", got, err)
	}
	if err := os.Chmod(dir, 0o000); err == nil && os.Getuid() != 0 {
		defer os.Chmod(dir, 0o755)
		if _, err := ReadWritten(dir); err == nil {
			t.Errorf("an unreadable directory: no error")
		}
	}
}

func TestStale(t *testing.T) {
	pipeline := func(team, pipeline, job string, tasks ...string) Written {
		name := pipeline + "-" + job
		return Written{File: FileName("Pipeline", name), Kind: "Pipeline", Name: name, Team: team, Pipeline: pipeline, Job: job, TaskRefs: tasks}
	}
	run := func(team, pipeline, job, build string) Written {
		name := pipeline + "-" + job + "-" + build
		return Written{File: FileName("PipelineRun", name), Kind: "PipelineRun", Name: name, Team: team, Pipeline: pipeline, Job: job}
	}
	task := func(name string) Written { return Written{File: FileName("Task", name), Kind: "Task", Name: name} }
	written := []Written{
		task("t1"), task("t2"), task("t3"), task("t4"),
		pipeline("main", "app", "unit", "t1"), run("main", "app", "unit", "1"),
		pipeline("main", "app", "gone", "t2"), run("main", "app", "gone", "1"),
		pipeline("main", "other", "unit", "t3"), run("main", "other", "unit", "1"),
		pipeline("ops", "app", "deploy", "t3"),
		{File: "configmap-x.yaml", Kind: "ConfigMap", Name: "x"},
	}
	tests := []struct {
		name string
		conv Conversion
		want []string
	}{
		{
			name: "job gone",
			conv: Conversion{Team: "main", Pipelines: map[string]map[string]bool{"app": nil}, Files: files(task("t1"), pipeline("main", "app", "unit"), run("main", "app", "unit", "1"))},
			want: []string{"pipeline-app-gone.yaml", "pipelinerun-app-gone-1.yaml", "task-t2.yaml", "task-t4.yaml"},
		},
		{
			name: "another build",
			conv: Conversion{Team: "main", Pipelines: map[string]map[string]bool{"app": nil}, Files: files(task("t1"), task("t2"), pipeline("main", "app", "unit"), pipeline("main", "app", "gone"), run("main", "app", "unit", "2"), run("main", "app", "gone", "2"))},
			want: []string{"pipelinerun-app-gone-1.yaml", "pipelinerun-app-unit-1.yaml", "task-t4.yaml"},
		},
		{
			name: "jobs not selected stay",
			conv: Conversion{Team: "main", Pipelines: map[string]map[string]bool{"app": {"gone": true}}, Files: files(task("t1"), pipeline("main", "app", "unit"), run("main", "app", "unit", "1"))},
			want: []string{"task-t4.yaml"},
		},
		{
			name: "a new pipeline",
			conv: Conversion{Team: "main", Pipelines: map[string]map[string]bool{"new": nil}, Files: files(task("t9"))},
			want: []string{"task-t4.yaml"},
		},
		{
			name: "two pipelines at once",
			conv: Conversion{Team: "main", Pipelines: map[string]map[string]bool{"app": nil, "other": nil}, Files: files(task("t1"), pipeline("main", "app", "unit"), run("main", "app", "unit", "1"))},
			want: []string{"pipeline-app-gone.yaml", "pipeline-other-unit.yaml", "pipelinerun-app-gone-1.yaml", "pipelinerun-other-unit-1.yaml", "task-t2.yaml", "task-t4.yaml"},
		},
		{
			name: "same pipeline, another team",
			conv: Conversion{Team: "ops", Pipelines: map[string]map[string]bool{"app": nil}, Files: files(task("t9"))},
			want: []string{"pipeline-app-deploy.yaml", "task-t4.yaml"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.conv.Stale(written)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func files(ws ...Written) map[string]bool {
	out := map[string]bool{}
	for _, w := range ws {
		out[w.File] = true
	}
	return out
}
