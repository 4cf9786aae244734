package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func run(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const pipeline = `resources:
- name: repo
  type: git
  source: {uri: ((uri)), branch: ((branch))}
jobs:
- name: unit
  plan:
  - get: repo
  - task: test
    file: repo/ci/test.yml
    params: {SHA: ((.:sha))}
`

func TestValidate(t *testing.T) {
	file := writeFile(t, "pipeline.yml", pipeline)
	code, stdout, stderr := run(t, "", "validate", file, "-v", "uri=https://example.com/r.git")
	if code != 0 || stdout != "" {
		t.Fatalf("code %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	// ((.:sha)), a local var, is never given: not reported.
	wantErr := "note: " + file + ":4:34: ((branch)) is not given: it is left for run time\n" +
		file + ": valid: 1 job, 1 resource\n"
	if diff := cmp.Diff(wantErr, stderr); diff != "" {
		t.Errorf("stderr (-want +got):\n%s", diff)
	}
}

func TestValidateInvalid(t *testing.T) {
	bad := strings.Replace(pipeline, "get: repo", "get: rpo", 1) + "  seriall: true\n"
	code, stdout, stderr := run(t, bad, "validate", "-")
	if code != 1 || stdout != "" {
		t.Fatalf("code %d, stdout %q", code, stdout)
	}
	want := `<stdin>:2:3: resources[repo]: resource "repo" is not used by any job: use it in a get or put, or remove it` + "\n" +
		`<stdin>:8:5: jobs[unit].plan[0].get: unknown resource "rpo" (did you mean "repo"?)` + "\n" +
		`<stdin>:12:3: jobs[unit].seriall: unknown field "seriall" (did you mean "serial"?)` + "\n" +
		"error: <stdin> is not a valid pipeline: 3 errors\n"
	if diff := cmp.Diff(want, stderr); diff != "" {
		t.Errorf("stderr (-want +got):\n%s", diff)
	}
}

// Many pipelines in one process, stdin among them: each is reported, and the exit code
// says whether any is invalid.
func TestValidateMany(t *testing.T) {
	good := writeFile(t, "good.yml", pipeline)
	bad := writeFile(t, "bad.yml", strings.Replace(pipeline, "get: repo", "get: rpo", 1))
	code, _, stderr := run(t, pipeline, "validate", good, "-", "-v", "uri=u", "-v", "branch=b")
	if code != 0 {
		t.Fatalf("two valid pipelines: code %d\n%s", code, stderr)
	}
	if want := good + ": valid: 1 job, 1 resource\n<stdin>: valid: 1 job, 1 resource\n"; stderr != want {
		t.Errorf("stderr (-want +got):\n%s", cmp.Diff(want, stderr))
	}
	code, _, stderr = run(t, "", "validate", good, bad, "-v", "uri=u", "-v", "branch=b")
	if code != 1 {
		t.Fatalf("one invalid pipeline: code %d", code)
	}
	for _, want := range []string{
		good + ": valid: 1 job, 1 resource\n",
		bad + `:8:5: jobs[unit].plan[0].get: unknown resource "rpo" (did you mean "repo"?)`,
		"error: 1 of 2 pipelines are invalid: " + bad + "\n",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

func TestPlan(t *testing.T) {
	file := writeFile(t, "pipeline.yml", pipeline)
	vars := writeFile(t, "vars.yml", "uri: u\nbranch: main\n")
	code, stdout, stderr := run(t, "", "plan", file, "-j", "unit", "-l", vars, "--version", `repo={"ref":"abc"}`)
	if code != 0 || stderr != "" {
		t.Fatalf("code %d, stderr %q", code, stderr)
	}
	var plan struct {
		ID string `json:"id"`
		Do []struct {
			Get *struct {
				Source  map[string]string `json:"source"`
				Version map[string]string `json:"version"`
			} `json:"get"`
		} `json:"do"`
	}
	if err := json.Unmarshal([]byte(stdout), &plan); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if diff := cmp.Diff(map[string]string{"uri": "u", "branch": "main"}, plan.Do[0].Get.Source); diff != "" {
		t.Errorf("source (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"ref": "abc"}, plan.Do[0].Get.Version); diff != "" {
		t.Errorf("version (-want +got):\n%s", diff)
	}
}

func TestPlanErrors(t *testing.T) {
	file := writeFile(t, "pipeline.yml", pipeline)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown job", []string{"plan", file, "-j", "nope"}, "error: unknown job \"nope\" (the pipeline has: unit)\n"},
		{"no job", []string{"plan", file}, "error: no job given: use -j JOB\n"},
		{"missing file", []string{"validate", "/nonexistent/p.yml"}, "error: open /nonexistent/p.yml: no such file or directory\n"},
		{"bad var", []string{"validate", file, "-v", "novalue"}, "error: invalid var \"novalue\": use name=value\n"},
		{"unknown flag", []string{"validate", file, "--nope"}, "error: unknown flag: --nope\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := run(t, "", tc.args...)
			if code != 1 {
				t.Errorf("code = %d, want 1", code)
			}
			if !strings.HasSuffix(stderr, tc.want) {
				t.Errorf("stderr = %q, want it to end with %q", stderr, tc.want)
			}
		})
	}
}

// TestCommandsByName: a command line that names a command makes that command alone, the
// same command the whole tree has; the version makes none; help, and a name that is
// none, make every command.
func TestCommandsByName(t *testing.T) {
	s := &streams{in: strings.NewReader(""), out: &bytes.Buffer{}, err: &bytes.Buffer{}}
	all := newRoot(s, []string{"--help"})
	if got, want := len(all.Commands()), len(commands); got != want {
		t.Fatalf("help's root has %d commands, want %d (every one of commands)", got, want)
	}
	for _, c := range commands {
		root := newRoot(s, []string{c.name, "--flag"})
		if len(root.Commands()) != 1 {
			t.Errorf("%s: root has %d commands, want it alone", c.name, len(root.Commands()))
		}
		cmd, _, err := root.Find([]string{c.name})
		if err != nil || cmd.Name() != c.name {
			t.Fatalf("%s: found %v (%v)", c.name, cmd, err)
		}
		whole, _, err := all.Find([]string{c.name})
		if err != nil || whole.UsageString() != cmd.UsageString() {
			t.Errorf("%s: alone, its usage differs from the one in the whole tree:\n%s\nwant\n%s", c.name, cmd.UsageString(), whole.UsageString())
		}
	}
	for _, args := range [][]string{{"--version"}, {"-v"}} {
		if n := len(newRoot(s, args).Commands()); n != 0 {
			t.Errorf("%q: root has %d commands, want none", args, n)
		}
	}
	code, stdout, _ := run(t, "", "--help")
	for _, c := range commands {
		if code != 0 || !strings.Contains(stdout, "\n  "+c.name+" ") {
			t.Errorf("--help (exit %d) does not list %s:\n%s", code, c.name, stdout)
		}
	}
	if code, _, stderr := run(t, "", "conver", "p.yml"); code == 0 || !strings.Contains(stderr, "convert") {
		t.Errorf("a misspelt command: exit %d, stderr %q, want the suggestion of convert", code, stderr)
	}
}

// TestExitCodes runs command lines as the process does: output, errors printed once as
// `error: ...`, exit codes.
func TestExitCodes(t *testing.T) {
	for _, tt := range []struct {
		args     []string
		stdin    string
		code     int
		out, err string
	}{
		{args: []string{"--version"}, out: "concourse-tekton version dev\n"},
		{args: []string{"-v"}, out: "concourse-tekton version dev\n"},
		{args: []string{"validate", "-"}, stdin: "jobs: [{name: a, plan: [{task: t, config: {platform: linux, rootfs_uri: docker:///busybox, run: {path: x}}}]}]\n", err: "<stdin>: valid: 1 job, 0 resources\n"},
		{args: []string{"validate", "-", "-"}, code: 1, err: "error: - (standard input) is given more than once: give it once\n"},
		{args: []string{"validate", "nope.yml"}, code: 1, err: "error: open nope.yml: no such file or directory\n"},
		{args: []string{"plan", "-"}, stdin: "jobs: []\n", code: 1, err: "error: no job given: use -j JOB\n"},
	} {
		code, stdout, stderr := run(t, tt.stdin, tt.args...)
		if code != tt.code || stdout != tt.out || stderr != tt.err {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want %d, %q, %q", tt.args, code, stdout, stderr, tt.code, tt.out, tt.err)
		}
	}
}

// TestVarResourceName: a get of a resource named by a var that is not given is refused
// by validate and convert alike, at the step, as Concourse refuses it (convert said
// `unknown resource: ((x))` with no position, after validate had passed it).
func TestVarResourceName(t *testing.T) {
	file := writeFile(t, "p.yml", "resources:\n- name: repo\n  type: git\n  source: {uri: u}\njobs:\n- name: unit\n  plan:\n  - get: repo\n  - get: ((x))\n")
	want := file + `:9:5: jobs[unit].plan[1].get: unknown resource "((x))"` + "\n"
	for _, args := range [][]string{{"validate", file}, {"convert", file}, {"plan", file, "-j", "unit"}} {
		code, stdout, stderr := run(t, "", args...)
		if code != 1 || stdout != "" || !strings.Contains(stderr, want) {
			t.Errorf("%s: code %d, stdout %q, stderr:\n%s", args[0], code, stdout, stderr)
		}
	}
	// Given, it is the resource's name.
	if code, _, stderr := run(t, "", "convert", file, "-v", "x=repo", "-j", "unit"); code != 1 || !strings.Contains(stderr, `gets "((x))" more than once`) {
		t.Errorf("x given: code %d: %s", code, stderr)
	}
	given := writeFile(t, "given.yml", "resources:\n- name: repo\n  type: git\n  source: {uri: u}\njobs:\n- name: unit\n  plan:\n  - get: ((x))\n")
	if code, _, stderr := run(t, "", "convert", given, "-v", "x=repo"); code != 0 {
		t.Errorf("x given: code %d: %s", code, stderr)
	}
}

// TestValidateTaskFiles: with -i, validate reads the task files steps name from the
// artifact's directory: their warnings at their positions in the files, their errors at
// the steps.
func TestValidateTaskFiles(t *testing.T) {
	repo := t.TempDir()
	if err := os.MkdirAll(filepath.Join(repo, "ci"), 0o755); err != nil {
		t.Fatal(err)
	}
	file := writeFile(t, "pipeline.yml", pipeline)
	for _, tt := range []struct {
		name, task string
		code       int
		want       []string
	}{
		{"warned", "platform: linux\nrun: {path: make}\n", 0, []string{
			"warning: repo/ci/test.yml:1:1: the task config has no image: ",
			file + ": valid: 1 job, 1 resource",
		}},
		{"invalid", "platform: linux\nrootfs_uri: docker:///busybox\nrun: {path: make}\nouputs: []\n", 1, []string{
			file + `:10:5: jobs[unit].plan[1].file: task "test": invalid task file: repo/ci/test.yml:4:1: ouputs: unknown fields: [ouputs]`,
			"error: " + file + "'s task files are invalid: 1 error",
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := os.WriteFile(filepath.Join(repo, "ci", "test.yml"), []byte(tt.task), 0o644); err != nil {
				t.Fatal(err)
			}
			code, _, stderr := run(t, "", "validate", file, "-v", "uri=u", "-v", "branch=b", "-i", "repo="+repo)
			lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
			if code != tt.code || len(lines) != len(tt.want) {
				t.Fatalf("code %d, stderr:\n%s\nwant code %d and %d lines", code, stderr, tt.code, len(tt.want))
			}
			for i, want := range tt.want {
				if !strings.HasPrefix(lines[i], want) {
					t.Errorf("line %q; want it to start with %q", lines[i], want)
				}
			}
		})
	}
	// convert and run read them alike.
	if err := os.WriteFile(filepath.Join(repo, "ci", "test.yml"), []byte("platform: linux\nrun: {path: make}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := run(t, "", "convert", file, "-v", "uri=u", "-v", "branch=b", "-i", "repo="+repo, "--default-task-image", "busybox")
	if code != 0 || !strings.HasPrefix(stderr, "warning: repo/ci/test.yml:1:1: the task config has no image: ") {
		t.Errorf("convert: code %d, stderr:\n%s", code, stderr)
	}
}
