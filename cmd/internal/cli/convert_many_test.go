package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// manyPipeline is a pipeline whose task is the same in every copy: its Task is one object.
func manyPipeline(job string) string {
	return `resources:
- name: img
  type: registry-image
  source: {repository: ((repo))}
jobs:
- name: ` + job + `
  plan:
  - get: img
  - task: test
    image: img
    config: {platform: linux, run: {path: make, args: [test]}}
`
}

// kindNames lists the kind and name of each YAML document, in order.
func kindNames(t *testing.T, yaml string) []string {
	t.Helper()
	var out []string
	for _, doc := range strings.Split(yaml, "\n---\n") {
		kind := regexp.MustCompile(`(?m)^kind: (.*)$`).FindStringSubmatch(doc)
		name := regexp.MustCompile(`(?m)^  name: (.*)$`).FindStringSubmatch(doc)
		if kind == nil || name == nil {
			t.Fatalf("a document without kind or name:\n%s", doc)
		}
		out = append(out, kind[1]+"/"+name[1])
	}
	return out
}

// TestConvertMany converts several pipelines in one process, stdin among them: the
// documents follow the arguments, a Task shared by two pipelines once, the vars apply to
// every pipeline, and the same arguments give the same bytes.
func TestConvertMany(t *testing.T) {
	a := writeFile(t, "a.yml", manyPipeline("unit"))
	b := writeFile(t, "b.yml", manyPipeline("lint"))
	args := []string{"convert", b, a, "-", "-v", "repo=example/img"}
	code, stdout, stderr := run(t, manyPipeline("e2e"), args...)
	if code != 0 {
		t.Fatalf("code %d: %s", code, stderr)
	}
	got := kindNames(t, stdout)
	var want []string
	for _, kn := range got {
		if strings.HasPrefix(kn, "Task/") {
			want = append(want, kn) // the Tasks of b, which a and stdin share
		}
	}
	if len(want) == 0 {
		t.Fatalf("no Task:\n%s", stdout)
	}
	want = append(want,
		"Pipeline/b-lint", "PipelineRun/b-lint-1",
		"Pipeline/a-unit", "PipelineRun/a-unit-1",
		"Pipeline/pipeline-e2e", "PipelineRun/pipeline-e2e-1",
	)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("documents (-want +got):\n%s", diff)
	}
	pipelines := 0
	for _, doc := range strings.Split(stdout, "\n---\n") {
		if strings.HasPrefix(doc, "apiVersion: tekton.dev/v1\nkind: Pipeline\n") {
			pipelines++
			if !strings.Contains(doc, "example/img") {
				t.Errorf("-v did not reach a pipeline:\n%s", doc)
			}
		}
	}
	if pipelines != 3 {
		t.Errorf("%d Pipelines, want 3", pipelines)
	}
	wantErr := "converted 1 job of " + b + "\nconverted 1 job of " + a + "\nconverted 1 job of <stdin>\n"
	if diff := cmp.Diff(wantErr, stderr); diff != "" {
		t.Errorf("stderr (-want +got):\n%s", diff)
	}

	// Each pipeline alone gives the same documents as in the whole.
	var alone []string
	for _, file := range []string{b, a} {
		_, out, _ := run(t, "", "convert", file, "-v", "repo=example/img")
		alone = append(alone, out)
	}
	_, out, _ := run(t, manyPipeline("e2e"), "convert", "-", "-v", "repo=example/img")
	alone = append(alone, out)
	var whole []string
	seen := map[string]bool{}
	for _, out := range alone {
		for _, doc := range strings.Split(out, "---\n") {
			if !seen[doc] {
				seen[doc] = true
				whole = append(whole, doc)
			}
		}
	}
	if diff := cmp.Diff(strings.Join(whole, "---\n"), stdout); diff != "" {
		t.Errorf("the pipelines together are not the pipelines alone (-want +got):\n%s", diff)
	}

	for range 3 {
		if _, again, _ := run(t, manyPipeline("e2e"), args...); again != stdout {
			t.Fatalf("a second conversion differs (-first +second):\n%s", cmp.Diff(stdout, again))
		}
	}
}

