package concourse

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/concourse-tekton/concourse-tekton/concourse/vars"
	"github.com/concourse-tekton/concourse-tekton/internal/testcorpus"
)

// The direct decoder must give what the JSON path gives, whenever it gives anything.

// decodeBoth decodes n both ways into new values of T. It fails the test when the direct
// decoder decoded n to something else than the JSON path, or decoded what the JSON path
// rejects; it reports whether the direct decoder took n, and whether the JSON path did.
func decodeBoth[T any](t *testing.T, p *Pipeline, n *node, path Path) (direct, valid bool) {
	t.Helper()
	d := new(T)
	ok := decodeDirect(n, d)
	viaJSON := new(T)
	diags := p.decodeJSON(n, path, viaJSON)
	if !ok {
		return false, len(diags) == 0
	}
	if len(diags) > 0 {
		t.Errorf("%s: %s: decoded directly, but the JSON path says %v", p.File, path, diags)
		return true, false
	}
	if !reflect.DeepEqual(d, viaJSON) {
		t.Errorf("%s: %s: decoded directly as\n%#v\nthrough JSON as\n%#v", p.File, path, d, viaJSON)
	}
	return true, true
}

// listDecoders decode an element of each top-level list both ways (decodeBoth).
var listDecoders = map[string]func(*testing.T, *Pipeline, *node, Path) (bool, bool){
	"groups":         decodeBoth[GroupConfig],
	"var_sources":    decodeBoth[VarSourceConfig],
	"resources":      decodeBoth[ResourceConfig],
	"resource_types": decodeBoth[ResourceType],
	"prototypes":     decodeBoth[Prototype],
	"jobs":           decodeBoth[JobConfig],
}

// decodeTree decodes every value of a pipeline's tree that decode() decodes, both ways,
// and counts those the JSON path accepts (all) and those of them the direct decoder took,
// by top-level key.
func decodeTree(t *testing.T, p *Pipeline, took, all map[string]int) {
	t.Helper()
	if p.tree.kind != mapNode {
		return
	}
	for _, e := range p.tree.entries {
		decode := listDecoders[e.key]
		for i, item := range listItems(e.value) {
			if decode == nil {
				break
			}
			count(e.key, took, all)(decode(t, p, item, Path{Key(e.key), Named(i, nameOf(item))}))
		}
		if e.key == "display" {
			count(e.key, took, all)(decodeBoth[*DisplayConfig](t, p, e.value, Path{Key(e.key)}))
		}
	}
}

// count counts a value under key, once decodeBoth said what became of it.
func count(key string, took, all map[string]int) func(direct, valid bool) {
	return func(direct, valid bool) {
		if valid {
			all[key]++
		}
		if direct && valid {
			took[key]++
		}
	}
}

func TestDecodeDirectCorpus(t *testing.T) {
	took, all := map[string]int{}, map[string]int{}
	for _, file := range testcorpus.Pipelines(t) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		tree, _ := parseTree(filepath.Base(file), data)
		if tree == nil {
			continue
		}
		decodeTree(t, &Pipeline{File: filepath.Base(file), tree: tree}, took, all)
	}
	tasks, tasksTook := 0, 0
	for _, file := range testcorpus.Tasks(t) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		tree, _ := parseTree(filepath.Base(file), data)
		if tree == nil || tree.kind != mapNode {
			continue
		}
		tasks++
		if direct, _ := decodeBoth[TaskConfig](t, &Pipeline{File: filepath.Base(file), tree: tree}, tree, nil); direct {
			tasksTook++
		}
	}
	t.Logf("decoded directly: %v of %v; task files %d of %d", took, all, tasksTook, tasks)
	// The direct decoder is worth having only if it takes nearly everything real: every
	// value the corpus has that it leaves to the JSON path costs the JSON path's time.
	for key, n := range all {
		if took[key]*100 < n*95 {
			t.Errorf("the direct decoder took %d of the corpus's %d %s, fewer than 95%%", took[key], n, key)
		}
	}
	if tasksTook*100 < tasks*95 {
		t.Errorf("the direct decoder took %d of the corpus's %d task files, fewer than 95%%", tasksTook, tasks)
	}
}

