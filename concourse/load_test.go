package concourse_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/vars"
)

// render lists diagnostics as `line:col: path: message`, the part of the output a user reads.
func render(ds concourse.Diagnostics) []string {
	var out []string
	for _, d := range ds {
		d.File = ""
		out = append(out, fmt.Sprintf("%d:%d: %s", d.Pos.Line, d.Pos.Col, d.Error()))
	}
	return out
}

const minimal = `
resources:
- name: repo
  type: git
  source: {uri: https://example.com/repo.git}
jobs:
- name: unit
  plan:
  - get: repo
  - task: test
    config:
      platform: linux
      rootfs_uri: docker:///busybox
      run: {path: "true"}
`

func TestParsePipelineDiagnostics(t *testing.T) {
	tests := []struct {
		name     string
		yaml     string
		errors   []string
		warnings []string
	}{
		{name: "minimal is valid", yaml: minimal},
		{name: "BOM accepted", yaml: "\xef\xbb\xbf" + minimal},
		{
			name: "anchors and merge keys",
			yaml: `
anchors:
  task: &task
    platform: linux
    rootfs_uri: docker:///busybox
    run: {path: "false"}
resources:
- name: repo
  type: git
  source: &src {uri: u}
jobs:
- name: unit
  plan:
  - get: repo
  - task: a
    config:
      <<: *task
      run: {path: "true"}
  - task: b
    config: *task
`,
			warnings: []string{`2:1: anchors: unknown top-level key "anchors" is ignored (Concourse drops it; it is fine for YAML anchors)`},
		},
		{
			// Concourse looks the name up as written: no resource is named ((x)), and
			// the steps could not be compiled.
			name: "a get or put of a resource named by a var not given",
			yaml: `
resources:
- name: repo
  type: git
- name: ((named))
  type: git
jobs:
- name: unit
  plan:
  - get: ((x))
  - put: ((y))
  - get: ((named))
  - get: src
    resource: ((z))
  - get: repo
`,
			errors: []string{
				`10:5: jobs[unit].plan[0].get: unknown resource "((x))"`,
				`11:5: jobs[unit].plan[1].put: unknown resource "((y))"`,
				`13:5: jobs[unit].plan[3].get: unknown resource "((z))"`,
			},
			warnings: []string{
				`5:3: resources[((named))].name: resource "((named))" is not a valid identifier: start with a lowercase letter or a number, then use lowercase letters, numbers, '-', '_' and '.'`,
				`10:5: jobs[unit].plan[0].get: get step "((x))" is not a valid identifier: start with a lowercase letter or a number, then use lowercase letters, numbers, '-', '_' and '.'`,
				`11:5: jobs[unit].plan[1].put: put step "((y))" is not a valid identifier: start with a lowercase letter or a number, then use lowercase letters, numbers, '-', '_' and '.'`,
				`12:5: jobs[unit].plan[2].get: get step "((named))" is not a valid identifier: start with a lowercase letter or a number, then use lowercase letters, numbers, '-', '_' and '.'`,
			},
		},
		{
			name: "v8: passed patterns are path.Match patterns over job names",
			yaml: `
resources:
- name: repo
  type: git
jobs:
- name: unit-a
  plan: [{get: repo}]
- name: unit-b
  plan: [{task: t, file: x/t.yml}]
- name: ship
  plan:
  - get: repo
    passed: ["unit-*", "{unit-a,unit-b}", "unit-[^b]", "[", "uint-a"]
`,
			errors: []string{
				`13:14: jobs[ship].plan[0].passed[0]: job 'unit-b' does not interact with resource 'repo': get or put it in that job, or remove the job from passed`,
				`13:24: jobs[ship].plan[0].passed[1]: no matching job(s) for '{unit-a,unit-b}'`,
				`13:56: jobs[ship].plan[0].passed[3]: no matching job(s) for '[': the pattern is malformed (path.Match syntax: *, ?, [a-z], [^a-z], \ to escape)`,
				`13:61: jobs[ship].plan[0].passed[4]: no matching job(s) for 'uint-a' (did you mean "unit-a"?)`,
			},
		},
		{
			name: "v8: a cycle through a passed pattern",
			yaml: `
resources:
- name: repo
  type: git
jobs:
- name: a
  plan: [{get: repo, passed: ["b*"]}]
- name: b1
  plan: [{get: repo, passed: [a]}]
`,
			errors: []string{`6:3: jobs[a]: the jobs' passed constraints form a cycle: a -> b1 -> a`},
		},
		{
			name: "v8: user_data, across and instance_vars need no flag",
			yaml: `
user_data:
  defaults: &defaults {bucket: b}
resources:
- name: out
  type: s3
  source: *defaults
jobs:
- name: unit
  plan:
  - across:
    - var: v
      values: [a, b]
    put: out
  - set_pipeline: child
    file: out/p.yml
    instance_vars: {branch: main}
`,
		},
		{
			name: "duplicate keys name both lines",
			yaml: `
jobs:
- name: unit
  plan: []
jobs: []
`,
			errors: []string{`5:1: duplicate key "jobs": already defined at line 2`},
		},
		{
			name:   "old-style template",
			yaml:   "resources:\n- name: r\n  type: git\n  source:\n    uri: {{repo-uri}}\njobs: []\n",
			errors: []string{`5:10: old-style template {{repo-uri}} is no longer supported: use ((repo-uri)) and pass the value with -v, -y or -l`},
		},
		{
			name:   "old-style template inside a string",
			yaml:   "jobs:\n- name: j\n  plan:\n  - get: x\n    params: {a: \"x-{{foo}}\"}\n",
			errors: []string{`5:17: jobs[j].plan[0].params.a: old-style template {{foo}} is no longer supported: use ((foo)) and pass the value with -v, -y or -l`},
		},
		{
			name: "unknown keys on resources and jobs are errors, with suggestions",
			yaml: `
resources:
- name: repo
  type: git
  sourc: {}
jobs:
- name: unit
  seriall: true
  plan:
  - get: repo
`,
			errors: []string{
				`5:3: resources[repo].sourc: unknown field "sourc" (did you mean "source"?)`,
				`8:3: jobs[unit].seriall: unknown field "seriall" (did you mean "serial"?)`,
			},
		},
		{
			name: "every problem at once",
			yaml: `
resources:
- name: repo
  type: git
- name: unused
  type: git
jobs:
- name: unit
  plan:
  - get: rep
  - get: repo
    passed: [nope]
  - task: t
  - attempts: 0
    task: u
    file: repo/u.yml
  - try:
      get: repo
  - timeout: forever
    do: []
  - across:
    - var: x
      values: [a]
      max_in_flight: 0
    - var: x
      values: [b]
    task: v
    file: repo/v.yml
  - load_var: lv
  - set_pipeline: sp
  - task: w
    file: repo/w.yml
    bogus: 1
`,
			errors: []string{
				`5:3: resources[unused]: resource "unused" is not used by any job: use it in a get or put, or remove it`,
				`10:5: jobs[unit].plan[0].get: unknown resource "rep" (did you mean "repo"?)`,
				`12:14: jobs[unit].plan[1].passed[0]: no matching job(s) for 'nope'`,
				`13:5: jobs[unit].plan[2].task: task "t" has neither ` + "`file` nor `config`" + `: give one of them`,
				`14:5: jobs[unit].plan[3].attempts: attempts must be greater than 0, not 0`,
				`18:7: jobs[unit].plan[4].try.get: job "unit" gets "repo" more than once (first at line 11): give the steps different names and use ` + "`resource:`",
				`19:5: jobs[unit].plan[5].timeout: invalid timeout "forever": use a duration such as 30m or 1h30m`,
				`24:7: jobs[unit].plan[6].across[0].max_in_flight: max_in_flight must be greater than 0`,
				`25:7: jobs[unit].plan[6].across[1].var: across var "x" is repeated`,
				`29:5: jobs[unit].plan[7].load_var: load_var "lv" has no ` + "`file`",
				`30:5: jobs[unit].plan[8].set_pipeline: set_pipeline "sp" has no ` + "`file`",
				`33:5: jobs[unit].plan[9].bogus: unknown field "bogus"`,
			},
		},
		{
			name: "groups",
			yaml: `
groups:
- name: all
  jobs: [unit*, nothing]
  resources: [ghost]
resources:
- name: repo
  type: git
jobs:
- name: unit
  plan: [{get: repo}]
- name: lonely
  plan: [{get: repo}]
`,
			errors: []string{
				`4:17: groups[all].jobs[1]: group "all" has job "nothing", which matches no job`,
				`5:15: groups[all].resources[0]: group "all" has resource "ghost", which does not exist`,
				`12:3: jobs[lonely]: job "lonely" belongs to no group: once there are groups, every job must be in one`,
			},
		},
		{
			name: "passed cycle",
			yaml: `
resources:
- name: r
  type: git
jobs:
- name: a
  plan: [{get: r, passed: [b]}]
- name: b
  plan: [{get: r, passed: [a]}]
`,
			errors: []string{`6:3: jobs[a]: the jobs' passed constraints form a cycle: a -> b -> a`},
		},
		{
			name: "no jobs, and so unused resources",
			yaml: "resources: [{name: r, type: git}]\n",
			errors: []string{
				`1:1: the pipeline has no jobs: add at least one job`,
				`1:13: resources[r]: resource "r" is not used by any job: use it in a get or put, or remove it`,
			},
		},
		{
			name: "task config problems",
			yaml: `
jobs:
- name: j
  plan:
  - task: t
    image: img
    hermetic: true
    config:
      rootfs_uri: docker:///x
      ouputs: []
      inputs: [{path: x}]
      caches: [{path: c, ttl: 1ms}]
      run: {path: sh}
`,
			errors: []string{
				`8:5: jobs[j].plan[0].config.platform: missing 'platform'`,
				`10:7: jobs[j].plan[0].config.ouputs: unknown fields ["ouputs"] (did you mean "outputs"?)`,
				`11:16: jobs[j].plan[0].config.inputs[0]: input has no name`,
				`12:26: jobs[j].plan[0].config.caches[0].ttl: cache ttl must be at least 1s, got '1ms'`,
			},
			warnings: []string{
				`6:5: jobs[j].plan[0].image: task "t" sets ` + "`image`" + `, which wins over the image in its config`,
				`7:5: jobs[j].plan[0].hermetic: hermetic only works on the containerd runtime`,
			},
		},
		{
			name: "names, identifiers and duplicates",
			yaml: `
resource_types:
- name: repo
  type: registry-image
  source: {}
resources:
- name: repo
  type: repo
- name: repo
  type: git
- name: Bad_Name
  type: git
jobs:
- name: "123"
  build_logs_to_retain: 3
  build_log_retention: {builds: 2, minimum_succeeded_builds: 3}
  plan: [{get: repo}, {get: Bad_Name}]
`,
			errors: []string{
				`9:3: resources[repo]: resource "repo" is defined more than once (also as resource at line 7)`,
				`15:3: jobs[123].build_logs_to_retain: can't use both build_log_retention and build_logs_to_retain: keep build_log_retention`,
				`16:36: jobs[123].build_log_retention.minimum_succeeded_builds: minimum_succeeded_builds (3) must not be greater than builds (2)`,
			},
			warnings: []string{
				`11:3: resources[Bad_Name].name: resource "Bad_Name" is not a valid identifier: start with a lowercase letter or a number, then use lowercase letters, numbers, '-', '_' and '.'`,
				`14:3: jobs[123].name: job "123" is not a valid identifier: it must not be only digits`,
				`15:3: jobs[123].build_logs_to_retain: build_logs_to_retain is deprecated. Use build_log_retention instead.`,
				`17:24: jobs[123].plan[1].get: get step "Bad_Name" is not a valid identifier: start with a lowercase letter or a number, then use lowercase letters, numbers, '-', '_' and '.'`,
			},
		},
		{
			// Names are checked as written, their ((vars)) unfilled, but for a task's or
			// a set_pipeline's that an across runs; an empty name is an error.
			name: "step names as Concourse checks them",
			yaml: `
var_sources:
- {name: "1", type: dummy, config: {vars: {}}}
jobs:
- name: j
  plan:
  - set_pipeline: ((name))
    file: f.yml
  - across: [{var: env, values: [a]}]
    attempts: 2
    set_pipeline: ((.:env))
    file: f.yml
  - across: [{var: env, values: [a]}]
    do:
    - task: Build-((.:env))
      file: t.yml
  - task: ""
    file: t.yml
`,
			errors: []string{`17:5: jobs[j].plan[3].task: task step has no name`},
			warnings: []string{
				`3:4: var_sources[1].name: var source "1" is not a valid identifier: it must not be only digits`,
				`7:5: jobs[j].plan[0].set_pipeline: set_pipeline step "((name))" is not a valid identifier: start with a lowercase letter or a number, then use lowercase letters, numbers, '-', '_' and '.'`,
				`15:7: jobs[j].plan[2].do[0].task: task step "Build-((.:env))" is not a valid identifier: start with a lowercase letter or a number, then use lowercase letters, numbers, '-', '_' and '.'`,
			},
		},
		{
			// A job's load_vars define their vars in one scope, an across's in its own;
			// a hook is checked after the step it is attached to, out of the across.
			name: "local vars",
			yaml: `
jobs:
- name: j
  plan:
  - load_var: v
    file: a/v
    ensure: {across: [{var: v, values: [0]}], task: t, file: a/t.yml}
  - across: [{var: v, values: [1]}]
    load_var: w
    file: a/w
    on_success: {load_var: w, file: a/w}
  - load_var: v
    file: a/v
`,
			errors: []string{`12:5: jobs[j].plan[2].load_var: var "v" is defined twice in the same scope (also at line 5): give one of them another name`},
			warnings: []string{
				`7:24: jobs[j].plan[0].ensure.across[0].var: across var "v" shadows an outer var of the same name`,
				`8:15: jobs[j].plan[1].across[0].var: across var "v" shadows an outer var of the same name`,
			},
		},
		{
			name: "var sources",
			yaml: `
var_sources:
- name: a
  type: vault
  config: {client_token: ((b:t))}
- name: b
  type: vault
  config: {client_token: ((a:t))}
- name: c
  type: consul
  config: {}
jobs:
- name: j
  plan: [{task: t, file: x/y.yml}]
`,
			errors: []string{
				`3:3: var_sources[a]: var sources depend on each other in a cycle: a -> b -> a`,
				`10:3: var_sources[c].type: unknown var source type "consul": use one of dummy, idtoken, secretsmanager, ssm, vault`,
			},
		},
		{
			// Each as its credential manager checks it when Concourse sets the pipeline.
			name: "var source configs",
			yaml: `
var_sources:
- {name: d, type: dummy, config: {}}
- {name: i, type: idtoken, config: {audience: [a], expires_in: 48h}}
- {name: j, type: idtoken, config: {audiience: [a]}}
- {name: v, type: vault, config: {url: "https://vault", insecure_skip_verify: "yes"}}
- {name: w, type: vault, config: {url: "https://vault"}}
- {name: s, type: ssm, config: {secret_key: k}}
- {name: m, type: secretsmanager}
jobs:
- name: j
  plan: [{task: t, file: x/y.yml}]
`,
			errors: []string{
				`3:26: var_sources[d].config.vars: var source "d": a dummy var source's config needs ` + "`vars`" + `, a map of var names to values`,
				`4:52: var_sources[i].config.expires_in: var source "i": expires_in must be at most 24h`,
				`5:37: var_sources[j].config.audiience: var source "j": unknown setting "audiience" of an idtoken var source (did you mean "audience"?)`,
				`6:57: var_sources[v].config.insecure_skip_verify: var source "v": insecure_skip_verify must be a boolean`,
				`7:26: var_sources[w].config: var source "w": give client_token, client_token_path or auth_backend`,
				`8:24: var_sources[s].config: var source "s": give access_key too: a secret_key or a session_token needs it`,
			},
		},
		{
			name: "aggregate is refused, the steps in it checked",
			yaml: `
resources:
- {name: r, type: git}
jobs:
- name: j
  plan:
  - aggregate:
    - get: r
    - get: s
`,
			errors: []string{
				`7:5: jobs[j].plan[0].aggregate: aggregate was removed in Concourse v7: use in_parallel, which takes the same list of steps`,
				`9:7: jobs[j].plan[0].aggregate[1].get: unknown resource "s" (did you mean "r"?)`,
			},
		},
		{
			name: "type errors are positioned",
			yaml: `
resources:
- {name: r, type: git}
jobs:
- name: j
  max_in_flight: lots
  plan:
  - get: r
    version: sometimes
`,
			errors: []string{
				`6:3: jobs[j].max_in_flight: cannot use string as an integer (got "lots")`,
				`9:5: jobs[j].plan[0].version: invalid version "sometimes": use "latest", "every" or a map of version fields`,
			},
		},
		{
			name: "every type error of every job at once",
			yaml: `
resources:
- {name: r, type: git}
jobs:
- name: j
  serial: [yes]
  plan:
  - get: r
    trigger: sometimes
    passed: {a: b}
  - tsk: t
  - put: r
    inputs: some
  - do:
    - 5
    - task: t
      file: f
      container_limits: {memory: 1TB}
  - try: {}
  on_failure: {putt: r}
- name: k
  plan: {get: r}
`,
			errors: []string{
				`6:3: jobs[j].serial: cannot use array as a boolean`,
				`9:5: jobs[j].plan[0].trigger: cannot use string as a boolean (got "sometimes")`,
				`10:5: jobs[j].plan[0].passed: cannot use object as a list`,
				`11:5: jobs[j].plan[1].tsk: unknown step type "tsk" (did you mean "task"?)`,
				`13:5: jobs[j].plan[2].inputs: invalid inputs "some": use "all", "detect" or a list of artifact names`,
				`15:7: jobs[j].plan[3].do[0]: a step must be a map`,
				`18:26: jobs[j].plan[3].do[1].container_limits.memory: invalid memory limit "1TB": use a number of bytes or a size such as 512MB or 1G`,
				`19:5: jobs[j].plan[4].try: no step configured`,
				`20:16: jobs[j].on_failure.putt: unknown step type "putt" (did you mean "put"?)`,
				`22:3: jobs[k].plan: cannot use object as a list`,
			},
		},
		{
			name: "a misspelt step type is named, with the type it looks like",
			yaml: `
jobs:
- name: j
  plan:
  - tsk: t
    file: f
  - attempts: 2
    gett: r
  - in_parallel:
    - put: r
      ensure: {task: t, fil: f}
    - {nope: 1}
`,
			errors: []string{
				`5:5: jobs[j].plan[0].tsk: unknown step type "tsk" (did you mean "task"?)`,
				`8:5: jobs[j].plan[1].gett: unknown step type "gett" (did you mean "get"?)`,
				`12:7: jobs[j].plan[2].in_parallel[1]: no step configured`,
			},
		},
		{
			name:   "display scheme",
			yaml:   "display: {background_image: 'ftp://x/y.png'}\njobs: [{name: j, plan: []}]\n",
			errors: []string{`1:11: display.background_image: background image scheme "ftp" is not allowed: use http, https or a relative URL`},
		},
		{
			// Concourse v8's jobs have no worker tags: its strict decoding refuses them.
			name: "a job's tags are an unknown field",
			yaml: `
resources:
- {name: r, type: git}
jobs:
- name: j
  tags: [linux]
  plan: [{get: r, tags: [linux]}]
`,
			errors: []string{`6:3: jobs[j].tags: unknown field "tags"`},
		},
		{
			// Concourse's YAML decoding reads a number as its text where a string is
			// wanted, but only outside the values that decode themselves: a step is one.
			name: "a number is text outside a step, refused in one",
			yaml: `
resources:
- {name: r, type: git, version: {ref: 1}}
jobs:
- name: j
  serial_groups: [1]
  plan:
  - get: r
  - task: t
    config:
      platform: linux
      rootfs_uri: docker:///busybox
      run: {path: sleep, args: [-s, 50]}
`,
			errors: []string{`13:37: jobs[j].plan[1].config.run.args[1]: cannot use number as a string: quote it ("50") to make it one`},
		},
		{
			// Concourse: "must specify either `file:` or `config:`", and "one of ..., not
			// both".
			name: "a task needs a file or a config, not both",
			yaml: `
jobs:
- name: j
  plan:
  - task: neither
  - task: both
    file: ci/t.yml
    config: {platform: linux, rootfs_uri: docker:///busybox, run: {path: "true"}}
`,
			errors: []string{
				"5:5: jobs[j].plan[0].task: task \"neither\" has neither `file` nor `config`: give one of them",
				"6:5: jobs[j].plan[1].task: task \"both\" has both `file` and `config`: give only one of them",
			},
		},
		{
			// Concourse accepts it: its worker has a default root file system.
			name: "a task without an image",
			yaml: `
resources: [{name: img, type: registry-image}]
jobs:
- name: j
  plan:
  - task: bare
    config: {platform: linux, run: {path: "true"}}
  - get: img
  - task: from-an-artifact
    image: img
    config: {platform: linux, run: {path: "true"}}
`,
			warnings: []string{`7:5: jobs[j].plan[0].config: task "bare" has no image: Concourse runs it in its worker's root file system; a build on Tekton runs it in the default task image (--default-task-image; the web node's --tekton-default-task-image), and refuses it without one: give the config an image_resource (or a rootfs_uri), or the step an image`},
		},
		{
			// Concourse decodes an across var strictly.
			name: "an across var's unknown field",
			yaml: `
resources: [{name: r, type: git}]
jobs:
- name: j
  plan: [{get: r, across: [{var: a, values: [1]}, {vars: b, values: [2]}]}]
`,
			errors: []string{`5:52: jobs[j].plan[0].across[1].vars: unknown field "vars" (did you mean "var"?)`},
		},
		{
			// Concourse accepts both; neither does anything a build could use.
			name: "an across var without a name, a cache without a path",
			yaml: `
jobs:
- name: j
  plan:
  - across: [{values: [1, 2]}]
    task: t
    config:
      platform: linux
      rootfs_uri: docker:///busybox
      run: {path: "true"}
      caches: [{path: ""}]
`,
			warnings: []string{
				`5:14: jobs[j].plan[0].across[0]: across var has no name: no ((.:var)) can use its values`,
				`11:16: jobs[j].plan[0].config.caches[0]: cache has no path: Concourse caches the task's whole working directory then, which a build here refuses: give it a path`,
			},
		},
		{
			name:   "not a map",
			yaml:   "- a\n- b\n",
			errors: []string{`1:1: a pipeline must be a map with jobs, resources and so on`},
		},
		{
			name:   "invalid YAML",
			yaml:   "jobs:\n  - name: j\n bad\n",
			errors: []string{`3:2: invalid YAML: did not find expected key: check the indentation of this line`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, diags := concourse.ParsePipeline("pipeline.yml", []byte(tc.yaml), nil)
			if diff := cmp.Diff(tc.errors, render(diags.Errors())); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.warnings, render(diags.Warnings())); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
			checkPositioned(t, diags)
		})
	}
}

