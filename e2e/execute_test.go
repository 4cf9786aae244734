//go:build e2e

package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// executeTask is the task the execute tests run: it lists its inputs, checks the big
// one, copies src into its output with a file of its own, and exits with $CODE.
func executeTask(t testing.TB, dir string) string {
	t.Helper()
	repo, tag, _ := strings.Cut(busyboxImage, ":")
	task := `platform: linux
image_resource: {type: registry-image, source: {repository: ` + repo + `, tag: "` + tag + `"}}
inputs: [{name: src}, {name: ci, optional: true}]
outputs: [{name: out}]
params: {CODE: "0", NAP: "0"}
run:
  path: sh
  args:
  - -c
  - |
    cd src && find . -type f | sort | sed 's/^/input: /' && cd ..
    [ -f ci/big ] && echo "big: $(sha256sum ci/big | cut -d' ' -f1)"
    cp -a src out/src && echo made by the task > out/made && ln -s made out/link
    echo "job: [$BUILD_JOB_NAME] pipeline: [$BUILD_PIPELINE_NAME]"
    sleep $NAP
    exit $CODE
`
	path := filepath.Join(dir, "task.yml")
	if err := os.WriteFile(path, []byte(task), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// writeFiles writes name → content under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// gitRepo makes dir a git work tree with files tracked, one untracked, and ignored ones.
func gitRepo(t *testing.T, dir string) {
	t.Helper()
	writeFiles(t, dir, map[string]string{
		".gitignore": "*.log\nbuild/\n", "main.go": "package main\n", "docs/readme.md": "# hi\n",
		"untracked.txt": "new\n", "debug.log": "noise\n", "build/bin": "binary\n",
	})
	for _, args := range [][]string{{"init", "-q"}, {"add", ".gitignore", "main.go", "docs/readme.md"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "HOME="+dir, "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
}

// bigFile writes size pseudo-random bytes and returns their SHA-256.
func bigFile(t testing.TB, path string, size int64) string {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	src := rand.NewChaCha8([32]byte{1})
	if _, err := io.CopyN(io.MultiWriter(f, h), src, size); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// noTransferPods checks that no transfer pod is left in the namespace.
func noTransferPods(t *testing.T, ns string) {
	t.Helper()
	poll(t, "the transfer pods to go", time.Minute, func(ctx context.Context) (bool, error) {
		pods, err := testCluster.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: runspec.LabelTransfer + "=true"})
		return err == nil && len(pods.Items) == 0, err
	})
}

// TestExecute runs a task config with two local inputs, one of them a git work tree and
// one 200 MB, and downloads its output: the bytes round-trip, git's ignored files stay
// home (unless --include-ignored), the big upload reports its progress, and nothing is
// left of the transfers.
func TestExecute(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	ctx := context.Background()
	dir := t.TempDir()
	task := executeTask(t, dir)
	src, ci, out := filepath.Join(dir, "src"), filepath.Join(dir, "ci"), filepath.Join(dir, "out")
	gitRepo(t, src)
	if err := os.Mkdir(ci, 0o755); err != nil {
		t.Fatal(err)
	}
	sum := bigFile(t, filepath.Join(ci, "big"), 200<<20)

	exit, stdout, stderr := runCLI(t, ctx, "execute", "-n", ns, "--no-color", "--build-volume-size", "2Gi",
		"-c", task, "-i", "src="+src, "-i", "ci="+ci, "-o", "out="+out)
	if exit != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", exit, stdout, stderr)
	}
	checkLines(t, stdout, []string{
		"input: ./.gitignore", "input: ./docs/readme.md", "input: ./main.go", "input: ./untracked.txt",
		"big: " + sum, "job: [] pipeline: []", "succeeded",
	}, []string{"input: ./debug.log", "input: ./build/bin"})
	if !strings.Contains(stderr, "uploading ci: done, 200.0 MiB (") {
		t.Errorf("no progress line for the 200 MB upload; stderr:\n%s", stderr)
	}
	for name, want := range map[string]string{"src/main.go": "package main\n", "src/docs/readme.md": "# hi\n", "src/untracked.txt": "new\n", "made": "made by the task\n"} {
		if got, err := os.ReadFile(filepath.Join(out, name)); err != nil || string(got) != want {
			t.Errorf("downloaded %s = %q, %v; want %q", name, got, err, want)
		}
	}
	if target, err := os.Readlink(filepath.Join(out, "link")); err != nil || target != "made" {
		t.Errorf("downloaded link -> %q, %v; want made", target, err)
	}
	if _, err := os.Stat(filepath.Join(out, "src", "debug.log")); err == nil {
		t.Errorf("an ignored file was uploaded")
	}
	noTransferPods(t, ns)

	// --include-ignored uploads them too.
	exit, stdout, stderr = runCLI(t, ctx, "execute", "-n", ns, "--no-color", "-c", task, "-i", "src="+src, "--include-ignored")
	if exit != 0 {
		t.Fatalf("--include-ignored: exit %d\nstdout:\n%s\nstderr:\n%s", exit, stdout, stderr)
	}
	checkLines(t, stdout, []string{"input: ./debug.log", "input: ./build/bin", "input: ./.git/HEAD"}, nil)
}

// TestExecuteFailsAndAborts checks execute's exit status: the task's when it fails (its
// outputs downloaded all the same), 3 when Ctrl-C aborts it; and that an input the task
// needs but is not given stops it before anything is made on the cluster.
func TestExecuteFailsAndAborts(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	ctx := context.Background()
	dir := t.TempDir()
	task := executeTask(t, dir)
	src, out := filepath.Join(dir, "src"), filepath.Join(dir, "out")
	writeFiles(t, src, map[string]string{"a": "a\n"})

	exit, stdout, stderr := runCLI(t, ctx, "execute", "-n", ns, "--no-color", "-c", task)
	if exit != 1 || !strings.Contains(stderr, "missing required input `src`") {
		t.Errorf("without src: exit %d, stderr:\n%s", exit, stderr)
	}
	runs, err := testCluster.tekton.TektonV1().PipelineRuns(ns).List(ctx, metav1.ListOptions{})
	claims, err2 := testCluster.kube.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
	if err != nil || err2 != nil || len(runs.Items)+len(claims.Items) != 0 {
		t.Errorf("an execute that failed its checks left objects: %v %v", err, err2)
	}

	failing := strings.Replace(string(mustRead(t, task)), `CODE: "0"`, `CODE: "42"`, 1)
	if err := os.WriteFile(task, []byte(failing), 0o644); err != nil {
		t.Fatal(err)
	}
	exit, stdout, stderr = runCLI(t, ctx, "execute", "-n", ns, "--no-color", "-c", task, "-i", "src="+src, "-o", "out="+out)
	if exit != 42 {
		t.Errorf("a task that exits 42: exit %d\nstdout:\n%s\nstderr:\n%s", exit, stdout, stderr)
	}
	checkLines(t, stdout, []string{"input: ./a", "failed"}, nil)
	if got, err := os.ReadFile(filepath.Join(out, "made")); err != nil || string(got) != "made by the task\n" {
		t.Errorf("the failed task's output was not downloaded: %q, %v", got, err)
	}

	napping := strings.Replace(failing, `NAP: "0"`, `NAP: "600"`, 1)
	if err := os.WriteFile(task, []byte(napping), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startCLI(t, ctx, "execute", "-n", ns, "--no-color", "-c", task, "-i", "src="+src)
	p.waitForLine("job: [] pipeline: []", 3*time.Minute)
	p.interrupt()
	exit, stdout, stderr = p.wait()
	if exit != 3 {
		t.Errorf("Ctrl-C: exit %d, want 3 (aborted)\nstdout:\n%s\nstderr:\n%s", exit, stdout, stderr)
	}
	checkLines(t, stdout, []string{"interrupted", "aborted"}, []string{"succeeded", "failed"})
	noTransferPods(t, ns)
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestExecuteInputsFrom takes a task's inputs from a job (execute -j): the job's get of a
// mock resource, at the version the job's build fetched, under the name -m maps; the
// other input uploaded.
func TestExecuteInputsFrom(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	ctx := context.Background()
	dir := t.TempDir()
	image := busyboxImageResource()
	pipeline := `resources:
- name: thing
  type: mock
  source: {initial_version: v1, create_files: {hello.txt: from-the-job}}
jobs:
- name: use
  plan:
  - get: thing
  - task: show
    config:
      platform: linux
      ` + image + `
      inputs: [{name: thing}]
      run: {path: cat, args: [thing/hello.txt]}
`
	task := `platform: linux
` + image + `
inputs: [{name: stuff}, {name: src}]
run: {path: sh, args: [-c, "cat stuff/hello.txt; echo; cat stuff/version; echo; cat src/a"]}
`
	writeFiles(t, dir, map[string]string{"jobs.yml": pipeline, "task.yml": task, "src/a": "local\n"})
	if exit, stdout, stderr := runCLI(t, ctx, "run", filepath.Join(dir, "jobs.yml"), "-j", "use", "-w", "-n", ns, "--no-color",
		"--resource-image", "mock="+mockImage); exit != 0 {
		t.Fatalf("run: exit %d\nstdout:\n%s\nstderr:\n%s", exit, stdout, stderr)
	}
	exit, stdout, stderr := runCLI(t, ctx, "execute", "-n", ns, "--no-color", "-c", filepath.Join(dir, "task.yml"),
		"-j", "jobs/use", "-m", "stuff=thing", "-i", "src="+filepath.Join(dir, "src"))
	if exit != 0 {
		t.Fatalf("execute -j: exit %d\nstdout:\n%s\nstderr:\n%s", exit, stdout, stderr)
	}
	checkLines(t, stdout, []string{"fetching version: v1", "from-the-job", "v1", "local", "succeeded"}, nil)

	exit, _, stderr = runCLI(t, ctx, "execute", "-n", ns, "-c", filepath.Join(dir, "task.yml"), "-j", "jobs/nope")
	if exit != 1 || !strings.Contains(stderr, "has no job jobs/nope") {
		t.Errorf("-j of a job that is not there: exit %d, stderr:\n%s", exit, stderr)
	}
}