// TestDecodeDirectCases holds the direct decoder to the JSON path on the cases where the
// two could part: JSON's quirks (null, empty lists, keys that differ in case), the
// configs' own decoders (tags, params, args, in_parallel's two forms, versions), and
// values only the JSON path may read (text from numbers, unknown step keys).
func TestDecodeDirectCases(t *testing.T) {
	for _, tc := range []struct {
		name   string
		yaml   string
		direct bool // whether the direct decoder takes it
	}{
		{"plain", "jobs: [{name: j, public: true, max_in_flight: 2, plan: [{get: r, trigger: true, passed: [a]}]}]", true},
		{"nulls", "jobs: [{name: j, old_name: ~, public: null, tags: null, plan: null, on_success: null}]", true},
		{"empty lists", "jobs: [{name: j, serial_groups: [], tags: [], plan: []}]", true},
		{"empty tags dropped", "jobs: [{name: j, tags: ['', a, ~], plan: [{task: t, tags: [''], file: f}]}]", true},
		{"hooks", "jobs: [{name: j, plan: [{task: t, file: f, on_failure: {put: p, params: {a: 1}}, ensure: {do: []}}], ensure: {get: r}}]", true},
		{"modifiers", "jobs: [{name: j, plan: [{across: [{var: v, values: [1, 2.5, x, {a: b}], max_in_flight: all}], fail_fast: true, timeout: 1h, attempts: 3, do: [{load_var: v, file: f}]}]}]", true},
		{"in_parallel list", "jobs: [{name: j, plan: [{in_parallel: [{get: a}, {get: b}]}]}]", true},
		{"in_parallel map", "jobs: [{name: j, plan: [{in_parallel: {steps: [{get: a}], limit: 2, fail_fast: true}}]}]", true},
		{"in_parallel null", "jobs: [{name: j, plan: [{in_parallel: ~}]}]", true},
		{"in_parallel empty map", "jobs: [{name: j, plan: [{in_parallel: {}}]}]", true},
		{"task config", "jobs: [{name: j, plan: [{task: t, params: {A: 1, B: true, C: ~, D: x, E: 1.5}, config: {platform: linux, image_resource: {type: registry-image, source: {repository: r, tag: 1}}, params: {X: 010}, run: {path: p, args: ['1', 'true', ~, -x]}, inputs: [{name: i, optional: true}], caches: [{path: c}]}}]}]", true},
		{"versions", "jobs: [{name: j, plan: [{get: a, version: every}, {get: b, version: {ref: x}}, {put: c, inputs: [a, ' b'], get_params: {d: [1]}}]}]", true},
		{"resources", "resources: [{name: r, type: t, source: {a: [1, {b: ~}], c: 18446744073709551615}, check_every: 1m, version: {v: x}, tags: [a]}]\nresource_types: [{name: t, type: registry-image, source: {}, defaults: {x: 1}, privileged: true, check_every: never}]", true},
		{"var sources and groups", "var_sources: [{name: v, type: vault, config: {url: u, n: 1}}]\ngroups: [{name: g, jobs: [a, b]}]\ndisplay: {background_image: x}", true},
		{"prototypes", "prototypes: [{name: p, type: registry-image, source: {repository: r}}]", true},
		{"set_pipeline", "jobs: [{name: j, plan: [{set_pipeline: p, file: f, vars: {a: 1}, var_files: [x], instance_vars: {b: [1]}}]}]", true},
		{"run step", "jobs: [{name: j, plan: [{run: go, type: p, params: {a: 1}, privileged: true}]}]", true},
		{"try", "jobs: [{name: j, plan: [{try: {get: r}, timeout: 5m}]}]", true},
		{"retention", "jobs: [{name: j, build_log_retention: {builds: 3, days: 2}, build_logs_to_retain: 4, plan: []}]", true},
		{"container limits", "jobs: [{name: j, plan: [{task: t, file: f, container_limits: {cpu: 512, memory: 1GB}}]}]", true},

		{"number for a string", "jobs: [{name: 1, plan: []}]", false},
		{"bool for a string", "resources: [{name: r, type: t, source: {}, icon: yes}]", false},
		{"number in a version", "jobs: [{name: j, plan: [{get: a, version: {ref: 1}}]}]", false},
		{"key in another case", "jobs: [{Name: j, plan: []}]", false},
		{"step key in another case", "jobs: [{name: j, plan: [{get: a, Trigger: true}]}]", false},
		{"unknown step key", "jobs: [{name: j, plan: [{get: a, nope: 1}]}]", false},
		{"unknown task config key", "jobs: [{name: j, plan: [{task: t, config: {platform: linux, run: {path: p}, ouputs: []}}]}]", false},
		{"no core step", "jobs: [{name: j, plan: [{timeout: 1h}]}]", false},
		{"aggregate", "jobs: [{name: j, plan: [{aggregate: [{get: a}], timeout: 1h}]}]", true},
		{"aggregate and in_parallel", "jobs: [{name: j, plan: [{aggregate: [{get: a}], in_parallel: [{get: b}]}]}]", false},
		{"map for a list", "jobs: [{name: j, serial_groups: {a: b}, plan: []}]", false},
		{"float for an int", "jobs: [{name: j, max_in_flight: 1.5, plan: []}]", false},
		{"map param of a task", "jobs: [{name: j, plan: [{task: t, file: f, params: {A: {b: c, a: [1, 2.50, '<&>', ~, no]}, B: [x]}}]}]", true},
		{"number arg", "jobs: [{name: j, plan: [{task: t, config: {platform: linux, run: {path: p, args: [1]}}}]}]", false},
		{"map arg", "jobs: [{name: j, plan: [{task: t, config: {platform: linux, run: {path: p, args: [{a: b}]}}}]}]", false},
		{"infinity", "resources: [{name: r, type: t, source: {a: .inf}}]", false},
		{"bad version", "jobs: [{name: j, plan: [{get: a, version: newest}]}]", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tree, diags := parseTree("case.yml", []byte(tc.yaml))
			if tree == nil {
				t.Fatalf("parse: %v", diags)
			}
			took, all := map[string]int{}, map[string]int{}
			decodeTree(t, &Pipeline{File: "case.yml", tree: tree}, took, all)
			var n, k int
			for key := range all {
				n += all[key]
				k += took[key]
			}
			// A value the JSON path refuses is not counted: the direct decoder must not
			// take it (decodeBoth), and the case wants it not to.
			if got := n > 0 && k == n; got != tc.direct {
				t.Errorf("the direct decoder took %d of %d values; want all: %v", k, n, tc.direct)
			}
		})
	}
}

