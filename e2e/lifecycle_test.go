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

// TestLandRetire lands a namespace while a build runs: no new build starts there, the
// running one finishes; check-target says so; retire then waits for it and leaves nothing
// of ours in the namespace, which takes builds again afterwards.
func TestLandRetire(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	ctx := context.Background()
	image := busyboxImageResource()
	file := filepath.Join(t.TempDir(), "life.yml")
	pipeline := `jobs:
- name: slow
  plan:
  - task: wait
    config:
      platform: linux
      ` + image + `
      run: {path: sh, args: [-c, "sleep 15; echo finished"]}
- name: quick
  plan:
  - task: say
    config:
      platform: linux
      ` + image + `
      run: {path: echo, args: [quick]}
`
	if err := os.WriteFile(file, []byte(pipeline), 0o644); err != nil {
		t.Fatal(err)
	}
	if exit, stdout, stderr := runCLI(t, ctx, "run", file, "-j", "slow", "-n", ns); exit != 0 {
		t.Fatalf("run -j slow: exit %d\n%s%s", exit, stdout, stderr)
	}
	slow := translate.RunName("life", "slow", "1")
	follower := startCLI(t, ctx, "events", slow, "-n", ns, "--no-color")

	exit, stdout, stderr := runCLI(t, ctx, "land", "-n", ns)
	if exit != 0 || !strings.Contains(stdout, "is landing: it takes no new build; 1 running") {
		t.Fatalf("land: exit %d\n%s%s", exit, stdout, stderr)
	}
	exit, stdout, stderr = runCLI(t, ctx, "run", file, "-j", "quick", "-n", ns)
	if exit == 0 || !strings.Contains(stderr, "the target takes no new builds") || !strings.Contains(stderr, "is landing since") {
		t.Errorf("run on a landing target: exit %d\n%s%s", exit, stdout, stderr)
	}
	exit, stdout, _ = runCLI(t, ctx, "check-target", "-n", ns)
	if !strings.Contains(stdout, "is landing since") || !strings.Contains(stdout, "1 running") {
		t.Errorf("check-target of a landing target: exit %d\n%s", exit, stdout)
	}

	exit, stdout, stderr = runCLI(t, ctx, "retire", "-n", ns, "--timeout", "5m")
	if exit != 0 || !strings.Contains(stdout, "is retired: nothing of ours is left") || !strings.Contains(stderr, "waiting for 1 running builds to end") {
		t.Fatalf("retire: exit %d\n%s%s", exit, stdout, stderr)
	}
	// The running build finished before anything went.
	if exit, stdout, stderr := follower.wait(); exit != 0 || !strings.Contains(stdout, "finished\n") || !strings.Contains(stdout, "succeeded") {
		t.Errorf("the build that ran while the target landed: exit %d\n%s%s", exit, stdout, stderr)
	}
	ours := metav1.ListOptions{LabelSelector: runspec.LabelManagedBy + "=" + runspec.ManagedBy}
	kube, tk := testCluster.kube.CoreV1(), testCluster.tekton.TektonV1()
	var left []string
	count := func(kind string, n int, err error) {
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			left = append(left, kind)
		}
	}
	prs, err := tk.PipelineRuns(ns).List(ctx, metav1.ListOptions{})
	count("PipelineRuns", len(prs.Items), err)
	trs, err := tk.TaskRuns(ns).List(ctx, metav1.ListOptions{})
	count("TaskRuns", len(trs.Items), err)
	pls, err := tk.Pipelines(ns).List(ctx, metav1.ListOptions{})
	count("Pipelines", len(pls.Items), err)
	tasks, err := tk.Tasks(ns).List(ctx, metav1.ListOptions{})
	count("Tasks", len(tasks.Items), err)
	pods, err := kube.Pods(ns).List(ctx, metav1.ListOptions{})
	count("pods", len(pods.Items), err)
	claims, err := kube.PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
	count("PersistentVolumeClaims", len(claims.Items), err)
	secrets, err := kube.Secrets(ns).List(ctx, ours)
	count("Secrets", len(secrets.Items), err)
	cms, err := kube.ConfigMaps(ns).List(ctx, ours)
	count("ConfigMaps", len(cms.Items), err)
	if len(left) > 0 {
		t.Errorf("after retire, the namespace still holds %v", left)
	}

	// A retired namespace is a fresh one: it takes builds again.
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if exit, stdout, stderr := runCLI(t, ctx, "run", file, "-j", "quick", "-w", "-n", ns); exit != 0 || !strings.Contains(stdout, "quick\n") {
		t.Errorf("run after retire: exit %d\n%s%s", exit, stdout, stderr)
	}
}
