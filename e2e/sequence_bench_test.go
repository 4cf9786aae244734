//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// sequenceJob is a job of sequential steps, and the same steps as a Tekton user writes
// them in one pod: a TaskRun of one step each, on a workspace from a volumeClaimTemplate
// of the size of the build's volume.
type sequenceJob struct {
	name     string
	pipeline string
	steps    []pipelinev1.Step
}

// sequenceJobs are the jobs of BenchmarkSequence: ten tasks one after another, each in
// the same image; and a get, a task (with an on_failure hook, which a build that succeeds
// does not run) and a put (with its implicit get), under an ensure.
func sequenceJobs() []sequenceJob {
	repo, tag, _ := strings.Cut(busyboxImage, ":")
	image := `{type: registry-image, source: {repository: ` + repo + `, tag: "` + tag + `"}}`
	var ten strings.Builder
	ten.WriteString("jobs:\n- name: ten\n  plan:\n")
	var tenSteps []pipelinev1.Step
	for i := 1; i <= 10; i++ {
		fmt.Fprintf(&ten, "  - task: t%d\n    config: {platform: linux, image_resource: %s, run: {path: echo, args: [step %d]}}\n", i, image, i)
		tenSteps = append(tenSteps, pipelinev1.Step{Name: fmt.Sprintf("t%d", i), Image: busyboxImage, Command: []string{"echo", fmt.Sprintf("step %d", i)}})
	}
	const source = `{"initial_version":"v1","create_files":{"data.txt":"hello"}}`
	resourceStep := func(name, script, request string) pipelinev1.Step {
		return pipelinev1.Step{Name: name, Image: mockImage, Command: []string{"sh", "-c",
			"echo '" + request + "' | /opt/resource/" + script + " $(workspaces.build.path)/thing"}}
	}
	task := func(name, script string) pipelinev1.Step {
		return pipelinev1.Step{Name: name, Image: busyboxImage, WorkingDir: "$(workspaces.build.path)", Command: []string{"sh", "-c", script}}
	}
	return []sequenceJob{{
		name:     "ten",
		pipeline: ten.String(),
		steps:    tenSteps,
	}, {
		name: "gtp",
		pipeline: `resources:
- name: thing
  type: mock
  source: ` + source + `
jobs:
- name: gtp
  plan:
  - get: thing
  - task: build
    config:
      platform: linux
      image_resource: ` + image + `
      inputs: [{name: thing}]
      outputs: [{name: out}]
      run: {path: sh, args: [-c, 'cat thing/data.txt > out/built; echo built']}
    on_failure:
      task: notify
      config: {platform: linux, image_resource: ` + image + `, run: {path: echo, args: [failed]}}
  - put: thing
    params: {version: v2}
  ensure:
    task: cleanup
    config: {platform: linux, image_resource: ` + image + `, run: {path: echo, args: [cleanup]}}
`,
		steps: []pipelinev1.Step{
			resourceStep("get", "in", `{"source":`+source+`,"version":{"version":"v1"}}`),
			task("build", "mkdir -p out && cat thing/data.txt > out/built && echo built"),
			resourceStep("put", "out", `{"source":`+source+`,"params":{"version":"v2"}}`),
			resourceStep("get-after-put", "in", `{"source":`+source+`,"version":{"version":"v2"}}`),
			task("cleanup", "echo cleanup"),
		},
	}}
}

// onePod is the TaskRun of the job's steps in one pod.
func (j sequenceJob) onePod(name string) *pipelinev1.TaskRun {
	return &pipelinev1.TaskRun{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: pipelinev1.TaskRunSpec{
			TaskSpec: &pipelinev1.TaskSpec{
				Workspaces: []pipelinev1.WorkspaceDeclaration{{Name: "build"}},
				Steps:      j.steps,
			},
			Workspaces: benchVolume(),
		},
	}
}

// BenchmarkSequence compares builds of jobs of sequential steps (sequenceJobs) run with
// `run -w` against the same steps as one hand-written TaskRun, one pod, alternating them
// in one run on the same cluster (make bench-e2e runs it three times: benchstat gives the
// medians). For each job it reports each side's seconds per build (ours: the command's
// wall time to its exit after the last event; the TaskRun's: from its creation to a watch
// seeing it done), their ratio, and the pods each build ran.
func BenchmarkSequence(b *testing.B) {
	for _, job := range sequenceJobs() {
		b.Run(job.name, func(b *testing.B) {
			// A namespace of each run of the body: the harness runs it more than once.
			ns := namespace(b)
			file := filepath.Join(b.TempDir(), job.name+".yml")
			if err := os.WriteFile(file, []byte(job.pipeline), 0o644); err != nil {
				b.Fatal(err)
			}
			run := func() (time.Duration, int) {
				return ours(b, ns, file, job.name, "--resource-image", "mock="+mockImage)
			}
			// A first build of each side pulls nothing new and warms the node's image
			// cache, so that neither side pays for it in the timings.
			run()
			onePod(b, ns, job, job.name+"-warm")
			var oursTime, podTime time.Duration
			var oursPods int
			for i := 0; i < b.N; i++ {
				d, pods := run()
				oursTime += d
				oursPods += pods
				podTime += onePod(b, ns, job, fmt.Sprintf("%s-%d", job.name, i))
			}
			n := float64(b.N)
			b.ReportMetric(oursTime.Seconds()/n, "s/build")
			b.ReportMetric(podTime.Seconds()/n, "one-pod-s/build")
			b.ReportMetric(oursTime.Seconds()/podTime.Seconds(), "x-one-pod")
			b.ReportMetric(float64(oursPods)/n, "pods/build")
		})
	}
}

// onePod creates the job's one-pod TaskRun and returns the time until a watch sees it
// succeed.
func onePod(b *testing.B, ns string, job sequenceJob, name string) time.Duration {
	b.Helper()
	runs := testCluster.tekton.TektonV1().TaskRuns(ns)
	return untilSucceeded[*pipelinev1.TaskRun](b, "TaskRun", name, runs.Watch, func(ctx context.Context) error {
		_, err := runs.Create(ctx, job.onePod(name), metav1.CreateOptions{})
		return err
	})
}
