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

// commands builds the command and concourse-tekton-kube into one directory, and returns
// the command.
func commands(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	build(t, "../concourse-tekton-kube", filepath.Join(dir, kubeCommand))
	return build(t, ".", filepath.Join(dir, "concourse-tekton"))
}

// run runs bin with args and the initialisation trace on, and returns its exit code,
// standard output and standard error (the trace in it).
func run(t *testing.T, bin, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errOut.String()
}

// TestFront runs the built command with Go's initialisation trace: validate, plan and
// --version answer without initialising, or even linking, the Kubernetes and Tekton
// libraries; every other command line reaches concourse-tekton-kube whole (arguments,
// standard input, exit code), which initialises them.
func TestFront(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the commands")
	}
	bin := commands(t)
	dir := t.TempDir()
	pipeline := filepath.Join(dir, "hello-world.yml")
	invalid := filepath.Join(dir, "invalid.yml")
	for name, data := range map[string]string{pipeline: smallPipeline, invalid: "jobs:\n- name: a\n  plan:\n  - get: nope\n"} {
		if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		name     string
		stdin    string
		args     []string
		code     int
		out, err string
		front    bool
	}{
		{name: "validate", args: []string{"validate", pipeline}, err: "hello-world.yml: valid: 1 job, 0 resources", front: true},
		{name: "validate of an invalid pipeline", args: []string{"validate", invalid}, code: 1, err: "invalid.yml:4:5: jobs[a].plan[0].get: unknown resource \"nope\"", front: true},
		{name: "validate of stdin", stdin: smallPipeline, args: []string{"validate", "-"}, err: "<stdin>: valid: 1 job", front: true},
		{name: "plan", args: []string{"plan", pipeline, "-j", "hello-world-job"}, out: `"task": {`, front: true},
		{name: "plan without a job", args: []string{"plan", pipeline}, code: 1, err: "error: no job given: use -j JOB", front: true},
		{name: "version", args: []string{"--version"}, out: "concourse-tekton version dev", front: true},
		{name: "convert", args: []string{"convert", pipeline, "-j", "hello-world-job"}, out: "kind: Pipeline"},
		{name: "convert of stdin", stdin: smallPipeline, args: []string{"convert", "-"}, out: "kind: PipelineRun"},
		{name: "convert of an invalid pipeline", args: []string{"convert", invalid}, code: 1, err: "invalid.yml:4:5: jobs[a].plan[0].get: unknown resource \"nope\""},
		{name: "help", args: []string{"--help"}, out: "check-target"},
		{name: "no arguments", out: "Available Commands:"},
		{name: "an unknown command", args: []string{"nope"}, code: 1, err: `error: unknown command "nope" for "concourse-tekton"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := run(t, bin, tt.stdin, tt.args...)
			if code != tt.code || !strings.Contains(stdout, tt.out) || !strings.Contains(stderr, tt.err) {
				t.Fatalf("exit %d, want %d; stdout:\n%s\nstderr (the trace too):\n%s\nwant stdout to hold %q and stderr %q", code, tt.code, stdout, tail(stderr), tt.out, tt.err)
			}
			for _, pkg := range heavyPackages {
				if inited := strings.Contains(stderr, "init "+pkg+" @"); inited == tt.front {
					t.Errorf("%s initialised: %v, want %v", pkg, inited, !tt.front)
				}
			}
		})
	}
	t.Run("through a symbolic link", func(t *testing.T) {
		link := filepath.Join(t.TempDir(), "concourse-tekton")
		if err := os.Symlink(bin, link); err != nil {
			t.Fatal(err)
		}
		t.Setenv("PATH", t.TempDir())
		if code, stdout, stderr := run(t, link, "", "convert", pipeline); code != 0 || !strings.Contains(stdout, "kind: Pipeline") {
			t.Fatalf("exit %d, stdout:\n%s\nstderr:\n%s", code, stdout, tail(stderr))
		}
	})
}

// TestFrontLinksNoKubernetes holds the front's dependencies to the pipeline model: a
// library that comes back into it brings its package initialisation to every validate.
func TestFrontLinksNoKubernetes(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, heavy := range []string{"k8s.io/", "sigs.k8s.io/", "github.com/tektoncd/", "knative.dev/", "google.golang.org/"} {
			if strings.HasPrefix(pkg, heavy) {
				t.Errorf("the front links %s", pkg)
			}
		}
	}
}

// TestFrontWithoutKube: a command line the front hands over, with no
// concourse-tekton-kube beside it nor on PATH, says what is missing and how to build it.
func TestFrontWithoutKube(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	bin := build(t, ".", filepath.Join(t.TempDir(), "concourse-tekton"))
	t.Setenv("PATH", t.TempDir())
	code, stdout, stderr := run(t, bin, "", "convert", "pipeline.yml")
	want := "error: concourse-tekton-kube, which runs every command but validate and plan, is neither beside " + bin + " nor on PATH: build both"
	if code != 1 || stdout != "" || !strings.Contains(stderr, want) {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s\nwant exit 1 and stderr to hold %q", code, stdout, tail(stderr), want)
	}
	// validate still runs.
	code, _, stderr = run(t, bin, smallPipeline, "validate", "-")
	if code != 0 || !strings.Contains(stderr, "<stdin>: valid") {
		t.Fatalf("validate: exit %d, stderr:\n%s", code, tail(stderr))
	}
}

// tail is the end of a long initialisation trace.
func tail(s string) string {
	if len(s) > 4000 {
		return "..." + s[len(s)-4000:]
	}
	return s
}
