package concourse_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"

	"github.com/concourse-tekton/concourse-tekton/concourse"
)

// semanticJSON decodes a JSON document into plain values, so that two documents compare
// equal when they mean the same whatever their key order and spacing.
func semanticJSON(t *testing.T, data []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("decoding %s: %v", data, err)
	}
	return v
}

// yamlToJSON converts a YAML document the way fly does before the ATC decodes it.
func yamlToJSON(t *testing.T, doc string) []byte {
	t.Helper()
	var v any
	if err := yaml.Unmarshal([]byte(doc), &v); err != nil {
		t.Fatalf("decoding YAML %q: %v", doc, err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encoding %q as JSON: %v", doc, err)
	}
	return out
}

// roundTripJSON decodes data into a fresh T, encodes it again and fails unless the result
// means the same as data. It returns the decoded value for further checks.
func roundTripJSON[T any](t *testing.T, data []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("decoding: %v", err)
	}
	again, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encoding: %v", err)
	}
	if diff := cmp.Diff(semanticJSON(t, data), semanticJSON(t, again)); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	return v
}

// everyPlan is an atc.Plan, as the ATC's planner writes it, with every plan type and every
// field of each set to a value that is not its zero value, so that a field the Go types drop
// or rename shows up as a difference.
const everyPlan = `{
  "id": "30",
  "ensure": {
    "step": {"id": "2f", "on_success": {
      "step": {"id": "2e", "on_failure": {
        "step": {"id": "2d", "on_error": {
          "step": {"id": "2c", "on_abort": {
            "step": {"id": "2b", "do": [
              {"id": "3", "get": {
                "name": "repo", "type": "git", "resource": "source-code",
                "source": {"uri": "https://example.com/repo.git", "depth": 1, "nested": {"k": ["v", 2, true, null]}},
                "image": {
                  "check_plan": {"id": "3/image-check", "check": {
                    "name": "git", "type": "registry-image",
                    "source": {"repository": "concourse/git-resource"},
                    "image": {"base_type": "registry-image", "privileged": true},
                    "from_version": {"digest": "sha256:abc"},
                    "resource_type": "git", "interval": "1m", "skip_interval": true,
                    "timeout": "1h", "tags": ["image-tag"]
                  }},
                  "get_plan": {"id": "3/image-get", "get": {
                    "name": "git", "type": "registry-image",
                    "source": {"repository": "concourse/git-resource"},
                    "image": {"base_type": "registry-image", "privileged": true},
                    "version_from": "3/image-check", "params": {"format": "oci"}
                  }},
                  "base_type": "registry-image", "privileged": true
                },
                "version": {"ref": "abc123"},
                "params": {"depth": 1, "submodules": "none"},
                "tags": ["linux", "large"],
                "timeout": "10m"
              }},
              {"id": "4", "check": {
                "name": "repo", "type": "git",
                "source": {"uri": "https://example.com/repo.git"},
                "image": {"base_type": "git"},
                "from_version": {"ref": "abc123"},
                "resource": "source-code", "prototype": "proto", "interval": "5m",
                "skip_interval": true, "timeout": "2m", "tags": ["linux"]
              }},
              {"id": "a", "retry": [
                {"id": "5", "attempts": [1], "task": {
                  "name": "unit", "privileged": true, "hermetic": true, "tags": ["linux"],
                  "config_path": "repo/ci/unit.yml",
                  "config": {
                    "platform": "linux",
                    "rootfs_uri": "docker:///busybox",
                    "image_resource": {"name": "", "type": "registry-image", "source": {"repository": "golang"}, "version": {"digest": "sha256:def"}, "params": {"format": "rootfs"}, "tags": ["image"]},
                    "container_limits": {"cpu": 512, "memory": 1073741824},
                    "params": {"GOFLAGS": "-mod=mod", "COUNT": "3"},
                    "run": {"path": "sh", "args": ["-c", "go test ./..."], "dir": "repo", "user": "root"},
                    "inputs": [{"name": "repo", "path": "src", "optional": true}],
                    "outputs": [{"name": "coverage", "path": "out"}],
                    "caches": [{"path": "go/pkg/mod"}]
                  },
                  "container_limits": {"cpu": 1024, "memory": 2147483648},
                  "image": "golang-image",
                  "vars": {"version": "1.22", "nested": {"a": [1, 2]}},
                  "params": {"VERBOSE": "true"},
                  "input_mapping": {"repo": "source-code"},
                  "output_mapping": {"coverage": "unit-coverage"},
                  "timeout": "30m",
                  "resource_types": [{"name": "custom", "type": "registry-image", "source": {"repository": "me/custom"}, "defaults": {"k": "v"}, "privileged": true, "check_every": "1h0m0s", "tags": ["t"], "params": {"p": "q"}}],
                  "check_skip_interval": true
                }},
                {"id": "6", "attempts": [2], "task": {"name": "unit", "privileged": false, "hermetic": false, "config_path": "repo/ci/unit.yml"}}
              ]},
              {"id": "b", "run": {
                "message": "deploy", "type": "proto", "object": {"env": "prod", "n": 2},
                "privileged": true, "tags": ["linux"],
                "container_limits": {"cpu": 256, "memory": 536870912}, "timeout": "5m"
              }},
              {"id": "c", "set_pipeline": {
                "name": "child", "file": "repo/ci/child.yml", "team": "main",
                "vars": {"password": "((secret))", "n": 1}, "var_files": ["repo/vars.yml"],
                "instance_vars": {"branch": "main", "nested": {"a": 1}}
              }},
              {"id": "d", "load_var": {"name": "version", "file": "repo/version", "format": "trim", "reveal": true}},
              {"id": "10", "in_parallel": {"steps": [
                {"id": "e", "put": {
                  "name": "release", "type": "s3", "resource": "releases",
                  "source": {"bucket": "b"}, "image": {"base_type": "s3"},
                  "params": {"file": "out/*.tgz"}, "inputs": ["out", "repo"],
                  "tags": ["linux"], "timeout": "15m", "expose_build_created_by": true
                }},
                {"id": "f", "put": {"name": "all", "type": "s3", "resource": "all", "source": {}, "image": {"base_type": "s3"}, "inputs": "all"}},
                {"id": "11", "put": {"name": "detect", "type": "s3", "resource": "detect", "source": {}, "image": {"base_type": "s3"}, "inputs": "detect"}}
              ], "limit": 2, "fail_fast": true}},
              {"id": "12", "across": {
                "vars": [
                  {"name": "env", "values": ["dev", "prod"], "max_in_flight": "all"},
                  {"name": "n", "values": [1, 2, {"k": "v"}], "max_in_flight": 2}
                ],
                "substep_template": "{\"id\":\"13\",\"task\":{\"name\":\"deploy-((.:env))\",\"privileged\":false,\"hermetic\":false}}",
                "fail_fast": true
              }},
              {"id": "14", "try": {"step": {"id": "15", "timeout": {"step": {"id": "16", "do": []}, "duration": "1m"}}}},
              {"id": "17", "artifact_input": {"artifact_id": 42, "name": "in"}},
              {"id": "18", "artifact_output": {"name": "out"}},
              {"id": "19", "dependent_get": {"type": "git", "name": "release", "resource": "releases"}}
            ]},
            "on_abort": {"id": "1a", "artifact_output": {"name": "abort"}}
          }},
          "on_error": {"id": "1b", "artifact_output": {"name": "error"}}
        }},
        "on_failure": {"id": "1c", "artifact_output": {"name": "failure"}}
      }},
      "on_success": {"id": "1d", "artifact_output": {"name": "success"}}
    }},
    "ensure": {"id": "1e", "in_parallel": {"steps": []}}
  }
}`

