//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// container is one line of `fly containers --json`.
type container struct {
	Handle       string `json:"id"`
	WorkerName   string `json:"worker_name"`
	Type         string `json:"type"`
	StepName     string `json:"step_name"`
	Attempt      string `json:"attempt"`
	PipelineName string `json:"pipeline_name"`
	JobName      string `json:"job_name"`
	BuildName    string `json:"build_name"`
	State        string `json:"state"`
}

// TestIntercept: fly intercept and fly containers through the web node. A running
// task's container is entered (a command it runs there ends the task), a missing bash
// falls back to sh as fly does on workers, and the containers of a failed build's
// attempts stay listed and can each be entered after the build (in a pod made again
// from the step's).
func TestIntercept(t *testing.T) {
	dumpOnFailure(t)
	t.Parallel()
	setPipeline(t, "intercept", fmt.Sprintf(`
jobs:
- name: wait
  plan:
  - task: wait-for-intercept
    config:
      platform: linux
      image_resource: %[1]s
      run: {path: sh, args: [-c, 'echo waiting; while [ ! -e /tmp/stop-waiting ]; do sleep 1; done; echo stopped waiting']}
- name: retry
  plan:
  - task: make
    config:
      platform: linux
      image_resource: %[1]s
      outputs: [{name: made}]
      run: {path: sh, args: [-c, 'echo made before > made/it.txt']}
  - task: count
    attempts: 2
    config:
      platform: linux
      image_resource: %[1]s
      inputs: [{name: made}]
      params: {MARK: marked}
      run: {path: sh, args: [-c, 'echo counting; exit 1']}
`, busybox()))

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	watch := startFly(t, ctx, "trigger-job", "-j", "intercept/wait", "-w")
	// The task's own line: fly's "no suitable workers found, waiting for worker..." (a
	// pod not yet scheduled, its volume not yet bound) says "waiting" too.
	eventually(t, "the task to wait", 3*time.Minute, func(context.Context) (bool, error) {
		return slices.Contains(strings.Split(strings.ReplaceAll(watch.output(), "\r", ""), "\n"), "waiting"), nil
	})

	var ctrs []container
	if err := jsonUnmarshal(flyOK(t, time.Minute, "containers", "--json"), &ctrs); err != nil {
		fatal(t, err)
	}
	var waiting *container
	for i, c := range ctrs {
		if c.PipelineName == "intercept" && c.JobName == "wait" {
			waiting = &ctrs[i]
		}
	}
	if waiting == nil || waiting.StepName != "wait-for-intercept" || waiting.Type != "task" || waiting.BuildName != "1" || waiting.WorkerName != "tekton-"+web.ns {
		fatalf(t, "fly containers: %+v; want the waiting task's, on worker tekton-%s", ctrs, web.ns)
	}
	// Its handle is its TaskRun's name.
	if _, err := web.tekton.TektonV1().TaskRuns(web.ns).Get(ctx, waiting.Handle, metav1.GetOptions{}); err != nil {
		errorf(t, "the container's handle %s is no TaskRun: %v", waiting.Handle, err)
	}

	// No bash in busybox: fly says so and runs sh, which reads the script from stdin
	// (written once fly has said it: its first try would take it).
	shell := startFlyIn(t, ctx, "intercept", "-j", "intercept/wait", "-s", "wait-for-intercept")
	eventually(t, "fly to fall back to sh", time.Minute, func(context.Context) (bool, error) {
		return strings.Contains(shell.output(), `Couldn't find "bash" on container, retrying with "sh"`), nil
	})
	if _, err := io.WriteString(shell.stdin, "echo in the shell; exit 3\n"); err != nil {
		fatal(t, err)
	}
	out, code := shell.wait(t)
	t.Logf("fly intercept (default shell): exit %d\n%s", code, out)
	if code != 3 || !strings.Contains(out, "in the shell") {
		errorf(t, "exit %d, want 3 and the shell's output", code)
	}

	// A command in the running container: it ends the task's wait.
	out = flyOK(t, time.Minute, "intercept", "-j", "intercept/wait", "-s", "wait-for-intercept", "--", "sh", "-c", "echo in $PWD; touch /tmp/stop-waiting")
	if !strings.Contains(out, "in /tmp/build/") {
		errorf(t, "the command did not run in the task's working directory")
	}
	out, code = watch.wait(t)
	t.Logf("fly trigger-job -w: exit %d\n%s", code, out)
	if code != 0 {
		fatalf(t, "the task did not stop waiting: exit %d, want 0", code)
	}
	inOrder(t, out, "waiting", "stopped waiting", "succeeded")

	out, code = fly(t, 5*time.Minute, "trigger-job", "-j", "intercept/retry", "-w")
	if code != 1 {
		fatalf(t, "fly trigger-job -j intercept/retry -w: exit %d, want 1\n%s", code, out)
	}
	// Both attempts' containers are there to choose from, in fly's chooser, which q quits.
	chooserCtx, cancelChooser := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancelChooser()
	chooser := startFlyIn(t, chooserCtx, "intercept", "-j", "intercept/retry", "-s", "count")
	eventually(t, "fly's chooser", time.Minute, func(context.Context) (bool, error) {
		return strings.Contains(chooser.output(), "[esc/q] quit"), nil
	})
	if _, err := io.WriteString(chooser.stdin, "q"); err != nil {
		fatal(t, err)
	}
	out, code = chooser.wait(t)
	t.Logf("fly intercept -s count: exit %d\n%s", code, out)
	for _, a := range []string{"1", "2"} {
		if want := "step: count, type: task, attempt: " + a; !strings.Contains(out, want) {
			errorf(t, "no %q to choose", want)
		}
	}
	// The ended task's second attempt, in a pod made again from its own: its params, its
	// working directory, its input (the failed build kept its volume).
	out = flyOK(t, 3*time.Minute, "intercept", "-j", "intercept/retry", "-s", "count", "--attempt", "2", "--", "sh", "-c", `echo "$MARK in $PWD: $(cat made/it.txt)"; exit 0`)
	if !regexp.MustCompile(`marked in /tmp/build/[^:]+: made before`).MatchString(out) {
		errorf(t, "not the task's session, with its input")
	}
	// A command the container lacks is not found, and fly says nothing of it, as on
	// workers (the web node logs it).
	out, code = fly(t, time.Minute, "intercept", "-j", "intercept/retry", "-s", "count", "--attempt", "1", "--", "no-such-command")
	t.Logf("fly intercept -- no-such-command: exit %d\n%s", code, out)
	if code != 0 || strings.Contains(out, "no-such-command") {
		errorf(t, "fly intercept -- no-such-command: exit %d, printed %q; want 0 and nothing said, as fly does", code, out)
	}
	// Concourse's hijack handler writes the error to fly before it logs it, so fly may
	// have exited before the line is there.
	if err := pollErr(context.Background(), 30*time.Second, func(context.Context) (bool, error) {
		return strings.Contains(web.logTail(1<<20), "executable file not found in $PATH: no-such-command"), nil
	}); err != nil {
		errorf(t, "the web node did not log the command not found: %v", err)
	}
	// The pods made for the sessions are gone with them.
	eventually(t, "the sessions' pods to go", time.Minute, func(ctx context.Context) (bool, error) {
		pods, err := web.kube.CoreV1().Pods(web.ns).List(ctx, metav1.ListOptions{LabelSelector: runspec.LabelIntercept})
		return err == nil && len(pods.Items) == 0, err
	})
}

