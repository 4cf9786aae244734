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
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	watchapi "k8s.io/apimachinery/pkg/watch"
	"knative.dev/pkg/apis"
)

// diamondPipeline is the benchmark's job: a, then b and c in parallel, then d, each a
// task that prints a line.
func diamondPipeline() string {
	repo, tag, _ := strings.Cut(busyboxImage, ":")
	return `jobs:
- name: diamond
  plan:
  - task: a
    config: &t
      platform: linux
      image_resource: {type: registry-image, source: {repository: ` + repo + `, tag: "` + tag + `"}}
      run: {path: echo, args: [ok]}
  - in_parallel:
    - task: b
      config: *t
    - task: c
      config: *t
  - task: d
    config: *t
`
}

// handWritten is the same job as a Tekton user writes it: four Tasks with runAfter, on a
// workspace from a volumeClaimTemplate of the same size as the build's volume.
func handWritten(name string) *pipelinev1.PipelineRun {
	task := func(name string, after ...string) pipelinev1.PipelineTask {
		return pipelinev1.PipelineTask{
			Name: name, RunAfter: after,
			TaskSpec: &pipelinev1.EmbeddedTask{TaskSpec: pipelinev1.TaskSpec{
				Workspaces: []pipelinev1.WorkspaceDeclaration{{Name: "build"}},
				Steps:      []pipelinev1.Step{{Name: "run", Image: busyboxImage, Command: []string{"echo", "ok"}}},
			}},
			Workspaces: []pipelinev1.WorkspacePipelineTaskBinding{{Name: "build", Workspace: "build"}},
		}
	}
	return &pipelinev1.PipelineRun{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: pipelinev1.PipelineRunSpec{
			PipelineSpec: &pipelinev1.PipelineSpec{
				Workspaces: []pipelinev1.PipelineWorkspaceDeclaration{{Name: "build"}},
				Tasks:      []pipelinev1.PipelineTask{task("a"), task("b", "a"), task("c", "a"), task("d", "b", "c")},
			},
			Workspaces: benchVolume(),
		},
	}
}

// benchVolume is the workspace of a hand-written run: a claim from a volumeClaimTemplate
// of the size of the benchmarks' build volumes (--build-volume-size 64Mi).
func benchVolume() []pipelinev1.WorkspaceBinding {
	return []pipelinev1.WorkspaceBinding{{Name: "build", VolumeClaimTemplate: &corev1.PersistentVolumeClaim{
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: resource.MustParse("64Mi"),
			}},
		},
	}}}
}

// BenchmarkBuild compares a build of a four-step job (a; b and c in parallel; d) run with
// `run -w` against a hand-written Tekton PipelineRun of the same four steps, alternating
// them in one run on the same cluster. It reports each side's seconds per build (ours:
// the command's wall time, from its start to its exit after the last event; Tekton's:
// from creating the PipelineRun to seeing it done through a watch), their ratio, and the
// pods each build ran. Ours is run's default, which mounts the runner's image as each step
// pod's volume where the cluster does, as this one does; a third side copies the runner
// in with a container of its own (--runner-image-volume=false, a container more a pod),
// under a pipeline name of its own: copy-s/build and its ratio, x-tekton-copy.
func BenchmarkBuild(b *testing.B) {
	ns := namespace(b)
	file := filepath.Join(b.TempDir(), "diamond.yml")
	if err := os.WriteFile(file, []byte(diamondPipeline()), 0o644); err != nil {
		b.Fatal(err)
	}
	// A first build of each side pulls nothing new and warms the node's image cache,
	// so that neither side pays for it in the timings.
	copied := []string{"--runner-image-volume=false", "--pipeline", "diamond-copy"}
	ours(b, ns, file, "diamond")
	ours(b, ns, file, "diamond", copied...)
	tektons(b, ns, "warm")

	const rounds = 3
	var oursTime, copyTime, tektonTime time.Duration
	var oursPods, tektonPods int
	for i := 0; i < b.N; i++ {
		for r := 0; r < rounds; r++ {
			d, pods := ours(b, ns, file, "diamond")
			oursTime += d
			oursPods += pods
			d, _ = ours(b, ns, file, "diamond", copied...)
			copyTime += d
			d, pods = tektons(b, ns, fmt.Sprintf("hand-%d-%d", i, r))
			tektonTime += d
			tektonPods += pods
		}
	}
	n := float64(b.N * rounds)
	b.ReportMetric(oursTime.Seconds()/n, "s/build")
	b.ReportMetric(tektonTime.Seconds()/n, "tekton-s/build")
	b.ReportMetric(oursTime.Seconds()/tektonTime.Seconds(), "x-tekton")
	b.ReportMetric(copyTime.Seconds()/n, "copy-s/build")
	b.ReportMetric(copyTime.Seconds()/tektonTime.Seconds(), "x-tekton-copy")
	b.ReportMetric(float64(oursPods)/n, "pods/build")
	b.ReportMetric(float64(tektonPods)/n, "tekton-pods/build")
}

