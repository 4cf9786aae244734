//go:build e2e

package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// writeFile is a task that writes its CONTENT param to out/<file>, with <<var>> turned
// into ((var)) (a ((var)) in a param would be the parent build's).
func writeFile(name, file, content string) string {
	return fmt.Sprintf(`
  - task: %s
    config:
      platform: linux
      image_resource: %s
      outputs: [{name: out}]
      params:
        CONTENT: |
%s
      run: {path: sh, args: [-c, 'printf "%%s" "$CONTENT" | sed -e "s/<</((/g" -e "s/>>/))/g" > out/%s']}
`, name, busybox(), indent(content, "          "), file)
}

func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n"+prefix) + "\n"
}

// names are the names of a fly command's --json list.
func names(t *testing.T, args ...string) []string {
	t.Helper()
	out, code := fly(t, time.Minute, append(args, "--json")...)
	if code != 0 {
		fatalf(t, "fly %v: exit %d\n%s", args, code, out)
	}
	var list []struct {
		Name string `json:"name"`
	}
	if err := jsonUnmarshal(out, &list); err != nil {
		fatal(t, err)
	}
	var ns []string
	for _, x := range list {
		ns = append(ns, x.Name)
	}
	return ns
}

// TestSetPipeline: a set_pipeline step sets the pipeline a task wrote, in the ATC, as
// Concourse's step does: the diff, "setting pipeline:", "done"; the child runs with the
// step's vars; set again unchanged, "no changes to apply."; a team that does not exist
// errors the build.
func TestSetPipeline(t *testing.T) {
	dumpOnFailure(t)
	t.Parallel()
	child := fmt.Sprintf(`jobs:
- name: hello
  plan:
  - task: say
    config:
      platform: linux
      image_resource: %s
      run: {path: echo, args: ["<<greeting>>"]}
`, busybox())
	setPipeline(t, "parent", `
jobs:
- name: setter
  plan:`+writeFile("make", "child.yml", child)+`
  - set_pipeline: child
    file: out/child.yml
    vars: {greeting: hello from the child}
- name: bad-team
  plan:`+writeFile("make", "child.yml", child)+`
  - set_pipeline: child
    team: nobody
    file: out/child.yml
    vars: {greeting: never}
`)

	out, code := fly(t, 5*time.Minute, "trigger-job", "-j", "parent/setter", "-w")
	t.Logf("fly trigger-job -j parent/setter -w: exit %d\n%s", code, out)
	if code != 0 {
		fatalf(t, "exit %d, want 0", code)
	}
	inOrder(t, out, "job hello has been added", "setting pipeline: child", "done", "succeeded")
	if ps := names(t, "pipelines"); !slices.Contains(ps, "child") {
		fatalf(t, "fly pipelines: %q; want child among them", ps)
	}

	out, code = fly(t, 5*time.Minute, "trigger-job", "-j", "child/hello", "-w")
	t.Logf("fly trigger-job -j child/hello -w: exit %d\n%s", code, out)
	if code != 0 {
		errorf(t, "exit %d, want 0", code)
	}
	inOrder(t, out, "hello from the child", "succeeded")

	out, code = fly(t, 5*time.Minute, "trigger-job", "-j", "parent/setter", "-w")
	t.Logf("fly trigger-job -j parent/setter -w (again): exit %d\n%s", code, out)
	if code != 0 {
		errorf(t, "exit %d, want 0", code)
	}
	inOrder(t, out, "no changes to apply.", "succeeded")

	out, code = fly(t, 5*time.Minute, "trigger-job", "-j", "parent/bad-team", "-w")
	t.Logf("fly trigger-job -j parent/bad-team -w: exit %d\n%s", code, out)
	if code != 2 {
		errorf(t, "exit %d, want 2 (errored)", code)
	}
	inOrder(t, out, "team nobody not found", "errored")
}

// TestSetPipelineSelf: `set_pipeline: self` sets the build's own pipeline.
func TestSetPipelineSelf(t *testing.T) {
	dumpOnFailure(t)
	t.Parallel()
	next := fmt.Sprintf(`jobs:
- name: sp
  plan:
  - set_pipeline: self
    file: does-not/matter.yml
- name: added
  plan:
  - task: say
    config:
      platform: linux
      image_resource: %s
      run: {path: echo, args: [added by self]}
`, busybox())
	setPipeline(t, "selfset", `
jobs:
- name: sp
  plan:`+writeFile("make", "next.yml", next)+`
  - set_pipeline: self
    file: out/next.yml
`)
	out := flyOK(t, 5*time.Minute, "trigger-job", "-j", "selfset/sp", "-w")
	inOrder(t, out, "setting pipeline: selfset", "done", "succeeded")
	if jobs := names(t, "jobs", "-p", "selfset"); !slices.Equal(jobs, []string{"sp", "added"}) {
		errorf(t, "fly jobs -p selfset: %q; want sp, added", jobs)
	}
	out, code := fly(t, 5*time.Minute, "trigger-job", "-j", "selfset/added", "-w")
	t.Logf("fly trigger-job -j selfset/added -w: exit %d\n%s", code, out)
	inOrder(t, out, "added by self", "succeeded")
}
