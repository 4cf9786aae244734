//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestExecute: fly execute runs a task file's task on the cluster through the web node,
// as on workers. The inputs it uploads (-i) go to a volume of the worker's baggageclaim
// and from there onto the build's volume; the task's outputs (-o) come back as the
// build's artifacts, which fly downloads, whether the task succeeded or not; the task's
// exit status is fly's. The uploads and outputs are the worker's volumes (fly volumes).
func TestExecute(t *testing.T) {
	dumpOnFailure(t)
	t.Parallel()
	dir := t.TempDir()
	files := map[string]string{
		"src/hello.txt":      "hello from fly\n",
		"src/sub/nested.txt": "nested\n",
		"task.yml": `platform: linux
image_resource: ` + busybox() + `
inputs: [{name: src}]
outputs: [{name: out}]
run:
  path: sh
  args: [-c, 'cat src/hello.txt src/sub/nested.txt; mkdir out/deep; echo made from $(cat src/hello.txt) > out/deep/result.txt']
`,
		"fail.yml": `platform: linux
image_resource: ` + busybox() + `
inputs: [{name: src}]
outputs: [{name: out}]
run: {path: sh, args: [-c, 'echo partial > out/partial.txt; exit 3']}
`,
	}
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			fatal(t, err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			fatal(t, err)
		}
	}
	src := filepath.Join(dir, "src")

	out := filepath.Join(dir, "out")
	got := flyOK(t, 5*time.Minute, "execute", "-c", filepath.Join(dir, "task.yml"), "-i", "src="+src, "-o", "out="+out)
	inOrder(t, got, "executing build", "hello from fly", "nested", "succeeded")
	if result, err := os.ReadFile(filepath.Join(out, "deep", "result.txt")); err != nil || string(result) != "made from hello from fly\n" {
		errorf(t, "output out/deep/result.txt: %q, %v; want what the task wrote", result, err)
	}

	// A task that fails: fly exits with its status, and the output it made comes back.
	partial := filepath.Join(dir, "partial")
	got, code := fly(t, 5*time.Minute, "execute", "-c", filepath.Join(dir, "fail.yml"), "-i", "src="+src, "-o", "out="+partial)
	t.Logf("fly execute -c fail.yml: exit %d\n%s", code, got)
	if code != 3 {
		errorf(t, "exit %d, want the task's 3", code)
	}
	inOrder(t, got, "executing build", "failed")
	if result, err := os.ReadFile(filepath.Join(partial, "partial.txt")); err != nil || string(result) != "partial\n" {
		errorf(t, "output out/partial.txt: %q, %v; want what the task wrote before it failed", result, err)
	}

	// The uploads and the outputs are volumes of the target's worker.
	var volumes []struct {
		Type   string `json:"type"`
		Worker string `json:"worker_name"`
	}
	if err := jsonUnmarshal(flyOK(t, time.Minute, "volumes", "--json"), &volumes); err != nil {
		fatal(t, err)
	}
	artifacts := 0
	for _, v := range volumes {
		if v.Worker == "tekton-"+web.ns && v.Type == "artifact" {
			artifacts++
		}
	}
	if artifacts < 4 {
		errorf(t, "fly volumes lists %d artifact volumes on tekton-%s; want at least 4 (2 uploads, 2 outputs): %+v", artifacts, web.ns, volumes)
	}
}
