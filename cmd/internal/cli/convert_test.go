package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/planner"
	"github.com/concourse-tekton/concourse-tekton/translate"
)

var update = flag.Bool("update", false, "rewrite the checked-in example output")

// TestBooklitExample keeps examples/booklit/tekton what convert makes of the example.
func TestBooklitExample(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	example := filepath.Join(root, "examples", "booklit")
	want := filepath.Join(example, "tekton")
	out := t.TempDir()
	if *update {
		out = want
		if err := os.RemoveAll(want); err != nil {
			t.Fatal(err)
		}
	}
	code, _, stderr := run(t, "", "convert", filepath.Join(example, "pipeline.yml"), "-i", "booklit="+example, "-o", out)
	if code != 0 {
		t.Fatalf("convert: code %d: %s", code, stderr)
	}
	if *update {
		return
	}
	got := readDir(t, out)
	if diff := cmp.Diff(readDir(t, want), got); diff != "" {
		t.Errorf("examples/booklit/tekton is stale: run `make update-golden` (-want +got):\n%s", diff)
	}
}

func readDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for name, f := range filesOf(t, dir) {
		out[name] = f.data
	}
	return out
}

const convertPipeline = `resources:
- name: repo
  type: git
  source: {uri: https://example.com/r.git}
- name: img
  type: registry-image
  source: {repository: example/img}
jobs:
- name: unit
  plan:
  - get: repo
  - task: test
    file: repo/ci/test.yml
- name: build
  plan:
  - get: repo
  - task: build
    config: {platform: linux, rootfs_uri: "file:///x", run: {path: make}}
- name: deploy
  plan:
  - get: img
  - task: deploy
    image: img
    config: {platform: linux, run: {path: deploy}}
`

