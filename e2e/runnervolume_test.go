//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/translate"
)

// TestRunnerImageVolume runs a build whose step pods mount the runner's image as a volume
// instead of copying the runner in, as run does by default on a cluster that mounts
// images, as this one does: its steps run, as the image's user and as a uid the image
// does not know, and show their output; no pod has a container to install the runner;
// and a step that has ended is entered in a pod made again like its own, which has the
// runner the same way. With --runner-image-volume=false the runner is copied in, by a
// container of each pod. (TestIntercept enters steps whose runner was copied in.)
func TestRunnerImageVolume(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	image := busyboxImageResource()
	pipeline := `jobs:
- name: lean
  plan:
  - task: make
    config:
      platform: linux
      ` + image + `
      outputs: [{name: out}]
      run: {path: sh, args: [-c, "echo made > out/file && echo made it"]}
  - task: read
    config:
      platform: linux
      ` + image + `
      inputs: [{name: out}]
      run: {path: sh, args: [-c, "echo \"read $(cat out/file) as $(id -u)\""], user: "1000"}
`
	file := filepath.Join(t.TempDir(), "lean.yml")
	if err := os.WriteFile(file, []byte(pipeline), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	exit, stdout, stderr := runCLI(t, ctx, "run", file, "-j", "lean", "-w", "-n", ns, "--build-volume-size", "64Mi")
	if exit != 0 {
		t.Fatalf("run: exit %d\nstdout:\n%s\nstderr:\n%s", exit, stdout, stderr)
	}
	checkLines(t, stdout, []string{"made it", "read made as 1000", "succeeded"}, nil)
	if mounted, copied := runnerWays(t, ctx, ns, "1"); mounted != 2 || copied != 0 {
		t.Errorf("by default on this cluster %d of the build's pods mount the runner's image and %d copy the runner in, want 2 and 0", mounted, copied)
	}

	// The build has ended (its volume emptied): the pod made again has the runner, which
	// runs the command as the step's user.
	run := translate.RunName("lean", "lean", "1")
	exit, stdout, stderr = runCLI(t, ctx, "intercept", run, "-n", ns, "-s", "read", "--", "id", "-u")
	if exit != 0 || stdout != "1000\n" || !strings.Contains(stderr, "step read has ended: starting a pod like its own") {
		t.Errorf("intercepting the ended step: exit %d\nstdout:\n%s\nstderr:\n%s", exit, stdout, stderr)
	}

	exit, stdout, stderr = runCLI(t, ctx, "run", file, "-j", "lean", "-w", "-n", ns, "--build-volume-size", "64Mi", "--runner-image-volume=false")
	if exit != 0 {
		t.Fatalf("run --runner-image-volume=false: exit %d\nstdout:\n%s\nstderr:\n%s", exit, stdout, stderr)
	}
	checkLines(t, stdout, []string{"made it", "read made as 1000", "succeeded"}, nil)
	if mounted, copied := runnerWays(t, ctx, ns, "2"); mounted != 0 || copied != 2 {
		t.Errorf("with --runner-image-volume=false %d of the build's pods mount the runner's image and %d copy the runner in, want 0 and 2", mounted, copied)
	}
}

// runnerWays counts the pods of build n of the lean job that mount the runner's image,
// and those that copy the runner in with a container of their own.
func runnerWays(t *testing.T, ctx context.Context, ns, n string) (mounted, copied int) {
	t.Helper()
	pods, err := testCluster.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: runspec.LabelBuild + "=" + n})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if slices.ContainsFunc(p.Spec.Containers, func(c corev1.Container) bool { return c.Name == "step-"+runspec.StepInstall }) {
			copied++
		}
		if slices.ContainsFunc(p.Spec.Volumes, func(v corev1.Volume) bool { return v.Image != nil && v.Image.Reference == translate.DefaultRunnerImage }) {
			mounted++
		}
	}
	return mounted, copied
}
