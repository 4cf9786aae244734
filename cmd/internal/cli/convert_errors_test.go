package cli

import (
	"strings"
	"testing"
)

// TestConvertErrorPositions checks that an error of the translation is placed at the step
// its plan node came from: not another step of the same name, and never at a plan ID.
func TestConvertErrorPositions(t *testing.T) {
	const cfg = `config: {platform: linux, rootfs_uri: "docker:///busybox", run: {path: x}}`
	tests := []struct {
		name, pipeline, want string
	}{
		{
			name: "same name, nested in a hook",
			pipeline: `jobs:
- name: j
  plan:
  - task: t
    ` + cfg + `
    on_failure:
      do:
      - task: t
        config: {platform: linux, rootfs_uri: "file:///x", run: {path: x}}
`,
			want: `:8:9: jobs[j].plan[0].on_failure.do[0].task: rootfs_uri "file:///x" is not a docker:/// image`,
		},
		{
			name: "same name, in a job hook",
			pipeline: `jobs:
- name: j
  plan:
  - task: t
    ` + cfg + `
  ensure:
    task: t
    config: {platform: linux, rootfs_uri: "file:///x", run: {path: x}}
`,
			want: `:7:5: jobs[j].ensure.task: rootfs_uri "file:///x" is not a docker:/// image`,
		},
		{
			name: "an across var known at run time in a task's tags",
			pipeline: `jobs:
- name: j
  plan:
  - task: first
    ` + cfg + `
  - in_parallel:
      steps:
      - task: t
        ` + cfg + `
        tags: [((.:v))]
        across: [{var: v, values: ((vs))}]
`,
			want: `:8:9: jobs[j].plan[1].in_parallel.steps[0].task: the tags of task "t" depend on across var "v", whose values are known only at run time`,
		},
		{
			name: "a step of an across substep",
			pipeline: `jobs:
- name: j
  plan:
  - across: [{var: v, values: [a, b]}]
    attempts: 2
    do:
    - task: ok
      ` + cfg + `
    - task: t
      config: {platform: linux, rootfs_uri: "file:///x", run: {path: x}}
`,
			want: `:9:7: jobs[j].plan[0].do[1].task: rootfs_uri "file:///x" is not a docker:/// image`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			file := writeFile(t, "p.yml", tc.pipeline)
			code, _, stderr := run(t, "", "convert", file)
			got := errorLine(stderr)
			if code != 1 || !strings.HasPrefix(got, "error: "+file+tc.want) {
				t.Errorf("code %d, error %q\nwant it to start with %q", code, got, "error: "+file+tc.want)
			}
			if strings.Contains(got, "plan ") {
				t.Errorf("the error names a plan ID: %q", got)
			}
		})
	}
}

func TestConvertTaskFileErrors(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, "app.yml", convertPipeline)
	code, stdout, stderr := run(t, "", "convert", file, "-j", "unit", "-i", "repo="+dir)
	want := "error: " + file + `:13:5: jobs[unit].plan[1].file: task "test": the artifact repo has no file ci/test.yml`
	if code != 1 || stdout != "" || !strings.HasPrefix(stderr, want) {
		t.Errorf("code %d, stdout %q, stderr = %q\nwant it to start with %q", code, stdout, stderr, want)
	}
}

// errorLine is the `error: ` line of stderr (warnings and notes come before it).
func errorLine(stderr string) string {
	for _, line := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(line, "error: ") {
			return line
		}
	}
	return ""
}

// TestConvertAcrossSlots: --across-slots sets how many slots an across over values known
// only at run time gets, and must be at least 1.
func TestConvertAcrossSlots(t *testing.T) {
	file := writeFile(t, "p.yml", `jobs:
- name: j
  plan:
  - across: [{var: v, values: ((.:vs))}]
    task: t
    config: {platform: linux, rootfs_uri: "docker:///busybox", run: {path: echo, args: [((.:v))]}}
`)
	code, stdout, stderr := run(t, "", "convert", file, "--across-slots", "3")
	if code != 0 || strings.Count(stdout, `"mode":"task"`) != 3 || !strings.Contains(stdout, `"slots":3`) {
		t.Errorf("code %d, stderr %q; want 3 slots in:\n%s", code, stderr, stdout)
	}
	code, _, stderr = run(t, "", "convert", file, "--across-slots", "0")
	if want := "error: invalid --across-slots 0: it must be at least 1"; code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("code %d, stderr %q; want %q", code, stderr, want)
	}
}