// checkPositioned checks that every diagnostic says file:line:col.
func checkPositioned(t *testing.T, diags concourse.Diagnostics) {
	t.Helper()
	for _, d := range diags {
		if d.File == "" || d.Pos.Line < 1 || d.Pos.Col < 1 {
			t.Errorf("diagnostic without a file:line:col: %#v", d)
		}
	}
}

// TestYAMLErrors checks that a YAML error is reported where the file goes wrong, not where
// the parser says (the start of the enclosing block, or nowhere for bad bytes), and says
// how to fix the common causes.
func TestYAMLErrors(t *testing.T) {
	// comments pads a document so that its problem is on line 756.
	comments := strings.Repeat("# a comment\n", 752)
	tests := []struct {
		name string
		yaml string
		want string
	}{
		{
			name: "a key indented less than its siblings",
			yaml: "jobs:\n- name: j\n  plan:\n  - get: r\n    params:\n      a: 1\n     b: 2\n",
			want: "7:6: invalid YAML: did not find expected key: check the indentation of this line",
		},
		{
			name: "a key indented more than its siblings",
			yaml: "jobs:\n- name: j\n  plan:\n  - task: t\n     file: x\n",
			want: "5:6: invalid YAML: mapping values are not allowed in this context: check the indentation of this line",
		},
		{
			name: "a step indented less than its siblings",
			yaml: "jobs:\n- name: j\n  plan:\n  - get: r\n - get: s\n",
			want: "5:2: invalid YAML: did not find expected key: check the indentation of this line",
		},
		{
			name: "a map where a list goes on",
			yaml: "jobs:\n  - name: j\n  plan: []\n",
			want: "3:3: invalid YAML: did not find expected '-' indicator: check the indentation of this line",
		},
		{
			name: "far from the start of its block",
			yaml: "jobs:\n- name: j\n  plan:\n" + strings.Repeat("  - get: r\n", 200) + "   - get: s\n",
			want: "204:4: invalid YAML: did not find expected key: check the indentation of this line",
		},
		{
			name: "a colon in a plain value",
			yaml: "jobs:\n- name: j\n  plan: []\n  public: a: b\n",
			want: "4:12: invalid YAML: mapping values are not allowed in this context: quote a value that contains \": \"",
		},
		{
			name: "a tab",
			yaml: "jobs:\n- name: j\n\tplan: []\n",
			want: "3:1: invalid YAML: found a tab character that violates indentation: a tab cannot indent YAML, use spaces",
		},
		{
			name: "a value starting with @",
			yaml: "jobs:\n- name: @j\n",
			want: "2:9: invalid YAML: found character that cannot start any token: quote a value that starts with @ or `",
		},
		{
			name: "an unclosed quote",
			yaml: "jobs:\n- name: \"j\n  plan: []\n",
			want: "2:9: invalid YAML: found unexpected end of stream: check that the quotes and brackets opened on this line are closed",
		},
		{
			name: "an unclosed bracket",
			yaml: "jobs:\n- name: j\n  plan: [{get: r}\n  public: true\n",
			want: "3:9: invalid YAML: did not find expected ',' or ']': check that the quotes and brackets opened on this line are closed",
		},
		{
			name: "a NUL byte on line 756",
			yaml: "jobs:\n- name: j\n  plan:\n" + comments + "  - get: r\x00\n",
			want: "756:11: invalid YAML: NUL byte: a YAML file is text and cannot hold one (is this a binary file?)",
		},
		{
			name: "invalid UTF-8 on line 756",
			yaml: "jobs:\n- name: j\n  plan:\n" + comments + "  - get: é\xff\n",
			want: "756:11: invalid YAML: invalid UTF-8 byte 0xff: save the file as UTF-8",
		},
		{
			name: "UTF-8 cut short at the end",
			yaml: "jobs: [\xe2\x82",
			want: "1:8: invalid YAML: invalid UTF-8 byte 0xe2: save the file as UTF-8",
		},
		{
			name: "a control character",
			yaml: "jobs: [a\x07]\n",
			want: "1:9: invalid YAML: control character U+0007 is not allowed: write it as the escape \"\\u0007\" in a double-quoted string",
		},
		{
			name: "an alias before its anchor",
			yaml: "jobs: *later\nx: &later []\n",
			want: "1:7: invalid YAML: unknown anchor 'later' referenced (an anchor must be defined in the same file, before its first use)",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, diags := concourse.ParsePipeline("pipeline.yml", []byte(tc.yaml), nil)
			if diff := cmp.Diff([]string{tc.want}, render(diags.Errors())); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			checkPositioned(t, diags)
		})
	}
}

