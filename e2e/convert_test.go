//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/concourse-tekton/concourse-tekton/runspec"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/pkg/apis"
	"sigs.k8s.io/yaml"
)

// runnerImage is the step runner's image: `make runner-image` writes bin/images/runner.tar,
// which the harness imports.
var runnerImage = envOr("E2E_RUNNER_IMAGE", "ghcr.io/concourse-tekton/runner:dev")

// convert runs the project's CLI the way a user would and returns the objects it printed.
func convert(t *testing.T, pipeline string, args ...string) []map[string]any {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "e2e.yml")
	if err := os.WriteFile(file, []byte(pipeline), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(cliBinary(t), append([]string{"convert", file,
		"--runner-image", runnerImage, "--resource-image", "mock=" + mockImage}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("convert: %v\n%s", err, stderr.String())
	}
	var objects []map[string]any
	for _, doc := range strings.Split(stdout.String(), "\n---\n") {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatalf("convert printed invalid YAML: %v\n%s", err, doc)
		}
		objects = append(objects, obj)
	}
	return objects
}

// apply creates the converted objects in ns, through the apiserver and Tekton's webhook.
func apply(t *testing.T, ns string, objects []map[string]any) (runs []string) {
	t.Helper()
	ctx := context.Background()
	for _, obj := range objects {
		raw, err := yaml.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		switch obj["kind"] {
		case "Task":
			var task pipelinev1.Task
			mustUnmarshal(t, raw, &task)
			_, err = testCluster.tekton.TektonV1().Tasks(ns).Create(ctx, &task, metav1.CreateOptions{})
		case "Pipeline":
			var p pipelinev1.Pipeline
			mustUnmarshal(t, raw, &p)
			_, err = testCluster.tekton.TektonV1().Pipelines(ns).Create(ctx, &p, metav1.CreateOptions{})
		case "PipelineRun":
			var pr pipelinev1.PipelineRun
			mustUnmarshal(t, raw, &pr)
			_, err = testCluster.tekton.TektonV1().PipelineRuns(ns).Create(ctx, &pr, metav1.CreateOptions{})
			runs = append(runs, pr.Name)
		default:
			t.Fatalf("convert printed an unexpected %v", obj["kind"])
		}
		if err != nil {
			t.Fatalf("creating %v: %v", obj["kind"], err)
		}
	}
	return runs
}

func mustUnmarshal(t *testing.T, raw []byte, into any) {
	t.Helper()
	if err := yaml.UnmarshalStrict(raw, into); err != nil {
		t.Fatalf("%v\n%s", err, raw)
	}
}

// taskLog is the log of a PipelineTask's step runner.
func taskLog(t *testing.T, ns string, pr *pipelinev1.PipelineRun, task string) string {
	t.Helper()
	ctx := context.Background()
	for _, ref := range pr.Status.ChildReferences {
		if ref.PipelineTaskName != task {
			continue
		}
		tr, err := testCluster.tekton.TektonV1().TaskRuns(ns).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		logs, err := podLogs(ctx, ns, tr.Status.PodName, runspec.StepContainer)
		if err != nil {
			t.Fatalf("logs of %s: %v", task, err)
		}
		return logs
	}
	t.Fatalf("no TaskRun for %s", task)
	return ""
}

// TestConvertedMockJob: a get → task → put job over the mock resource, converted by our
// own translator, runs on the cluster and succeeds; the task reads what the get fetched.
func TestConvertedMockJob(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	image := strings.Replace(busyboxImage, ":", "#", 1)
	pipeline := fmt.Sprintf(`
resources:
- name: in
  type: mock
  source: {initial_version: v1, create_files: {msg.txt: hello-from-mock}}
- name: out
  type: mock
  source: {}
jobs:
- name: job
  plan:
  - get: in
  - task: t
    config:
      platform: linux
      rootfs_uri: docker:///%s
      inputs: [{name: in}]
      outputs: [{name: built}]
      run: {path: sh, args: [-c, "cat in/msg.txt; echo; cp in/msg.txt built/msg.txt"]}
  - put: out
    params: {version: v2}
`, image)
	runs := apply(t, ns, convert(t, pipeline, "--build-volume-size", "64Mi"))
	if len(runs) != 1 {
		t.Fatalf("runs = %v", runs)
	}
	pr := waitPipelineRun(t, ns, runs[0])
	mustSucceed(t, "PipelineRun", pr.Name, pr.Status.GetCondition(apis.ConditionSucceeded))
	if log := taskLog(t, ns, pr, "task-t"); !strings.Contains(log, "hello-from-mock") {
		t.Errorf("the task's log %q lacks what the get fetched", log)
	}
}
