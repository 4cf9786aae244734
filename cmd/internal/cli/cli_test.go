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
// same command the whole tree has; one of validate, plan or the version makes those two;
// help, and a name that is none, make every command.
func TestCommandsByName(t *testing.T) {
	s := &streams{in: strings.NewReader(""), out: &bytes.Buffer{}, err: &bytes.Buffer{}}
	all := newRoot(s, []string{"--help"})
	if got, want := len(all.Commands()), len(commands)+2; got != want {
		t.Fatalf("help's root has %d commands, want %d (validate, plan and every one of commands)", got, want)
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
	for _, args := range [][]string{{"validate", "p.yml"}, {"plan", "p.yml", "-j", "j"}, {"--version"}} {
		if n := len(newRoot(s, args).Commands()); n != 2 {
			t.Errorf("%q: root has %d commands, want validate and plan", args, n)
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
