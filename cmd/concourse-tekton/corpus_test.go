package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/concourse-tekton/concourse-tekton/cmd/internal/cli"
	"github.com/concourse-tekton/concourse-tekton/internal/testcorpus"
)

// BenchmarkCorpus runs `convert --skip-unsupported` and `validate` of every corpus
// pipeline in one process, as a user runs `concourse-tekton convert corpus/*` (its output
// to a file), and in the same iterations the floor, a process that decodes the same files
// with sigs.k8s.io/yaml (testdata/floor). It reports the CPU time of each, user and system
// (cpu-ns/op), and its ratio to the floor's, the start-up of each binary apart (its CPU
// time with nothing to do, `--version`, taken away): cpu-x-decode, which issue 46 holds
// within 3x for convert and 1.5x for validate. Some of the corpus's pipelines are invalid
// or cannot be converted, and then convert writes nothing: convert-written converts, in
// one process, those that can, and writes their documents. With
// CONCOURSE_TEKTON_STARTUP_BASELINE=BIN each iteration runs BIN the same way, alternately,
// and reports base-cpu-ns/op and base-cpu-x-decode.
func BenchmarkCorpus(b *testing.B) {
	if testing.Short() {
		b.Skip("builds two binaries")
	}
	files := testcorpus.Pipelines(b)
	baseline := os.Getenv("CONCOURSE_TEKTON_STARTUP_BASELINE")
	dir := b.TempDir()
	bin := build(b, ".", filepath.Join(dir, "concourse-tekton"))
	floor := build(b, "testdata/floor", filepath.Join(dir, "floor"))
	out, err := os.Create(filepath.Join(dir, "out.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	defer out.Close()
	var converting []string
	for _, f := range files {
		if cli.Main([]string{"convert", "--skip-unsupported", f}, strings.NewReader(""), io.Discard, io.Discard) == 0 {
			converting = append(converting, f)
		}
	}
	for _, bc := range []struct {
		name  string
		args  []string
		files []string
	}{
		{"convert", []string{"convert", "--skip-unsupported"}, files},
		{"convert-written", []string{"convert", "--skip-unsupported"}, converting},
		{"validate", []string{"validate"}, files},
	} {
		b.Run(bc.name, func(b *testing.B) {
			files := bc.files
			args := append(bc.args[:len(bc.args):len(bc.args)], files...)
			var decode, self, base time.Duration
			for b.Loop() {
				decode += cpuRun(b, out, floor, files...) - cpuRun(b, out, floor)
				self += cpuRun(b, out, bin, args...) - cpuRun(b, out, bin, "--version")
				if baseline != "" {
					base += cpuRun(b, out, baseline, args...) - cpuRun(b, out, baseline, "--version")
				}
			}
			b.ReportMetric(float64(self.Nanoseconds())/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(self)/float64(decode), "cpu-x-decode")
			if baseline != "" {
				b.ReportMetric(float64(base.Nanoseconds())/float64(b.N), "base-cpu-ns/op")
				b.ReportMetric(float64(base)/float64(decode), "base-cpu-x-decode")
			}
		})
	}
}

// cpuRun runs a binary to its end, its standard output into out, and returns its CPU time,
// user and system. It may fail as convert and validate do when some pipeline does not
// convert or is invalid.
func cpuRun(b *testing.B, out *os.File, bin string, args ...string) time.Duration {
	b.Helper()
	if _, err := out.Seek(0, 0); err != nil {
		b.Fatal(err)
	}
	if err := out.Truncate(0); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout = out
	// 1: some pipelines are invalid, or cannot be converted.
	if err := cmd.Run(); err != nil && cmd.ProcessState.ExitCode() != 1 {
		b.Fatalf("%s %v: %v", bin, args[:min(len(args), 2)], err)
	}
	return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}
