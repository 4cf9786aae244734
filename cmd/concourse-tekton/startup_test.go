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

// BenchmarkStartup measures whole processes of the command, in the same run as a bare Go
// binary's (a hello world): their wall time (ns/op, and x-bare, its ratio to the bare
// binary's) and their CPU time, user and system (cpu-ns/op). The command links the
// Kubernetes and Tekton libraries, whose package initialisation every command pays. (Not
// their peak resident set: on Linux, a child that os/exec starts, sharing its parent's
// memory until it execs, counts its parent's in its own peak.)
//
// With CONCOURSE_TEKTON_STARTUP_BASELINE=BIN (another build of the command, an earlier
// commit's), each iteration runs BIN too, with the same arguments, and reports its figures
// as base-ns/op and base-cpu-ns/op: the runs alternate, so that the machine's moods weigh
// on both alike.
func BenchmarkStartup(b *testing.B) {
	if testing.Short() {
		b.Skip("builds two binaries")
	}
	baseline := os.Getenv("CONCOURSE_TEKTON_STARTUP_BASELINE")
	dir := b.TempDir()
	bin := build(b, ".", filepath.Join(dir, "concourse-tekton"))
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
	booklit, err := filepath.Abs("../../examples/booklit/pipeline.yml")
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		args []string
	}{
		{"version", []string{"--version"}},
		{"validate", []string{"validate", pipeline}},
		{"validate-booklit", []string{"validate", booklit}},
		{"convert", []string{"convert", pipeline}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var self, base, bareRun usage
			for b.Loop() {
				self.add(timeRun(b, bin, bc.args...))
				if baseline != "" {
					base.add(timeRun(b, baseline, bc.args...))
				}
				bareRun.add(timeRun(b, bare))
			}
			self.report(b, "", b.N)
			if baseline != "" {
				base.report(b, "base-", b.N)
			}
			b.ReportMetric(float64(bareRun.wall.Nanoseconds())/float64(b.N), "bare-ns/op")
			b.ReportMetric(float64(self.wall)/float64(bareRun.wall), "x-bare")
		})
	}
}

// usage is what processes cost, summed.
type usage struct{ wall, cpu time.Duration }

func (u *usage) add(v usage) {
	u.wall += v.wall
	u.cpu += v.cpu
}

// report reports the mean of n processes, its metrics' units prefixed.
func (u *usage) report(b *testing.B, prefix string, n int) {
	b.ReportMetric(float64(u.wall.Nanoseconds())/float64(n), prefix+"ns/op")
	b.ReportMetric(float64(u.cpu.Nanoseconds())/float64(n), prefix+"cpu-ns/op")
}

// timeRun runs a binary to its end and returns what it cost.
func timeRun(b *testing.B, bin string, args ...string) usage {
	b.Helper()
	cmd := exec.Command(bin, args...)
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%s %v: %v\n%s", bin, args, err, out)
	}
	ps := cmd.ProcessState
	return usage{wall: time.Since(start), cpu: ps.UserTime() + ps.SystemTime()}
}