func TestConvert(t *testing.T) {
	file := writeFile(t, "app.yml", convertPipeline)
	code, stdout, stderr := run(t, "", "convert", file, "-j", "unit", "-j", "deploy")
	if code != 0 {
		t.Fatalf("code %d: %s", code, stderr)
	}
	var kinds []string
	for _, line := range strings.Split(stdout, "\n") {
		if strings.HasPrefix(line, "kind: ") {
			kinds = append(kinds, strings.TrimPrefix(line, "kind: "))
		}
	}
	// The Tasks of the other steps and of the verdicts, which the jobs share, and one for
	// each job's last step, which holds the verdict (runspec.Verdict.Fused).
	wantKinds := []string{"Task", "Task", "Task", "Task", "Pipeline", "Pipeline", "PipelineRun", "PipelineRun"}
	if diff := cmp.Diff(wantKinds, kinds); diff != "" {
		t.Errorf("kinds, in apply order (-want +got):\n%s", diff)
	}
	for _, want := range []string{"name: app-unit\n", "name: app-deploy-1\n", "$(tasks.get-img.results.image)"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if !strings.HasSuffix(stderr, "converted 2 jobs of "+file+"\n") {
		t.Errorf("stderr = %q", stderr)
	}
}

// --runner-image-volume gives each step pod the runner's image as a volume, and no
// step that copies the runner.
func TestConvertRunnerImageVolume(t *testing.T) {
	file := writeFile(t, "app.yml", convertPipeline)
	for _, volume := range []bool{false, true} {
		args := []string{"convert", file, "-j", "unit", "--runner-image", "example.com/runner:v2"}
		if volume {
			args = append(args, "--runner-image-volume")
		}
		code, stdout, stderr := run(t, "", args...)
		if code != 0 {
			t.Fatalf("code %d: %s", code, stderr)
		}
		mounted := strings.Contains(stdout, "image:\n        reference: example.com/runner:v2\n")
		copied := strings.Contains(stdout, "name: install-runner\n")
		if mounted != volume || copied == volume {
			t.Errorf("--runner-image-volume %v: the image mounted %v, the runner copied %v:\n%s", volume, mounted, copied, stdout)
		}
	}
}

func TestConvertUnsupported(t *testing.T) {
	file := writeFile(t, "app.yml", convertPipeline)
	code, stdout, stderr := run(t, "", "convert", file)
	if code != 1 || stdout != "" {
		t.Fatalf("code %d, stdout %q", code, stdout)
	}
	want := "error: " + file + `:17:5: jobs[build].plan[1].task: rootfs_uri "file:///x" is not a docker:/// image` + "\n"
	if !strings.HasSuffix(stderr, want) {
		t.Errorf("stderr = %q\nwant it to end with %q", stderr, want)
	}

	dir := t.TempDir()
	code, _, stderr = run(t, "", "convert", file, "--skip-unsupported", "-o", dir)
	if code != 0 {
		t.Fatalf("code %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "warning: "+file+":17:5: jobs[build].plan[1].task: rootfs_uri") || !strings.Contains(stderr, "(job build left out)") {
		t.Errorf("stderr = %q", stderr)
	}
	var names []string
	for name := range readDir(t, dir) {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, n := range names {
		if strings.HasPrefix(n, ".") {
			t.Errorf("a temporary file was left behind: %s", n)
		}
	}
	if !contains(names, "pipeline-app-unit.yaml") || !contains(names, "pipelinerun-app-deploy-1.yaml") || contains(names, "pipeline-app-build.yaml") {
		t.Errorf("files = %v", names)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestConvertUnknownBaseType: a step of a base type no image is known for converts, as
// Concourse accepts the pipeline, with a warning at its position saying what to give;
// the step's spec carries the error it ends with when it runs.
func TestConvertUnknownBaseType(t *testing.T) {
	file := writeFile(t, "app.yml", `resources:
- name: r
  type: some-type
jobs:
- name: j
  plan:
  - get: r
`)
	code, stdout, stderr := run(t, "", "convert", file)
	if code != 0 {
		t.Fatalf("code %d, stderr %q", code, stderr)
	}
	want := "warning: " + file + `:7:5: jobs[j].plan[0].get: no image is known for the resource type "some-type": the step errors when the build runs (base resource type not found: some-type), as on workers without the type; give its image with --resource-image some-type=IMAGE` + "\n"
	if !strings.Contains(stderr, want) {
		t.Errorf("stderr = %q\nwant it to hold %q", stderr, want)
	}
	if !strings.Contains(stdout, `\"error\":\"base resource type not found: some-type\"`) && !strings.Contains(stdout, `"error":"base resource type not found: some-type"`) {
		t.Errorf("no step spec carries the error:\n%s", stdout)
	}
	code, _, stderr = run(t, "", "convert", file, "--resource-image", "some-type=example.com/some-type:1")
	if code != 0 || strings.Contains(stderr, "warning") {
		t.Errorf("with the type's image: code %d, stderr %q", code, stderr)
	}
}

// TestDefaultTaskImage: a task that names no image runs in --default-task-image's, as
// Concourse runs it in its worker's root file system; without it, convert refuses the
// task at its position, naming the flag. run and execute take the flag too, and refuse a
// value that is no image before they ask the cluster anything.
func TestDefaultTaskImage(t *testing.T) {
	file := writeFile(t, "app.yml", `jobs:
- name: j
  plan:
  - task: bare
    config: {platform: linux, run: {path: "true"}}
`)
	code, stdout, stderr := run(t, "", "convert", file)
	want := "error: " + file + `:4:5: jobs[j].plan[0].task: the task has no image: give its config an image_resource or a rootfs_uri, the step an image, or the build a default task image (--default-task-image; the web node's --tekton-default-task-image)` + "\n"
	if code != 1 || stdout != "" || !strings.HasSuffix(stderr, want) {
		t.Errorf("without a default: code %d, stdout %q, stderr %q\nwant it to end with %q", code, stdout, stderr, want)
	}
	code, stdout, stderr = run(t, "", "convert", file, "--default-task-image", "example.com/default:1")
	if code != 0 || !strings.Contains(stdout, "value: example.com/default:1\n") {
		t.Errorf("with a default: code %d, stderr %q, stdout:\n%s", code, stderr, stdout)
	}
	task := writeFile(t, "task.yml", "platform: linux\nrun: {path: \"true\"}\n")
	for _, args := range [][]string{
		{"convert", file},
		{"run", file, "-j", "j", "--kubeconfig", "/nonexistent"},
		{"execute", "-c", task, "--kubeconfig", "/nonexistent"},
	} {
		code, _, stderr := run(t, "", append(args, "--default-task-image", "docker:///busybox")...)
		if want := `error: invalid --default-task-image "docker:///busybox": give an image reference such as busybox:1.37, without a scheme` + "\n"; code != 1 || stderr != want && !strings.HasSuffix(stderr, "\n"+want) {
			t.Errorf("%s: code %d, stderr %q; want %q", args[0], code, stderr, want)
		}
	}
}

// TestConvertRefusesWhatTheAPIServerCannotStore: a job whose Pipeline is over the 1.5 MiB
// the API server stores of an object is refused at its place, nothing written.
func TestConvertRefusesWhatTheAPIServerCannotStore(t *testing.T) {
	var b strings.Builder
	b.WriteString("resources: [{name: r, type: git, source: {uri: u}}]\njobs:\n- name: small\n  plan: [{put: r}]\n- name: huge\n  plan:\n")
	for range 2000 {
		b.WriteString("  - put: r\n")
	}
	file := writeFile(t, "app.yml", b.String())
	code, stdout, stderr := run(t, "", "convert", file)
	if code != 1 || stdout != "" {
		t.Fatalf("code %d, stdout %d bytes; want 1 and nothing", code, len(stdout))
	}
	want := file + ":5:3: jobs[huge]: its Pipeline app-huge is "
	if !strings.Contains(stderr, want) || !strings.Contains(stderr, "over the 1.5 MiB the API server stores of an object") {
		t.Errorf("stderr = %q\nwant it to hold %q... over the 1.5 MiB", stderr, want)
	}
}

// TestConvertRefusesTooManyStepsUntranslated: a job of more steps than a Pipeline the API
// server stores can hold is refused from its plan, at its place, before it is translated.
func TestConvertRefusesTooManyStepsUntranslated(t *testing.T) {
	var b strings.Builder
	b.WriteString("resources: [{name: r, type: git, source: {uri: u}}]\njobs:\n- name: small\n  plan: [{get: r}]\n- name: huge\n  plan:\n")
	for i := range 100_000 {
		fmt.Fprintf(&b, "  - {get: g%d, resource: r}\n", i)
	}
	file := writeFile(t, "app.yml", b.String())
	code, stdout, stderr := run(t, "", "convert", file)
	want := "error: " + file + ":5:3: jobs[huge]: its 100000 steps make a Pipeline over the 1.5 MiB the API server stores of an object (etcd's request limit), at 256 bytes or more each: split the job\n"
	if code != 1 || stdout != "" || stderr != want {
		t.Errorf("code %d, stdout %d bytes, stderr %q (%d bytes); want 1, nothing and %q", code, len(stdout), stderr[:min(len(stderr), 400)], len(stderr), want)
	}
}

// TestPlanStepsUnderstatesNoPipeline: minStepJSON is below every step's share of its
// Pipeline, so that planSteps' refusal never refuses a job the API server would store.
func TestPlanStepsUnderstatesNoPipeline(t *testing.T) {
	steps := map[string]string{
		"get":          "{get: g%d, resource: r}",
		"put":          "{put: p%d, resource: r, no_get: true}",
		"task":         "{task: t%d, file: a/b.yml}",
		"load_var":     "{load_var: v%d, file: a/b}",
		"set_pipeline": "{set_pipeline: s%d, file: a/b.yml}",
		"attempts":     "{get: g%d, resource: r, attempts: 3}",
	}
	for kind, step := range steps {
		size := func(n int) (int, int) {
			var b strings.Builder
			b.WriteString("resources: [{name: r, type: git, source: {uri: u}}]\njobs:\n- name: j\n  plan:\n  - get: r\n")
			for i := range n {
				fmt.Fprintf(&b, "  - "+step+"\n", i)
			}
			p, diags := concourse.ParsePipeline("p.yml", []byte(b.String()), nil)
			if err := diags.Err(); err != nil {
				t.Fatal(err)
			}
			build, err := planner.PlanBuild(p, "j", planner.Options{ManuallyTriggered: true})
			if err != nil {
				t.Fatal(err)
			}
			r, err := translate.Translate(build.Plan, translate.Options{Pipeline: "p", Job: "j"})
			if err != nil {
				t.Fatalf("%s: %v", kind, err)
			}
			data, err := json.Marshal(r.Pipeline)
			if err != nil {
				t.Fatal(err)
			}
			return len(data), planSteps(&build.Plan)
		}
		small, smallSteps := size(1)
		large, largeSteps := size(9)
		if per := (large - small) / (largeSteps - smallSteps); per < minStepJSON {
			t.Errorf("%s: %d bytes of its Pipeline a step, under minStepJSON (%d)", kind, per, minStepJSON)
		}
	}
}
