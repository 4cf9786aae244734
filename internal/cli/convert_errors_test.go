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
        image: nope
        ` + cfg + `
`,
			want: `:8:9: jobs[j].plan[0].on_failure.do[0].task: the task's image is the artifact "nope"`,
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
    image: nope
    ` + cfg + `
`,
			want: `:7:5: jobs[j].ensure.task: the task's image is the artifact "nope"`,
		},
		{
			name: "across values known at run time",
			pipeline: `jobs:
- name: j
  plan:
  - task: first
    ` + cfg + `
  - in_parallel:
      steps:
      - task: t
        ` + cfg + `
        across: [{var: v, values: ((vs))}]
`,
			want: `:10:9: jobs[j].plan[1].in_parallel.steps[0].across: across var "v" takes its values at run time`,
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
      image: nope
      ` + cfg + `
`,
			want: `:9:7: jobs[j].plan[0].do[1].task: the task's image is the artifact "nope"`,
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