// ours runs one build of the job of the pipeline in file with run -w (and flags) and
// returns its wall time and the number of pods it ran.
func ours(b *testing.B, ns, file, job string, flags ...string) (time.Duration, int) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	p := startCLI(b, ctx, append([]string{"run", file, "-j", job, "-w", "-n", ns, "--runner-image", runnerImage,
		"--build-volume-size", "64Mi", "--kubeconfig", kubeconfigPath()}, flags...)...)
	exit, stdout, stderr := p.wait()
	elapsed := time.Since(start)
	if exit != 0 {
		b.Fatalf("%s: exit %d\nstdout:\n%s\nstderr:\n%s", p, exit, stdout, stderr)
	}
	m := startedLine.FindStringSubmatch(stderr)
	if m == nil {
		b.Fatalf("no PipelineRun named in the output of %s:\n%s", p, stderr)
	}
	return elapsed, podCount(b, ns, m[2])
}

// tektons creates the hand-written PipelineRun and returns the time until a watch sees it
// succeed, and the number of pods it ran.
func tektons(b *testing.B, ns, name string) (time.Duration, int) {
	b.Helper()
	runs := testCluster.tekton.TektonV1().PipelineRuns(ns)
	elapsed := untilSucceeded[*pipelinev1.PipelineRun](b, "PipelineRun", name, runs.Watch, func(ctx context.Context) error {
		_, err := runs.Create(ctx, handWritten(name), metav1.CreateOptions{})
		return err
	})
	return elapsed, podCount(b, ns, name)
}

// untilSucceeded makes a run with create (a PipelineRun or TaskRun named name, of type
// R, which watch watches) and returns the time from then until the watch sees it
// succeed; a run that fails fails b.
func untilSucceeded[R interface {
	*pipelinev1.PipelineRun | *pipelinev1.TaskRun
	GetStatusCondition() apis.ConditionAccessor
}](b *testing.B, kind, name string, watch func(context.Context, metav1.ListOptions) (watchapi.Interface, error), create func(context.Context) error) time.Duration {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	w, err := watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	start := time.Now()
	if err := create(ctx); err != nil {
		b.Fatal(err)
	}
	for ev := range w.ResultChan() {
		run, ok := ev.Object.(R)
		if !ok {
			continue
		}
		cond := run.GetStatusCondition().GetCondition(apis.ConditionSucceeded)
		finished, succeeded := done(cond)
		if !finished {
			continue
		}
		elapsed := time.Since(start)
		if !succeeded {
			b.Fatalf("%s %s failed: %+v", kind, name, cond)
		}
		return elapsed
	}
	b.Fatalf("%s %s: the watch ended before it did: %v", kind, name, ctx.Err())
	return 0
}

// podCount is the number of pods a PipelineRun ran (its TaskRuns' pods; an affinity
// assistant, when Tekton runs one, is counted too, as it is a pod of the build).
func podCount(b *testing.B, ns, pipelineRun string) int {
	b.Helper()
	return len(podNames(b, ns, "tekton.dev/pipelineRun="+pipelineRun))
}
