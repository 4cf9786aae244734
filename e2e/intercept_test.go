//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/tektonrun"
	"github.com/concourse-tekton/concourse-tekton/tektonrun/podexec"
	"github.com/concourse-tekton/concourse-tekton/translate"
)

// interceptPipeline's job makes an input, then a task that fails after writing an
// output, then (ensure) a task that lingers: the test enters the lingering one as it
// runs, and the failed one, which has ended, while the build still runs.
func interceptPipeline(t *testing.T) string {
	image := busyboxImageResource()
	pipeline := `jobs:
- name: debug
  plan:
  - task: make-input
    config:
      platform: linux
      ` + image + `
      outputs: [{name: src}]
      run: {path: sh, args: [-c, "echo hello > src/greeting"]}
  - task: broken
    config:
      platform: linux
      ` + image + `
      inputs: [{name: src}]
      outputs: [{name: out}]
      params: {COLOR: blue}
      run: {path: sh, args: [-c, "cp src/greeting out/ && echo broke > out/why && echo left behind > /tmp/scratch && exit 1"]}
    ensure:
      task: linger
      config:
        platform: linux
        ` + image + `
        inputs: [{name: src}]
        params: {COLOR: red}
        run: {path: sh, args: [-c, "echo lingering; sleep 600"], dir: src}
`
	path := filepath.Join(t.TempDir(), "debugging.yml")
	if err := os.WriteFile(path, []byte(pipeline), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestIntercept enters a running step through a pseudo-terminal (its working directory,
// environment, input, terminal size; exit ends the session with its status), then a
// failed step that has ended (a pod made again, with its input and output and the file it
// left in /tmp, deleted after).
// Its steps copy the runner in, with a container of their own (TestRunnerImageVolume
// enters a step that mounts it, as builds do by default on this cluster).
func TestIntercept(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	ctx := context.Background()
	if exit, _, stderr := runCLI(t, ctx, "run", interceptPipeline(t), "-j", "debug", "-n", ns, "--runner-image-volume=false"); exit != 0 {
		t.Fatalf("run: exit %d: %s", exit, stderr)
	}
	run := translate.RunName("debugging", "debug", "1")
	target, err := tektonrun.NewTarget(tektonrun.TargetOptions{Kubeconfig: kubeconfigPath(), Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	client := tektonrun.NewClient(target)
	defer client.Close()
	poll(t, "the linger step to run", 5*time.Minute, func(ctx context.Context) (bool, error) {
		ctrs, err := client.Containers(ctx, podexec.ContainerFilter{Run: run, Step: "linger"})
		return err == nil && len(ctrs) == 1 && ctrs[0].Running, err
	})

	// A running step, through a terminal.
	cmd := exec.Command(cliBinary(t), "intercept", "debugging/debug/1", "-n", ns, "-s", "linger")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfigPath())
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 41, Cols: 133})
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	var mu sync.Mutex
	var out bytes.Buffer
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := tty.Read(buf)
			mu.Lock()
			out.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	seen := func(s string) bool {
		mu.Lock()
		defer mu.Unlock()
		return strings.Contains(out.String(), s)
	}
	waitFor := func(s string) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for !seen(s) {
			if time.Now().After(deadline) {
				mu.Lock()
				t.Fatalf("no %q in the session's output:\n%s", s, out.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	send := func(line string) {
		if _, err := tty.Write([]byte(line + "\r")); err != nil {
			t.Fatal(err)
		}
	}
	// Typed input is echoed before the shell starts: only the command's output, which its
	// echo does not contain, says the shell runs (and so has the terminal's size, which
	// follows the process's start).
	send(`echo "rea""dy"`)
	waitFor("ready\r\n")
	send(`echo "pwd=$(pwd)"; echo "color=$COLOR"; ls; echo "size=$(stty size)"`)
	// The terminal echoes the line (its "size=" too) before the shell runs it: wait for
	// the command's own output, or exit may close the terminal before it is read.
	waitFor("size=41 133\r\n")
	send("exit 5")
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var exitErr *exec.ExitError
		if !errors.As(err, &exitErr) || exitErr.ExitCode() != 5 {
			t.Errorf("the session ended with %v, want exit status 5", err)
		}
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		t.Fatal("the session did not end on exit")
	}
	mu.Lock()
	session := out.String()
	mu.Unlock()
	for _, want := range []string{"pwd=/tmp/build/", "/src\r\n", "color=red\r\n", "greeting\r\n", "size=41 133\r\n"} {
		if !strings.Contains(session, want) {
			t.Errorf("the session lacks %q:\n%s", want, session)
		}
	}

	// The failed step, which has ended: its input and output, in a pod made again, and
	// what it left in its container's file system.
	exit, stdout, stderr := runCLI(t, ctx, "intercept", run, "-n", ns, "-s", "broken", "--", "sh", "-c", `cat src/greeting out/greeting out/why /tmp/scratch; echo "color=$COLOR"`)
	if exit != 0 || stdout != "hello\nhello\nbroke\nleft behind\ncolor=blue\n" {
		t.Errorf("intercepting the failed step: exit %d\nstdout:\n%s\nstderr:\n%s", exit, stdout, stderr)
	}
	if !strings.Contains(stderr, "step broken has ended: starting a pod like its own") {
		t.Errorf("no word of the pod made again:\n%s", stderr)
	}
	poll(t, "the pod made again to go", time.Minute, func(ctx context.Context) (bool, error) {
		pods, err := testCluster.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: runspec.LabelIntercept + "=true"})
		return err == nil && len(pods.Items) == 0, err
	})

	// Several candidates and no choice: listed, and nothing entered.
	exit, _, stderr = runCLI(t, ctx, "intercept", "-n", ns, "--", "true")
	if exit != 1 || !strings.Contains(stderr, "step: linger, type: task, running") || !strings.Contains(stderr, "no container chosen") {
		t.Errorf("several candidates: exit %d, stderr:\n%s", exit, stderr)
	}
	if exit, _, stderr := runCLI(t, ctx, "abort", run, "-n", ns); exit != 0 {
		t.Errorf("abort: exit %d: %s", exit, stderr)
	}
}