// FuzzDecodeDirect: whatever the YAML, a value the direct decoder takes is the value the
// JSON path gives.
func FuzzDecodeDirect(f *testing.F) {
	for _, s := range []string{
		"jobs: [{name: j, plan: [{get: r, trigger: true}]}]",
		"jobs: [{name: j, plan: [{in_parallel: {steps: [{task: t, file: f}], limit: 1}}], on_failure: {put: p}}]",
		"jobs: [{name: j, plan: [{across: [{var: v, values: [1]}], do: [{try: {get: r}}]}]}]",
		"resources: [{name: r, type: t, source: {a: [1, 2.5, ~, yes]}, check_every: 10m}]",
		"jobs: [{name: j, plan: [{task: t, params: {A: 1}, config: {platform: linux, run: {path: p, args: [1, x]}}}]}]",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<14 {
			return
		}
		tree, _ := parseTree("fuzz.yml", data)
		if tree == nil {
			return
		}
		p := &Pipeline{File: "fuzz.yml", tree: tree}
		decodeTree(t, p, map[string]int{}, map[string]int{})
		if tree.kind == mapNode {
			decodeBoth[TaskConfig](t, p, tree, nil)
		}
	})
}

// TestDecodeDirectDuplicateKeys: a key that interpolation makes twice (the YAML refuses
// it written twice) is left to the JSON path, in a step and in a job.
func TestDecodeDirectDuplicateKeys(t *testing.T) {
	for _, doc := range []string{
		"jobs: [{name: j, plan: [{get: a, trigger: false, ((k)): true}]}]",
		"jobs: [{name: j, plan: [{task: t, file: f, ((t)): g}]}]",
		"jobs: [{name: j, plan: [{aggregate: [{get: a}], ((p)): [{get: b}]}]}]",
		"jobs: [{name: j, ((n)): k, plan: []}]",
	} {
		tree, diags := parseTree("dup.yml", []byte(doc))
		if tree == nil {
			t.Fatalf("%s: %v", doc, diags)
		}
		p := &Pipeline{File: "dup.yml", tree: tree}
		static := vars.StaticVariables{"k": "trigger", "t": "task", "p": "aggregate", "n": "name"}
		if d := p.interpolate(tree, nil, static); len(d) > 0 {
			t.Fatalf("%s: %v", doc, d)
		}
		took, all := map[string]int{}, map[string]int{}
		decodeTree(t, p, took, all)
		if took["jobs"] != 0 {
			t.Errorf("%s: the direct decoder took a job with a key given twice", doc)
		}
	}
}

// TestTreeFacts: the tree's facts see every string the walks for "{{" and "((" would
// look at (values, keys, what an alias or a merge key brings), so that skipping a walk
// for a tree without any changes nothing.
func TestTreeFacts(t *testing.T) {
	for _, tc := range []struct {
		yaml            string
		templates, vars bool
	}{
		{"a: b\nc: [1, true, x]\n", false, false},
		{"a: 'x {{y}}'\n", true, false},
		{"a: '((y))'\n", false, true},
		{"((k)): v\n", false, true},
		{"a: &x {b: '((y))'}\nc: *x\n", false, true},
		{"base: &b {k: 'say {{it}}'}\nm: {<<: *b}\n", true, false},
		{"a: \"\\x7b\\x7bhex}}\"\n", true, false},
		{"'{{k}}': v\n", false, false}, // keys are not templates
	} {
		_, facts, diags := parseTreeFacts("facts.yml", []byte(tc.yaml))
		if len(diags.Errors()) > 0 {
			t.Fatalf("%q: %v", tc.yaml, diags)
		}
		if facts.templates != tc.templates || facts.vars != tc.vars {
			t.Errorf("%q: templates %v vars %v, want %v %v", tc.yaml, facts.templates, facts.vars, tc.templates, tc.vars)
		}
	}
	// What the walks report is still reported.
	_, diags := ParsePipeline("p.yml", []byte("jobs:\n- name: j\n  plan:\n  - task: t\n    params: {A: 'x {{old}}'}\n    config: {platform: linux, rootfs_uri: docker:///b, run: {path: x}}\n"), nil)
	if errs := diags.Errors(); len(errs) != 1 || !strings.Contains(errs[0].Message, "old-style template {{old}}") {
		t.Errorf("an old-style template: %v", diags)
	}
}