// TestInterceptCheck: a resource's check has its container, as on workers: fly
// containers lists it (type check), fly intercept --check enters it (a pod made again
// from the check's own, in the resource type's image), and the next check's container
// takes its place, so there is one to choose.
func TestInterceptCheck(t *testing.T) {
	dumpOnFailure(t)
	t.Parallel()
	setPipeline(t, "intercept-check", `
resources:
- name: thing
  type: mock
  check_every: 1h
  source: {initial_version: v1}
jobs:
- name: use
  plan: [{get: thing}]
`)
	checkContainers := func() []container {
		t.Helper()
		var ctrs, checks []container
		if err := jsonUnmarshal(flyOK(t, time.Minute, "containers", "--json"), &ctrs); err != nil {
			fatal(t, err)
		}
		for _, c := range ctrs {
			if c.PipelineName == "intercept-check" && c.Type == "check" {
				checks = append(checks, c)
			}
		}
		return checks
	}
	for _, version := range []string{"", "version:v2"} {
		args := []string{"check-resource", "-r", "intercept-check/thing"}
		if version != "" {
			args = append(args, "-f", version)
		}
		flyOK(t, 5*time.Minute, args...)
		if checks := checkContainers(); len(checks) != 1 || checks[0].WorkerName != "tekton-"+web.ns {
			errorf(t, "check containers %+v; want the latest check's, on tekton-%s", checks, web.ns)
		}
		out := flyOK(t, 3*time.Minute, "intercept", "--check", "intercept-check/thing", "--", "sh", "-c", "ls /opt/resource")
		inOrder(t, out, "check", "in", "out")
	}
}
