package pipelinecmd

import (
	"strings"
	"testing"
)

func TestHandles(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want bool
	}{
		{args: nil},
		{args: []string{"validate", "p.yml"}, want: true},
		{args: []string{"validate", "--help"}, want: true},
		{args: []string{"plan", "p.yml", "-j", "a"}, want: true},
		{args: []string{"--version"}, want: true},
		{args: []string{"-v"}, want: true},
		{args: []string{"--version", "convert"}},
		{args: []string{"convert", "p.yml"}},
		{args: []string{"help", "validate"}},
		{args: []string{"--help"}},
		{args: []string{"run", "validate"}},
	} {
		if got := Handles(tt.args); got != tt.want {
			t.Errorf("Handles(%q) = %v, want %v", tt.args, got, tt.want)
		}
	}
}

// TestMainHandled runs what Handles accepts as the whole command line does: output, errors as
// `error: ...`, exit codes.
func TestMainHandled(t *testing.T) {
	for _, tt := range []struct {
		args     []string
		stdin    string
		code     int
		out, err string
	}{
		{args: []string{"--version"}, out: "concourse-tekton version dev\n"},
		{args: []string{"validate", "-"}, stdin: "jobs: [{name: a, plan: [{task: t, config: {platform: linux, run: {path: x}}}]}]\n", err: "<stdin>: valid: 1 job, 0 resources\n"},
		{args: []string{"validate", "-", "-"}, code: 1, err: "error: - (standard input) is given more than once: give it once\n"},
		{args: []string{"validate", "nope.yml"}, code: 1, err: "error: open nope.yml: no such file or directory\n"},
		{args: []string{"plan", "-"}, stdin: "jobs: []\n", code: 1, err: "error: no job given: use -j JOB\n"},
	} {
		var out, errOut strings.Builder
		code := Main(tt.args, &Streams{In: strings.NewReader(tt.stdin), Out: &out, Err: &errOut})
		if code != tt.code || out.String() != tt.out || errOut.String() != tt.err {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want %d, %q, %q", tt.args, code, out.String(), errOut.String(), tt.code, tt.out, tt.err)
		}
	}
}