func TestParsePipelineVars(t *testing.T) {
	const pipeline = `
resources:
- name: repo
  type: git
  source:
    uri: ((repo.uri))
    branch: ((branch))
    private_key: ((vault:deploy-key))
    depth: ((depth))
    "((key))": value
jobs:
- name: unit
  serial: ((serial))
  plan:
  - get: repo
    params: {label: "v((depth))-((branch))"}
`
	var vf concourse.VarFlags
	mustNil(t, vf.AddVar("repo.uri=https://a.example/repo.git"))
	mustNil(t, vf.AddYAMLVar("depth=3"))
	mustNil(t, vf.AddYAMLVar("serial=true"))
	mustNil(t, vf.AddFile("a.yml", []byte("branch: from-a\nkey: k-from-a\nrepo: {uri: from-file}\n")))
	mustNil(t, vf.AddFile("b.yml", []byte("branch: from-b\n")))

	p, diags := concourse.ParsePipeline("pipeline.yml", []byte(pipeline), vf.Variables())
	if err := diags.Err(); err != nil {
		t.Fatal(err)
	}
	got := p.Config.Resources[0].Source
	want := concourse.Source{
		"uri":         "https://a.example/repo.git", // -v wins over files
		"branch":      "from-b",                     // a later file wins
		"private_key": "((vault:deploy-key))",       // a var source: left for run time
		"depth":       float64(3),                   // a whole-value var keeps its type
		"k-from-a":    "value",                      // keys are interpolated too
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("source (-want +got):\n%s", diff)
	}
	if !p.Config.Jobs[0].Serial {
		t.Errorf("serial: a YAML bool var should decode into a bool field")
	}
	if diff := cmp.Diff(concourse.Params{"label": "v3-from-b"}, p.Config.Jobs[0].PlanSequence[0].Config.(*concourse.GetStep).Params); diff != "" {
		t.Errorf("spliced params (-want +got):\n%s", diff)
	}
	var unresolved []string
	for _, u := range p.Unresolved {
		unresolved = append(unresolved, fmt.Sprintf("%s@%d:%d %s", u.Ref, u.Pos.Line, u.Pos.Col, u.Path))
	}
	if diff := cmp.Diff([]string{"vault:deploy-key@8:18 resources[repo].source.private_key"}, unresolved); diff != "" {
		t.Errorf("unresolved (-want +got):\n%s", diff)
	}
}