// TestConvertManyFailing checks that a pipeline that cannot be converted among good ones
// is reported at its position, with every other failure, and that nothing is written.
func TestConvertManyFailing(t *testing.T) {
	good := writeFile(t, "good.yml", manyPipeline("unit"))
	invalid := writeFile(t, "invalid.yml", strings.Replace(manyPipeline("unit"), "get: img", "get: im", 1))
	unsupported := writeFile(t, "unsupported.yml", strings.Replace(manyPipeline("unit"), "    image: img\n    config: {platform: linux, ", "    config: {platform: linux, rootfs_uri: \"file:///x\", ", 1))
	args := []string{good, invalid, unsupported, "-v", "repo=r"}
	wantErr := []string{
		invalid + `:8:5: jobs[unit].plan[0].get: unknown resource "im" (did you mean "img"?)` + "\n",
		"error: " + invalid + " is not a valid pipeline: 2 errors\n",
		"error: " + unsupported + `:9:5: jobs[unit].plan[1].task: rootfs_uri "file:///x" is not a docker:/// image`,
		"error: 2 of 3 pipelines could not be converted, nothing was written: " + invalid + ", " + unsupported + "\n",
	}
	t.Run("stdout", func(t *testing.T) {
		code, stdout, stderr := run(t, "", append([]string{"convert"}, args...)...)
		if code != 1 || stdout != "" {
			t.Fatalf("code %d, stdout %q", code, stdout)
		}
		for _, want := range wantErr {
			if !strings.Contains(stderr, want) {
				t.Errorf("stderr lacks %q:\n%s", want, stderr)
			}
		}
		if strings.Contains(stderr, "converted 1 job") {
			t.Errorf("stderr says a pipeline was converted:\n%s", stderr)
		}
	})
	t.Run("output dir", func(t *testing.T) {
		dir := t.TempDir()
		code, _, stderr := run(t, "", append([]string{"convert", "-o", dir}, args...)...)
		if code != 1 {
			t.Fatalf("code %d: %s", code, stderr)
		}
		if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
			t.Errorf("the directory holds %v (%v), want nothing", entries, err)
		}
	})
}

// TestConvertManyOutputDir writes several pipelines into one directory at once, and a
// later conversion of them removes what they no longer make.
func TestConvertManyOutputDir(t *testing.T) {
	a := writeFile(t, "a.yml", manyPipeline("unit"))
	b := writeFile(t, "b.yml", manyPipeline("lint"))
	dir := t.TempDir()
	convertInto(t, dir, a, b, "-v", "repo=r")
	want := map[string]string{}
	for _, file := range []string{a, b} {
		alone := t.TempDir()
		convertInto(t, alone, file, "-v", "repo=r")
		for name, data := range readDir(t, alone) {
			want[name] = data
		}
	}
	if diff := cmp.Diff(want, readDir(t, dir)); diff != "" {
		t.Errorf("directory (-want +got):\n%s", diff)
	}

	// b's job is renamed: its old files go, a's stay.
	if err := os.WriteFile(b, []byte(manyPipeline("vet")), 0o644); err != nil {
		t.Fatal(err)
	}
	convertInto(t, dir, a, b, "-v", "repo=r")
	var names []string
	for name := range readDir(t, dir) {
		names = append(names, filepath.Base(name))
	}
	for _, gone := range []string{"pipeline-b-lint.yaml", "pipelinerun-b-lint-1.yaml"} {
		if contains(names, gone) {
			t.Errorf("%s stayed: %v", gone, names)
		}
	}
	for _, kept := range []string{"pipeline-a-unit.yaml", "pipeline-b-vet.yaml", "pipelinerun-b-vet-1.yaml"} {
		if !contains(names, kept) {
			t.Errorf("%s is missing: %v", kept, names)
		}
	}
}

func TestManyErrors(t *testing.T) {
	a := writeFile(t, "a.yml", manyPipeline("unit"))
	b := writeFile(t, "b.yml", manyPipeline("lint"))
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"convert: stdin twice", []string{"convert", "-", a, "-"}, "error: - (standard input) is given more than once: give it once\n"},
		{"validate: stdin twice", []string{"validate", "-", "-"}, "error: - (standard input) is given more than once: give it once\n"},
		{"--pipeline", []string{"convert", a, b, "--pipeline", "p"}, "error: --pipeline names one pipeline: give one PIPELINE with it, or leave it out to name each pipeline after its file\n"},
		{"-j", []string{"convert", a, b, "-j", "unit"}, "error: -j selects the jobs of one pipeline: give one PIPELINE with it\n"},
		{"a flag's mistake once", []string{"convert", a, b, "--resource-image", "x"}, "error: invalid --resource-image \"x\": use TYPE=IMAGE\n"},
		{"the flags' mistakes at once", []string{"convert", a, b, "--resource-image", "x", "--tag", "gpu", "--across-slots", "0"}, "error: invalid --resource-image \"x\": use TYPE=IMAGE\ninvalid --tag \"gpu\": use TAG=LABEL=VALUE\ninvalid --across-slots 0: it must be at least 1\n"},
		{"a var's mistake once", []string{"convert", a, b, "-v", "x"}, "error: invalid var \"x\": use name=value\n"},
		{
			"same pipeline twice", []string{"convert", a, b, a},
			"error: " + a + " and " + a + ` are both pipeline "a": convert them one at a time with --pipeline, or rename one` + "\n" +
				"error: 1 of 3 pipelines could not be converted, nothing was written: " + a + "\n",
		},
		{"a missing file named", []string{"convert", a, "/nonexistent/p.yml"}, "error: open /nonexistent/p.yml: no such file or directory\nerror: 1 of 2 pipelines could not be converted, nothing was written: /nonexistent/p.yml\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := run(t, "", tc.args...)
			if code != 1 || stdout != "" {
				t.Errorf("code = %d, stdout %q; want 1 and nothing", code, stdout)
			}
			if !strings.HasSuffix(stderr, tc.want) || strings.Count(stderr, "error: ") != strings.Count(tc.want, "error: ") {
				t.Errorf("stderr = %q, want it to end with %q", stderr, tc.want)
			}
		})
	}
}
