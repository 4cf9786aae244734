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
			name:   "no jobs",
			yaml:   "resources: []\n",
			errors: []string{`1:1: the pipeline has no jobs: add at least one job`},
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
			name: "var sources",
			yaml: `
var_sources:
- name: a
  type: vault
  config: {token: ((b:t))}
- name: b
  type: vault
  config: {token: ((a:t))}
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
			name: "aggregate is read as in_parallel",
			yaml: `
resources:
- {name: r, type: git}
jobs:
- name: j
  plan:
  - aggregate:
    - get: r
`,
			warnings: []string{`7:5: jobs[j].plan[0].aggregate: aggregate was removed in Concourse v7 and is read here as in_parallel: rename it to in_parallel`},
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
run: {path: sh, args: [-c, 50], dir: code, user: nobody}
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
	_, err = concourse.LoadTaskConfig("task.yml", []byte("platform: linux\nrun: {path: x}\nouputs: []\n"))
	if err == nil || err.Error() != `task.yml:3:1: ouputs: unknown fields: [ouputs] (did you mean "outputs"?)` {
		t.Errorf("got %v", err)
	}
	// Several: all of them in one error, as Concourse v8's task file loader says it, at
	// the first in order.
	_, err = concourse.LoadTaskConfig("task.yml", []byte("platform: linux\nrun: {path: x}\nouputs: []\nintputs: []\n"))
	if err == nil || err.Error() != `task.yml:4:1: intputs: unknown fields: [intputs ouputs]` {
		t.Errorf("got %v", err)
	}
}

func mustNil(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
