//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/translate"
)

// TestRunnerImageVolume runs a build whose step pods mount the runner's image as a volume
// (--runner-image-volume) instead of copying the runner in: its steps run, as the image's
// user and as a uid the image does not know, and show their output; no pod has a
// container to install the runner; and a step that has ended is entered in a pod made
// again like its own, which has the runner the same way. (TestIntercept enters steps
// whose runner was copied in.)
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
	exit, stdout, stderr := runCLI(t, ctx, "run", file, "-j", "lean", "-w", "-n", ns, "--runner-image-volume", "--build-volume-size", "64Mi")
	if exit != 0 {
		t.Fatalf("run: exit %d\nstdout:\n%s\nstderr:\n%s", exit, stdout, stderr)
	}
	checkLines(t, stdout, []string{"made it", "read made as 1000", "succeeded"}, nil)

	pods, err := testCluster.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: runspec.LabelBuild})
	if err != nil {
		t.Fatal(err)
	}
	mounted := 0
	for _, p := range pods.Items {
		for _, c := range p.Spec.Containers {
			if c.Name == "step-"+runspec.StepInstall {
				t.Errorf("pod %s has a container to install the runner", p.Name)
			}
		}
		for _, v := range p.Spec.Volumes {
			if v.Image != nil && v.Image.Reference == translate.DefaultRunnerImage {
				mounted++
			}
		}
	}
	if mounted < 2 {
		t.Errorf("%d of the build's %d pods mount the runner's image, want both tasks'", mounted, len(pods.Items))
	}

	// The build has ended (its volume emptied): the pod made again has the runner, which
	// runs the command as the step's user.
	run := translate.RunName("lean", "lean", "1")
	exit, stdout, stderr = runCLI(t, ctx, "intercept", run, "-n", ns, "-s", "read", "--", "id", "-u")
	if exit != 0 || stdout != "1000\n" || !strings.Contains(stderr, "step read has ended: starting a pod like its own") {
		t.Errorf("intercepting the ended step: exit %d\nstdout:\n%s\nstderr:\n%s", exit, stdout, stderr)
	}
}