func TestPlanRoundTrip(t *testing.T) {
	plan := roundTripJSON[concourse.Plan](t, []byte(everyPlan))

	// The round trip must also have decoded every node, not carried it through as opaque
	// JSON: count the nodes of each type Each visits.
	kinds := map[string]int{}
	plan.Each(func(p *concourse.Plan) {
		v := reflect.ValueOf(*p)
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if f.Type.Kind() == reflect.Pointer && !v.Field(i).IsNil() {
				kinds[strings.Split(f.Tag.Get("json"), ",")[0]]++
			}
		}
	})
	want := map[string]int{
		"ensure": 1, "on_success": 1, "on_failure": 1, "on_error": 1, "on_abort": 1,
		"do": 2, "get": 2, "check": 2, "retry": 1, "task": 2, "run": 1, "set_pipeline": 1,
		"load_var": 1, "in_parallel": 2, "put": 3, "across": 1, "try": 1, "timeout": 1,
		"artifact_input": 1, "artifact_output": 5, "dependent_get": 1,
	}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Errorf("plan nodes by type (-want +got):\n%s", diff)
	}
}

// TestPlanTypedFields checks that the custom scalars inside a plan decode to their typed
// form, not only that they survive a round trip.
func TestPlanTypedFields(t *testing.T) {
	var plan concourse.Plan
	if err := json.Unmarshal([]byte(everyPlan), &plan); err != nil {
		t.Fatal(err)
	}
	byID := map[concourse.PlanID]*concourse.Plan{}
	plan.Each(func(p *concourse.Plan) { byID[p.ID] = p })

	mem := concourse.MemoryLimit(1 << 30)
	cpu := concourse.CPULimit(512)
	from := concourse.PlanID("3/image-check")
	tests := []struct {
		name      string
		got, want any
	}{
		{"image get version_from", byID["3/image-get"].Get.VersionFrom, &from},
		{"get version", byID["3"].Get.Version, &concourse.Version{"ref": "abc123"}},
		{"task config limits", byID["5"].Task.Config.Limits, &concourse.ContainerLimits{CPU: &cpu, Memory: &mem}},
		{"task attempts", byID["6"].Attempts, []int{2}},
		{"put inputs list", byID["e"].Put.Inputs, &concourse.InputsConfig{Specified: []string{"out", "repo"}}},
		{"put inputs all", byID["f"].Put.Inputs, &concourse.InputsConfig{All: true}},
		{"put inputs detect", byID["11"].Put.Inputs, &concourse.InputsConfig{Detect: true}},
		{"across max_in_flight all", byID["12"].Across.Vars[0].MaxInFlight, &concourse.MaxInFlightConfig{All: true}},
		{"across max_in_flight n", byID["12"].Across.Vars[1].MaxInFlight, &concourse.MaxInFlightConfig{Limit: 2}},
		{"across values", byID["12"].Across.Vars[1].Values, []any{1.0, 2.0, map[string]any{"k": "v"}}},
		{"artifact input", byID["17"].ArtifactInput, &concourse.ArtifactInputPlan{ArtifactID: 42, Name: "in"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.got, cmp.AllowUnexported(concourse.CheckEvery{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}

	// The substep template is a plan in a string; it decodes on its own.
	var sub concourse.Plan
	if err := json.Unmarshal([]byte(byID["12"].Across.SubStepTemplate), &sub); err != nil {
		t.Fatalf("decoding the substep template: %v", err)
	}
	if sub.Task == nil || sub.Task.Name != "deploy-((.:env))" {
		t.Errorf("substep template decoded to %+v, want the deploy task", sub)
	}
}

// chain lists the Go types of a step's config from the outermost modifier to the core step.
func chain(cfg concourse.StepConfig) []string {
	var out []string
	for cfg != nil {
		out = append(out, reflect.TypeOf(cfg).Elem().Name())
		w, ok := cfg.(concourse.StepWrapper)
		if !ok {
			break
		}
		cfg = w.Unwrap()
	}
	return out
}

// core returns the step at the bottom of a chain of modifiers.
func core(cfg concourse.StepConfig) concourse.StepConfig {
	for {
		w, ok := cfg.(concourse.StepWrapper)
		if !ok {
			return cfg
		}
		cfg = w.Unwrap()
	}
}

func TestStepEnvelope(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		// chain is the wrapping order, outermost first.
		chain []string
		// want is the marshalled step when it is not the input itself.
		want string
		// check looks at the parsed step further.
		check func(t *testing.T, s concourse.Step)
	}{
		{
			// attempts wraps the task and hooks wrap the retry, in Concourse's precedence
			// order; timeout on a task is the task's own field, not a modifier.
			name: "task with attempts, timeout and hooks",
			yaml: `
task: unit
file: ci/unit.yml
attempts: 2
timeout: 1m
ensure: {put: notify}
on_failure: {task: cleanup, file: ci/cleanup.yml}
`,
			chain: []string{"EnsureStep", "OnFailureStep", "RetryStep", "TaskStep"},
			check: func(t *testing.T, s concourse.Step) {
				task := core(s.Config).(*concourse.TaskStep)
				if task.Timeout != "1m" {
					t.Errorf("task timeout %q, want 1m", task.Timeout)
				}
				retry := s.Config.(concourse.StepWrapper).Unwrap().(concourse.StepWrapper).Unwrap().(*concourse.RetryStep)
				if retry.Attempts != 2 {
					t.Errorf("attempts %d, want 2", retry.Attempts)
				}
			},
		},
		{
			name:  "every hook",
			yaml:  `{get: repo, on_success: {task: a}, on_failure: {task: b}, on_error: {task: c}, on_abort: {task: d}, ensure: {task: e}}`,
			chain: []string{"EnsureStep", "OnErrorStep", "OnAbortStep", "OnFailureStep", "OnSuccessStep", "GetStep"},
		},
		{
			// On a composite step, timeout is a modifier that wraps it.
			name:  "timeout wraps do",
			yaml:  `{do: [{get: repo}, {task: unit}], timeout: 1m}`,
			chain: []string{"TimeoutStep", "DoStep"},
			check: func(t *testing.T, s concourse.Step) {
				if d := s.Config.(*concourse.TimeoutStep).Duration; d != "1m" {
					t.Errorf("duration %q, want 1m", d)
				}
			},
		},
		{
			name:  "attempts and timeout on do",
			yaml:  `{do: [{get: repo}], attempts: 3, timeout: 5m}`,
			chain: []string{"RetryStep", "TimeoutStep", "DoStep"},
		},
		{
			name:  "timeout wraps try",
			yaml:  `{try: {task: flaky, file: f.yml}, timeout: 5m}`,
			chain: []string{"TimeoutStep", "TryStep"},
		},
		{
			name:  "across on a task",
			yaml:  `{task: deploy, file: d.yml, across: [{var: env, values: [dev, prod], max_in_flight: all}], fail_fast: true, attempts: 2}`,
			chain: []string{"AcrossStep", "RetryStep", "TaskStep"},
			check: func(t *testing.T, s concourse.Step) {
				a := s.Config.(*concourse.AcrossStep)
				want := []concourse.AcrossVarConfig{{Var: "env", Values: []any{"dev", "prod"}, MaxInFlight: &concourse.MaxInFlightConfig{All: true}}}
				if diff := cmp.Diff(want, a.Vars); diff != "" {
					t.Errorf("across vars (-want +got):\n%s", diff)
				}
				if !a.FailFast {
					t.Error("fail_fast lost")
				}
			},
		},
		{
			name:  "in_parallel map form",
			yaml:  `{in_parallel: {steps: [{get: a}, {get: b}], limit: 1, fail_fast: true}, on_success: {task: t}}`,
			chain: []string{"OnSuccessStep", "InParallelStep"},
			check: func(t *testing.T, s concourse.Step) {
				ip := core(s.Config).(*concourse.InParallelStep)
				if len(ip.Config.Steps) != 2 || ip.Config.Limit != 1 || !ip.Config.FailFast {
					t.Errorf("in_parallel config %+v", ip.Config)
				}
			},
		},
		{
			// The list form is written back in the map form, which means the same.
			name:  "in_parallel list form",
			yaml:  `{in_parallel: [{get: a}, {put: b}]}`,
			chain: []string{"InParallelStep"},
			want:  `{"in_parallel": {"steps": [{"get": "a"}, {"put": "b"}]}}`,
		},
		{
			// aggregate, removed in Concourse v7, is read as the in_parallel it became.
			name:  "aggregate",
			yaml:  `{aggregate: [{get: a}, {get: b}], timeout: 1h}`,
			chain: []string{"TimeoutStep", "InParallelStep"},
			want:  `{"in_parallel": {"steps": [{"get": "a"}, {"get": "b"}]}, "timeout": "1h"}`,
			check: func(t *testing.T, s concourse.Step) {
				if !s.Aggregate {
					t.Error("Aggregate not set")
				}
			},
		},
		{
			name:  "get with every field",
			yaml:  `{get: src, resource: repo, version: every, params: {depth: 1}, passed: [unit], trigger: true, tags: [linux], timeout: 10m}`,
			chain: []string{"GetStep"},
		},
		{
			name:  "put with every field",
			yaml:  `{put: out, resource: release, params: {file: x}, inputs: [out], tags: [linux], get_params: {skip: true}, timeout: 1m, no_get: true}`,
			chain: []string{"PutStep"},
		},
		{
			name: "task with every field",
			yaml: `
task: unit
privileged: true
hermetic: true
config:
  platform: linux
  rootfs_uri: docker:///busybox
  run: {path: sh, args: [-c, "true"]}
container_limits: {cpu: 512, memory: 1024}
params: {A: "1"}
vars: {v: x}
tags: [linux]
input_mapping: {in: repo}
output_mapping: {out: result}
image: img
timeout: 1m
`,
			chain: []string{"TaskStep"},
		},
		{
			name:  "set_pipeline, load_var and run",
			yaml:  `{do: [{set_pipeline: child, file: c.yml, team: main, vars: {a: 1}, var_files: [v.yml], instance_vars: {b: main}}, {load_var: v, file: f, format: json, reveal: true}, {run: go, type: proto, params: {k: v}, privileged: true, tags: [t], container_limits: {cpu: 1}, timeout: 1m}]}`,
			chain: []string{"DoStep"},
		},
		{
			// put comes before get in Concourse's precedence: the get key is left over, an
			// unknown field for validation to report.
			name:  "get and put in one step",
			yaml:  `{get: a, put: b}`,
			chain: []string{"PutStep"},
			check: func(t *testing.T, s concourse.Step) {
				if got := core(s.Config).(*concourse.PutStep).Name; got != "b" {
					t.Errorf("put name %q, want b", got)
				}
				var keys []string
				for k := range s.UnknownFields {
					keys = append(keys, k)
				}
				if diff := cmp.Diff([]string{"get"}, keys); diff != "" {
					t.Errorf("unknown fields (-want +got):\n%s", diff)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := yamlToJSON(t, tc.yaml)
			var s concourse.Step
			if err := json.Unmarshal(in, &s); err != nil {
				t.Fatalf("decoding: %v", err)
			}
			if diff := cmp.Diff(tc.chain, chain(s.Config)); diff != "" {
				t.Errorf("wrapping order (-want +got):\n%s", diff)
			}
			out, err := json.Marshal(s)
			if err != nil {
				t.Fatalf("encoding: %v", err)
			}
			want := in
			if tc.want != "" {
				want = []byte(tc.want)
			}
			if diff := cmp.Diff(semanticJSON(t, want), semanticJSON(t, out)); diff != "" {
				t.Errorf("marshalled step (-want +got):\n%s", diff)
			}
			if tc.check != nil {
				tc.check(t, s)
			}
		})
	}
}

func TestStepEnvelopeErrors(t *testing.T) {
	tests := []struct {
		name string
		json string
		want error
	}{
		{"empty map", `{}`, concourse.ErrNoStepConfigured},
		{"unknown keys only", `{"nope": 1}`, concourse.ErrNoStepConfigured},
		{"modifiers only", `{"attempts": 2, "ensure": {"task": "t", "file": "f"}}`, concourse.ErrNoCoreStepDeclared},
		{"timeout only", `{"timeout": "1m"}`, concourse.ErrNoCoreStepDeclared},
		{"across only", `{"across": [{"var": "v", "values": [1]}]}`, concourse.ErrNoCoreStepDeclared},
		// A nested step's error keeps its identity under the path that locates it.
		{"empty hook", `{"task": "t", "file": "f", "ensure": {}}`, concourse.ErrNoStepConfigured},
		{"modifiers only in in_parallel", `{"in_parallel": [{"get": "a"}, {"attempts": 2}]}`, concourse.ErrNoCoreStepDeclared},
		{"modifiers only in do", `{"do": [{"timeout": "1m"}]}`, concourse.ErrNoCoreStepDeclared},
		// A misspelt step type keeps the identity of the error it causes.
		{"misspelt step type", `{"tsk": "t", "file": "f"}`, concourse.ErrNoStepConfigured},
		{"misspelt step type with modifiers", `{"attempts": 2, "gett": "r"}`, concourse.ErrNoCoreStepDeclared},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var s concourse.Step
			err := json.Unmarshal([]byte(tc.json), &s)
			if !errors.Is(err, tc.want) {
				t.Errorf("got error %v, want %v", err, tc.want)
			}

		})
	}
}

// scalarCase is one JSON value decoded into a custom scalar: what it decodes to, and what
// it encodes back to (the input itself unless encoded says otherwise).
type scalarCase[T any] struct {
	name    string
	in      string
	want    T
	encoded string
	// err is a part of the decoding error's message; empty when decoding succeeds.
	err string
	// skip names a known bug in the concourse package that this case shows.
	skip string
}

// runScalarCases decodes each case into a T, compares it, and checks the encoding.
func runScalarCases[T any](t *testing.T, cases []scalarCase[T], opts ...cmp.Option) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.skip != "" {
				t.Skip("known bug: " + tc.skip)
			}
			var got T
			err := json.Unmarshal([]byte(tc.in), &got)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("decoding %s: got error %v, want one containing %q", tc.in, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("decoding %s: %v", tc.in, err)
			}
			if diff := cmp.Diff(tc.want, got, opts...); diff != "" {
				t.Errorf("decoded (-want +got):\n%s", diff)
			}
			out, err := json.Marshal(got)
			if err != nil {
				t.Fatalf("encoding: %v", err)
			}
			want := tc.in
			if tc.encoded != "" {
				want = tc.encoded
			}
			if diff := cmp.Diff(semanticJSON(t, []byte(want)), semanticJSON(t, out)); diff != "" {
				t.Errorf("encoded (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTags(t *testing.T) {
	runScalarCases(t, []scalarCase[concourse.Tags]{
		{name: "kept", in: `["linux","large"]`, want: concourse.Tags{"linux", "large"}},
		{name: "empty strings dropped", in: `["","linux","",""]`, want: concourse.Tags{"linux"}, encoded: `["linux"]`},
		{name: "only empty strings", in: `[""]`, want: nil, encoded: `null`},
		{name: "not a list", in: `"linux"`, err: "cannot unmarshal"},
	})
}

func TestVersionConfig(t *testing.T) {
	runScalarCases(t, []scalarCase[concourse.VersionConfig]{
		{name: "every", in: `"every"`, want: concourse.VersionConfig{Every: true}},
		{name: "latest", in: `"latest"`, want: concourse.VersionConfig{Latest: true}},
		{name: "pinned", in: `{"ref":"abc","path":"x"}`, want: concourse.VersionConfig{Pinned: concourse.Version{"ref": "abc", "path": "x"}}},
		{name: "non-string value", in: `{"ref":1}`, err: `the value of "ref" must be a string, not a number`},
		{name: "nested value", in: `{"ref":{"a":"b"}}`, err: "must be a string, not a map"},
		{name: "unknown word", in: `"newest"`, err: `invalid version "newest"`},
		{name: "list", in: `["every"]`, err: "invalid version"},
	})
}

func TestInputsConfig(t *testing.T) {
	runScalarCases(t, []scalarCase[concourse.InputsConfig]{
		{name: "all", in: `"all"`, want: concourse.InputsConfig{All: true}},
		{name: "detect", in: `"detect"`, want: concourse.InputsConfig{Detect: true}},
		{name: "names trimmed", in: `[" repo ","out\n"]`, want: concourse.InputsConfig{Specified: []string{"repo", "out"}}, encoded: `["repo","out"]`},
		{name: "empty list", in: `[]`, want: concourse.InputsConfig{Specified: []string{}}},
		{name: "unknown word", in: `"some"`, err: `invalid inputs "some"`},
		{name: "number", in: `1`, err: "invalid inputs"},
	})
}

func TestMaxInFlightConfig(t *testing.T) {
	runScalarCases(t, []scalarCase[concourse.MaxInFlightConfig]{
		{name: "number", in: `3`, want: concourse.MaxInFlightConfig{Limit: 3}},
		{name: "all", in: `"all"`, want: concourse.MaxInFlightConfig{All: true}},
		{name: "other word", in: `"many"`, err: `invalid max_in_flight "many"`},
		{name: "fraction", in: `1.5`, err: "invalid max_in_flight"},
	})

	tests := []struct {
		name   string
		config *concourse.MaxInFlightConfig
		values int
		want   int
	}{
		{"unset runs one at a time", nil, 5, 1},
		{"all runs every value at once", &concourse.MaxInFlightConfig{All: true}, 5, 5},
		{"a number is the limit", &concourse.MaxInFlightConfig{Limit: 2}, 5, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.config.EffectiveLimit(tc.values); got != tc.want {
				t.Errorf("EffectiveLimit(%d) = %d, want %d", tc.values, got, tc.want)
			}
		})
	}
}

func TestCheckEvery(t *testing.T) {
	// CheckEvery is written as Concourse writes it, the interval as Go prints a duration,
	// whatever text it was read from.
	runScalarCases(t, []scalarCase[concourse.CheckEvery]{
		{name: "duration", in: `"10m"`, want: concourse.CheckEvery{Interval: 10 * time.Minute}, encoded: `"10m0s"`},
		{name: "compound duration", in: `"1h30m"`, want: concourse.CheckEvery{Interval: 90 * time.Minute}, encoded: `"1h30m0s"`},
		{name: "never", in: `"never"`, want: concourse.CheckEvery{Never: true}},
		{
			// The ATC writes a CheckEvery it has no value for as "" and reads "" back as
			// the default interval.
			name: "empty string is the default", in: `""`, want: concourse.CheckEvery{},
		},
		{name: "not a duration", in: `"soon"`, err: `invalid check_every "soon"`},
		{name: "number", in: `60`, err: "invalid check_every"},
	})

	tests := []struct {
		name  string
		value concourse.CheckEvery
		want  string
		skip  string
	}{
		{name: "never", value: concourse.CheckEvery{Never: true}, want: `"never"`},
		{name: "interval", value: concourse.CheckEvery{Interval: time.Minute}, want: `"1m0s"`},
		{
			name: "zero", value: concourse.CheckEvery{}, want: `""`,
		},
	}
	for _, tc := range tests {
		t.Run("marshal "+tc.name, func(t *testing.T) {
			if tc.skip != "" {
				t.Skip("known bug: " + tc.skip)
			}
			got, err := json.Marshal(tc.value)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestTaskEnv(t *testing.T) {
	runScalarCases(t, []scalarCase[concourse.TaskEnv]{
		{
			name: "every JSON type",
			in:   `{"S":"text","F":1.5,"I":10,"E":1e3,"BIG":12345678901234567890,"T":true,"FALSE":false,"O":{"b":[1,2.50],"a":"x"},"L":["a",1],"N":null}`,
			want: concourse.TaskEnv{
				"S": "text", "F": "1.5", "I": "10", "E": "1e3", "BIG": "12345678901234567890",
				"T": "true", "FALSE": "false", "O": `{"a":"x","b":[1,2.50]}`, "L": `["a",1]`, "N": "",
			},
			encoded: `{"S":"text","F":"1.5","I":"10","E":"1e3","BIG":"12345678901234567890","T":"true","FALSE":"false","O":"{\"a\":\"x\",\"b\":[1,2.50]}","L":"[\"a\",1]","N":""}`,
		},
		{name: "not a map", in: `["A"]`, err: "json: cannot unmarshal array into Go value of type concourse.TaskEnv"},
	})
}

func TestContainerLimits(t *testing.T) {
	limits := func(cpu, mem uint64) concourse.ContainerLimits {
		c, m := concourse.CPULimit(cpu), concourse.MemoryLimit(mem)
		return concourse.ContainerLimits{CPU: &c, Memory: &m}
	}
	// Every unit is binary, as in Concourse: 1KB is 1024 bytes.
	runScalarCases(t, []scalarCase[concourse.ContainerLimits]{
		{name: "numbers", in: `{"cpu":512,"memory":1073741824}`, want: limits(512, 1<<30)},
		{name: "numeric strings", in: `{"cpu":"512","memory":"1024"}`, want: limits(512, 1024), encoded: `{"cpu":512,"memory":1024}`},
		{name: "KB", in: `{"cpu":1,"memory":"1KB"}`, want: limits(1, 1024), encoded: `{"cpu":1,"memory":1024}`},
		{name: "K", in: `{"cpu":1,"memory":"4k"}`, want: limits(1, 4096), encoded: `{"cpu":1,"memory":4096}`},
		{name: "Mi", in: `{"cpu":1,"memory":"512Mi"}`, want: limits(1, 512<<20), encoded: `{"cpu":1,"memory":536870912}`},
		{name: "MB", in: `{"cpu":1,"memory":"512MB"}`, want: limits(1, 512<<20), encoded: `{"cpu":1,"memory":536870912}`},
		{name: "G", in: `{"cpu":1,"memory":"1G"}`, want: limits(1, 1<<30), encoded: `{"cpu":1,"memory":1073741824}`},
		{name: "GiB", in: `{"cpu":1,"memory":"2GiB"}`, want: limits(1, 2<<30), encoded: `{"cpu":1,"memory":2147483648}`},
		{name: "integral float", in: `{"cpu":2.0,"memory":0}`, want: limits(2, 0), encoded: `{"cpu":2,"memory":0}`},
		{name: "unset", in: `{}`, want: concourse.ContainerLimits{}},
		{name: "unknown unit", in: `{"memory":"1TB"}`, err: `invalid memory limit "1TB"`},
		{name: "fractional size", in: `{"memory":"1.5G"}`, err: `invalid memory limit "1.5G"`},
		{name: "negative memory", in: `{"memory":-1}`, err: "invalid memory limit"},
		{name: "fractional cpu", in: `{"cpu":1.5}`, err: "invalid cpu limit"},
		{name: "negative cpu", in: `{"cpu":"-2"}`, err: "invalid cpu limit"},
	})

	for _, tc := range []struct {
		in   string
		want concourse.MemoryLimit
	}{
		{"1KB", 1 << 10}, {"1kb", 1 << 10}, {"1Ki", 1 << 10}, {"3M", 3 << 20}, {"1GB", 1 << 30}, {" 7 ", 7},
	} {
		t.Run("ParseMemoryLimit "+tc.in, func(t *testing.T) {
			got, err := concourse.ParseMemoryLimit(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("ParseMemoryLimit(%q) = %d, want %d", tc.in, got, tc.want)
			}
		})
	}
}

// TestStepErrorPaths checks that an error in a nested step names where it is, relative to
// the step being decoded.
func TestStepErrorPaths(t *testing.T) {
	tests := []struct {
		name string
		json string
		want string
		skip string
	}{
		{"in_parallel item", `{"in_parallel": [{"get": "a"}, {"attempts": 2}]}`, "in_parallel[1]: " + concourse.ErrNoCoreStepDeclared.Error(), ""},
		{"in_parallel steps item", `{"in_parallel": {"steps": [{}]}}`, "in_parallel.steps[0]: " + concourse.ErrNoStepConfigured.Error(), ""},
		{"do item", `{"do": [{"get": "a"}, {"timeout": "1m"}]}`, "do[1]: " + concourse.ErrNoCoreStepDeclared.Error(), ""},
		{
			"hook", `{"task": "t", "file": "f", "ensure": {}}`, "ensure: " + concourse.ErrNoStepConfigured.Error(), "",
		},
		{
			"try", `{"try": {"timeout": "1m"}}`, "try: " + concourse.ErrNoCoreStepDeclared.Error(), "",
		},
		{"misspelt step type", `{"tsk": "t", "file": "f"}`, `tsk: unknown step type "tsk" (did you mean "task"?)`, ""},
		{"misspelt step type in do", `{"do": [{"get": "a"}, {"gte": "b"}]}`, `do[1].gte: unknown step type "gte" (did you mean "get"?)`, ""},
		{"misspelt step type in a hook", `{"get": "a", "ensure": {"putt": "b"}}`, `ensure.putt: unknown step type "putt" (did you mean "put"?)`, ""},
		{"no key near a step type", `{"nope": 1, "file": "f"}`, concourse.ErrNoStepConfigured.Error(), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.skip != "" {
				t.Skip("known bug: " + tc.skip)
			}
			var s concourse.Step
			err := json.Unmarshal([]byte(tc.json), &s)
			if err == nil {
				t.Fatal("decoding succeeded, want an error")
			}
			if diff := cmp.Diff(tc.want, err.Error()); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}
