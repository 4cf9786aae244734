package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

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

// TestCommand runs the built command as a user does: every command is in it, with its
// arguments, standard input, output and exit code.
func TestCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	bin := build(t, ".", filepath.Join(t.TempDir(), "concourse-tekton"))
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
	}{
		{name: "validate", args: []string{"validate", pipeline}, err: "hello-world.yml: valid: 1 job, 0 resources"},
		{name: "validate of an invalid pipeline", args: []string{"validate", invalid}, code: 1, err: "invalid.yml:4:5: jobs[a].plan[0].get: unknown resource \"nope\""},
		{name: "validate of stdin", stdin: smallPipeline, args: []string{"validate", "-"}, err: "<stdin>: valid: 1 job"},
		{name: "plan", args: []string{"plan", pipeline, "-j", "hello-world-job"}, out: `"task": {`},
		{name: "plan without a job", args: []string{"plan", pipeline}, code: 1, err: "error: no job given: use -j JOB"},
		{name: "version", args: []string{"--version"}, out: "concourse-tekton version dev"},
		{name: "convert", args: []string{"convert", pipeline, "-j", "hello-world-job"}, out: "kind: Pipeline"},
		{name: "convert of stdin", stdin: smallPipeline, args: []string{"convert", "-"}, out: "kind: PipelineRun"},
		{name: "convert of an invalid pipeline", args: []string{"convert", invalid}, code: 1, err: "invalid.yml:4:5: jobs[a].plan[0].get: unknown resource \"nope\""},
		{name: "a command that talks to a cluster", args: []string{"check-target", "--kubeconfig", filepath.Join(dir, "none")}, code: 1, err: "does not exist: check --kubeconfig"},
		{name: "help", args: []string{"--help"}, out: "check-target"},
		{name: "no arguments", out: "Available Commands:"},
		{name: "an unknown command", args: []string{"nope"}, code: 1, err: `error: unknown command "nope" for "concourse-tekton"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := run(t, bin, tt.stdin, tt.args...)
			if code != tt.code || !strings.Contains(stdout, tt.out) || !strings.Contains(stderr, tt.err) {
				t.Fatalf("exit %d, want %d; stdout:\n%s\nstderr (the trace too):\n%s\nwant stdout to hold %q and stderr %q", code, tt.code, stdout, tail(stderr), tt.out, tt.err)
			}
			// What a start-up costs beside the libraries' own initialisation: a package of
			// this module that compiles a regular expression, or builds a table, when it is
			// initialised makes every command pay for it.
			ours := 0
			for _, line := range strings.Split(stderr, "\n") {
				pkg, allocs, ok := initAllocs(line)
				if !ok || !strings.HasPrefix(pkg, module+"/") {
					continue
				}
				ours++
				if allocs > maxInitAllocs {
					t.Errorf("%s: %d allocations at initialisation, want at most %d: compute it when a command first needs it (sync.OnceValue)", pkg, allocs, maxInitAllocs)
				}
			}
			if ours == 0 {
				t.Errorf("no package of %s in the initialisation trace:\n%s", module, tail(stderr))
			}
		})
	}
}

// module is this module's path.
const module = "github.com/concourse-tekton/concourse-tekton"

// maxInitAllocs is the most allocations a package of this module may make when it is
// initialised: a few error values and small literals, no regular expression (a hundred
// and more each) nor table built from reflection.
const maxInitAllocs = 100

// initAllocs reads a line of Go's initialisation trace,
// "init PKG @T ms, C ms clock, B bytes, A allocs".
func initAllocs(line string) (pkg string, allocs int, ok bool) {
	f := strings.Fields(line)
	if len(f) != 11 || f[0] != "init" || f[10] != "allocs" {
		return "", 0, false
	}
	n, err := strconv.Atoi(f[9])
	return f[1], n, err == nil
}

// tail is the end of a long initialisation trace.
func tail(s string) string {
	if len(s) > 4000 {
		return "..." + s[len(s)-4000:]
	}
	return s
}
