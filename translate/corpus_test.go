package translate_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/planner"
	"github.com/concourse-tekton/concourse-tekton/internal/testcorpus"
	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/translate"
)

// etcdLimit is the largest object etcd stores (1.5 MiB).
const etcdLimit = 1536 * 1024

// TestCorpusConvert compiles every job of every valid corpus pipeline and validates what it
// emits with Tekton's own rules. Jobs that cannot be converted are listed with the reason.
func TestCorpusConvert(t *testing.T) {
	files := testcorpus.Pipelines(t)
	var jobs, converted int
	var unsupported []string
	largest, largestName := 0, ""
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		p, diags := concourse.ParsePipeline(filepath.Base(file), data, nil)
		if p == nil || len(diags.Errors()) > 0 {
			continue // invalid pipelines are the loader's test
		}
		var sources []string
		for _, vs := range p.Config.VarSources {
			sources = append(sources, vs.Name)
		}
		for i := range p.Config.Jobs {
			job := p.Config.Jobs[i].Name
			jobs++
			plan, err := planner.Plan(&p.Config, &p.Config.Jobs[i], planner.Options{})
			if err != nil {
				t.Errorf("%s: %s: %v", filepath.Base(file), job, err)
				continue
			}
			r, err := translate.Translate(plan, translate.Options{Pipeline: "corpus", Job: job, VarSources: sources})
			if err != nil {
				unsupported = append(unsupported, fmt.Sprintf("%s: job %s: %v", filepath.Base(file), job, err))
				continue
			}
			validate(t, r)
			if err := specsAsEncodingJSON(r); err != nil {
				t.Errorf("%s: job %s: %v", filepath.Base(file), job, err)
			}
			for _, obj := range r.Objects() {
				if err := translate.ObjectYAMLIsJSONs(obj); err != nil {
					t.Errorf("%s: job %s: %v", filepath.Base(file), job, err)
				}
				y, err := translate.ObjectYAML(obj)
				if err != nil {
					t.Fatal(err)
				}
				if len(y) > largest {
					largest, largestName = len(y), fmt.Sprintf("%s job %s", filepath.Base(file), job)
				}
			}
			converted++
		}
	}
	sort.Strings(unsupported)
	for _, u := range unsupported {
		t.Logf("not converted: %s", u)
	}
	if largest > etcdLimit/4 {
		t.Errorf("the largest object (%s) is %d bytes: too close to etcd's limit of %d", largestName, largest, etcdLimit)
	}
	testcorpus.Report(t, "corpus convert: %d jobs: %d converted and valid, %d not converted (listed with -v); largest object %d bytes (%s)\n",
		jobs, converted, len(unsupported), largest, largestName)
}

// specsAsEncodingJSON says where runspec.Spec.AppendJSON, which the translator encodes
// each spec with, writes other bytes than encoding/json (leaving HTML unescaped) for a
// runner spec of r's, as its runner decodes it, and with its numbers as float64s (as
// a task's config holds them).
func specsAsEncodingJSON(r *translate.Result) error {
	for _, pt := range slices.Concat(r.Pipeline.Spec.Tasks, r.Pipeline.Spec.Finally) {
		for _, p := range pt.Params {
			if p.Name != runspec.ParamSpec && p.Name != runspec.ParamVerdictSpec {
				continue
			}
			asDecoded, err := runspec.Decode(p.Value.StringVal)
			if err != nil {
				return fmt.Errorf("%s: %w", pt.Name, err)
			}
			var withFloats runspec.Spec
			if err := json.Unmarshal([]byte(p.Value.StringVal), &withFloats); err != nil {
				return fmt.Errorf("%s: %w", pt.Name, err)
			}
			for _, spec := range []*runspec.Spec{&asDecoded, &withFloats} {
				var want bytes.Buffer
				enc := json.NewEncoder(&want)
				enc.SetEscapeHTML(false)
				if err := enc.Encode(spec); err != nil {
					return fmt.Errorf("%s: %w", pt.Name, err)
				}
				got, err := spec.AppendJSON(nil)
				if err != nil || string(got)+"\n" != want.String() {
					return fmt.Errorf("the spec of %s: AppendJSON wrote (error %v)\n%s\nencoding/json\n%s", pt.Name, err, got, want.String())
				}
			}
		}
	}
	return nil
}

// BenchmarkCorpusConvert loads, plans and compiles every job of every valid corpus
// pipeline; compare it with BenchmarkCorpusRawYAML in package concourse.
func BenchmarkCorpusConvert(b *testing.B) {
	files := testcorpus.Pipelines(b)
	type input struct {
		name string
		data []byte
	}
	var inputs []input
	var size int64
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		inputs = append(inputs, input{filepath.Base(f), data})
		size += int64(len(data))
	}
	b.SetBytes(size)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, in := range inputs {
			p, diags := concourse.ParsePipeline(in.name, in.data, nil)
			if p == nil || len(diags.Errors()) > 0 {
				continue
			}
			for j := range p.Config.Jobs {
				plan, err := planner.Plan(&p.Config, &p.Config.Jobs[j], planner.Options{})
				if err != nil {
					b.Fatal(err)
				}
				r, err := translate.Translate(plan, translate.Options{Pipeline: "corpus", Job: p.Config.Jobs[j].Name})
				if err != nil {
					continue
				}
				if _, err := translate.MarshalYAML(r.Objects()); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
}
