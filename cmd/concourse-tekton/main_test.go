package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// heavyPackages are libraries whose package initialisation validate must not wait for:
// the Kubernetes client's scheme and Tekton's API types.
var heavyPackages = []string{
	"k8s.io/client-go/kubernetes/scheme",
	"github.com/tektoncd/pipeline/pkg/apis/pipeline/v1",
}

// TestFastPath runs the built command with Go's initialisation trace: validate, plan
// and --version answer before the Kubernetes and Tekton libraries are initialised, with
// the exit codes and output of the whole command line; every other command runs after.
func TestFastPath(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	dir := t.TempDir()
	bin := build(t, ".", filepath.Join(dir, "concourse-tekton"))
	pipeline := filepath.Join(dir, "hello-world.yml")
	invalid := filepath.Join(dir, "invalid.yml")
	for name, data := range map[string]string{pipeline: smallPipeline, invalid: "jobs:\n- name: a\n  plan:\n  - get: nope\n"} {
		if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		name     string
		args     []string
		code     int
		out, err string
		fast     bool
	}{
		{name: "validate", args: []string{"validate", pipeline}, err: "hello-world.yml: valid: 1 job, 0 resources", fast: true},
		{name: "validate of an invalid pipeline", args: []string{"validate", invalid}, code: 1, err: "invalid.yml:4:5: jobs[a].plan[0].get: unknown resource \"nope\"", fast: true},
		{name: "plan", args: []string{"plan", pipeline, "-j", "hello-world-job"}, out: `"task": {`, fast: true},
		{name: "plan without a job", args: []string{"plan", pipeline}, code: 1, err: "error: no job given: use -j JOB", fast: true},
		{name: "version", args: []string{"--version"}, out: "concourse-tekton version dev", fast: true},
		{name: "convert", args: []string{"convert", pipeline}, out: "kind: Pipeline"},
		{name: "help", args: []string{"--help"}, out: "validate"},
		{name: "an unknown command", args: []string{"nope"}, code: 1, err: `error: unknown command "nope" for "concourse-tekton"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(bin, tt.args...)
			cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tt.code || !strings.Contains(stdout.String(), tt.out) || !strings.Contains(stderr.String(), tt.err) {
				t.Fatalf("exit %d, want %d; stdout:\n%s\nstderr (the trace too):\n%s\nwant stdout to hold %q and stderr %q", code, tt.code, stdout.String(), tail(stderr.String()), tt.out, tt.err)
			}
			for _, pkg := range heavyPackages {
				if inited := strings.Contains(stderr.String(), "init "+pkg+" @"); inited == tt.fast {
					t.Errorf("%s initialised: %v, want %v", pkg, inited, !tt.fast)
				}
			}
		})
	}
}

// tail is the end of a long initialisation trace.
func tail(s string) string {
	if len(s) > 4000 {
		return "..." + s[len(s)-4000:]
	}
	return s
}