func TestParsePipelineVarErrors(t *testing.T) {
	const pipeline = "jobs:\n- name: j\n  plan:\n  - get: r\n    params: {a: \"x-((m))\"}\n"
	static := vars.StaticVariables{"m": map[string]any{"k": "v"}}
	_, diags := concourse.ParsePipeline("p.yml", []byte(pipeline), static)
	want := []string{"5:17: jobs[j].plan[0].params.a: cannot interpolate non-primitive value (map[string]interface {}) for var: m"}
	if diff := cmp.Diff(want, render(diags.Errors())); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestYAML11Scalars(t *testing.T) {
	const pipeline = `
resources:
- name: r
  type: git
  source:
    yes_bool: yes
    off_bool: off
    quoted: "yes"
    hex: 0x1F
    octal: 017
    float: 1.50
    exp: 1e3
    under: 1_000
    null1: ~
    stamp: 2001-12-14
    str: 1.2.3
jobs:
- name: j
  plan: [{get: r, trigger: on}]
`
	p, diags := concourse.ParsePipeline("p.yml", []byte(pipeline), nil)
	if err := diags.Err(); err != nil {
		t.Fatal(err)
	}
	want := concourse.Source{
		"yes_bool": true, "off_bool": false, "quoted": "yes", "hex": float64(31), "octal": float64(15),
		"float": 1.5, "exp": float64(1000), "under": float64(1000), "null1": nil, "stamp": "2001-12-14", "str": "1.2.3",
	}
	if diff := cmp.Diff(want, p.Config.Resources[0].Source); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if !p.Config.Jobs[0].PlanSequence[0].Config.(*concourse.GetStep).Trigger {
		t.Errorf("trigger: on should be true (YAML 1.1)")
	}
}

func TestParseTaskConfig(t *testing.T) {
	cfg, err := concourse.ParseTaskConfig([]byte(`
platform: linux
image_resource: {type: registry-image, source: {repository: busybox}}
params: {N: 1.50, B: true, O: {a: 1}, E: null}
inputs: [{name: src, path: code, optional: true}]
run: {path: sh, args: [-c, "50"], dir: code, user: nobody}
container_limits: {cpu: 512, memory: 1GB}
`))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(concourse.TaskEnv{"N": "1.5", "B": "true", "O": `{"a":1}`, "E": ""}, cfg.Params); diff != "" {
		t.Errorf("params (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"-c", "50"}, cfg.Run.Args); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
	if got := *cfg.Limits.Memory; got != 1<<30 {
		t.Errorf("memory = %d, want %d", got, 1<<30)
	}
	// A task file's key given twice is its last value, as Concourse's go-yaml v2 reads it
	// (a pipeline's is refused, as fly's yaml.v3 parse refuses it).
	cfg, err = loadTaskConfig("platform: linux\nrun: {path: x}\nrun: {path: z}\n")
	if err != nil || cfg.Run.Path != "z" {
		t.Errorf("a key given twice: got %v, %v; want the last value", cfg.Run, err)
	}
	// A task file is decoded by its own decoder, as Concourse's is: a number where a
	// string is wanted is refused, not read as its text.
	_, err = loadTaskConfig("platform: linux\nrun: {path: sh, args: [-c, 50]}\n")
	if err == nil || err.Error() != `task.yml:2:28: run.args[1]: cannot use number as a string: quote it ("50") to make it one` {
		t.Errorf("got %v", err)
	}
	_, err = loadTaskConfig("platform: linux\nrun: {path: x}\nouputs: []\n")
	if err == nil || err.Error() != `task.yml:3:1: ouputs: unknown fields: [ouputs] (did you mean "outputs"?)` {
		t.Errorf("got %v", err)
	}
	// Several: all of them in one error, as Concourse v8's task file loader says it, at
	// the first in order.
	_, err = loadTaskConfig("platform: linux\nrun: {path: x}\nouputs: []\nintputs: []\n")
	if err == nil || err.Error() != `task.yml:4:1: intputs: unknown fields: [intputs ouputs]` {
		t.Errorf("got %v", err)
	}
}

// TestLoadTaskConfigWarnings: what a build here does not run as Concourse would is a
// warning at its position in the file; an image the step gives silences the file's lack
// of one.
func TestLoadTaskConfigWarnings(t *testing.T) {
	const file = "# a task\nplatform: linux\nrun: {path: x}\ncaches: [{path: c}, {}]\n"
	noImage := "task.yml:2:1: the task config has no image: Concourse runs it in its worker's root file system; a build on Tekton runs it in the default task image (--default-task-image; the web node's --tekton-default-task-image), and refuses it without one: give it an image_resource (or a rootfs_uri), or its step an image"
	noPath := "task.yml:4:21: caches[1]: cache has no path: Concourse caches the task's whole working directory then, which a build here refuses: give it a path"
	for _, tt := range []struct {
		name string
		opts concourse.TaskFileOptions
		want []string
	}{
		{"alone", concourse.TaskFileOptions{}, []string{noImage, noPath}},
		{"its image given", concourse.TaskFileOptions{ImageGiven: true}, []string{noPath}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, diags := concourse.LoadTaskConfig("task.yml", []byte(file), tt.opts)
			var got []string
			for _, d := range diags {
				if d.Severity != concourse.SeverityWarning {
					t.Errorf("not a warning: %v", d)
				}
				got = append(got, d.Error())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// loadTaskConfig loads task.yml, which is data, and says its errors.
func loadTaskConfig(data string) (concourse.TaskConfig, error) {
	cfg, diags := concourse.LoadTaskConfig("task.yml", []byte(data), concourse.TaskFileOptions{})
	return cfg, diags.Err()
}

func mustNil(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
