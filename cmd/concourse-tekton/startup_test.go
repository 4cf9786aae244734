package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// smallPipeline is a pipeline of the size of Concourse's hello-world example: validating it
// costs little beside the process's start-up.
const smallPipeline = `jobs:
- name: hello-world-job
  plan:
  - task: hello-world-task
    config:
      platform: linux
      image_resource:
        type: registry-image
        source: {repository: busybox}
      run:
        path: echo
        args: ["Hello world!"]
`

const bareMain = `package main

import "os"

func main() { os.Stdout.WriteString("hello\n") }
`

// build builds the main package of the directory src the way `make build` does, and
// returns the binary.
func build(b testing.TB, src, bin string) string {
	b.Helper()
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("building %s: %v\n%s", src, err, out)
	}
	return bin
}

// BenchmarkStartup measures a whole process of the command against a bare Go binary's (a
// hello world), in the same run: the metric x-bare is their ratio, the goal of issue 14
// being at most 2 for validate of a small pipeline.
func BenchmarkStartup(b *testing.B) {
	if testing.Short() {
		b.Skip("builds two binaries")
	}
	dir := b.TempDir()
	bin := build(b, ".", filepath.Join(dir, "concourse-tekton"))
	kube := build(b, "../concourse-tekton-kube", filepath.Join(dir, kubeCommand))
	bareDir := filepath.Join(dir, "bare")
	if err := os.MkdirAll(bareDir, 0o755); err != nil {
		b.Fatal(err)
	}
	for name, data := range map[string]string{"main.go": bareMain, "go.mod": "module bare\n"} {
		if err := os.WriteFile(filepath.Join(bareDir, name), []byte(data), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	bare := build(b, bareDir, filepath.Join(dir, "bare-binary"))
	pipeline := filepath.Join(dir, "hello-world.yml")
	if err := os.WriteFile(pipeline, []byte(smallPipeline), 0o644); err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		bin  string
		args []string
	}{
		{"version", bin, []string{"--version"}},
		{"validate", bin, []string{"validate", pipeline}},
		// convert, handed over to concourse-tekton-kube, and the same run by it directly:
		// the hand-over's cost is their difference.
		{"convert", bin, []string{"convert", pipeline}},
		{"convert-kube", kube, []string{"convert", pipeline}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			// Each iteration runs both, so that the machine's moods weigh on them alike.
			var self, base time.Duration
			for b.Loop() {
				self += timeRun(b, bc.bin, bc.args...)
				base += timeRun(b, bare)
			}
			b.ReportMetric(float64(self.Nanoseconds())/float64(b.N), "ns/op")
			b.ReportMetric(float64(base.Nanoseconds())/float64(b.N), "bare-ns/op")
			b.ReportMetric(float64(self)/float64(base), "x-bare")
		})
	}
}

// timeRun runs a binary to its end and returns how long it took.
func timeRun(b *testing.B, bin string, args ...string) time.Duration {
	b.Helper()
	start := time.Now()
	if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
		b.Fatalf("%s %v: %v\n%s", bin, args, err, out)
	}
	return time.Since(start)
}
