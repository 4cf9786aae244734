package concourse_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/vars"
)

// addCorpusSeeds seeds a fuzz target with the corpus pipelines, when the corpus is there.
func addCorpusSeeds(f *testing.F) {
	f.Helper()
	wd, _ := os.Getwd()
	dir := filepath.Join(wd, "..", "..", "shared", "corpus", "pipelines")
	files, _ := filepath.Glob(filepath.Join(dir, "*.yml"))
	yaml, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	for _, file := range append(files, yaml...) {
		// Small files only: the fuzzer mutates and minimises every input, and big ones
		// make each round slow without adding variety.
		if data, err := os.ReadFile(file); err == nil && len(data) <= 2048 {
			f.Add(data)
		}
	}
	f.Add([]byte(minimal))
	f.Add([]byte("a: &a [*a]"))
	f.Add([]byte("x: {{y}}"))
	f.Add([]byte("jobs: [{name: j, plan: [{across: [{var: v, values: [1]}], do: [{try: {get: r}}]}]}]"))
}

// FuzzParsePipeline: any input gives diagnostics or a pipeline, never a panic or a hang.
func FuzzParsePipeline(f *testing.F) {
	addCorpusSeeds(f)
	static := vars.StaticVariables{"x": "1", "m": map[string]any{"k": "v"}}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		p, diags := concourse.ParsePipeline("fuzz.yml", data, static)
		for _, d := range diags {
			if d.Message == "" {
				t.Errorf("empty diagnostic %#v", d)
			}
		}
		if p != nil && len(diags.Errors()) == 0 {
			for i := range p.Config.Jobs {
				_ = p.Config.Jobs[i].StepConfig()
			}
		}
	})
}

// FuzzParseTaskConfig: any task file gives a config or an error, never a panic.
func FuzzParseTaskConfig(f *testing.F) {
	f.Add([]byte("platform: linux\nrun: {path: x, args: [1, true]}\n"))
	f.Add([]byte("container_limits: {memory: 1GB, cpu: 1}\nparams: {a: [1]}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = concourse.ParseTaskConfig(data)
	})
}
