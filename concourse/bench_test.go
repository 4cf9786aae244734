package concourse_test

import (
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/planner"
	"github.com/concourse-tekton/concourse-tekton/internal/testcorpus"
)

type corpusFile struct {
	name string
	data []byte
}

func loadCorpus(b *testing.B) ([]corpusFile, int64) {
	b.Helper()
	files := testcorpus.Pipelines(b)
	var out []corpusFile
	var size int64
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, corpusFile{filepath.Base(f), data})
		size += int64(len(data))
	}
	return out, size
}

// BenchmarkCorpusRawYAML is the baseline: decoding every corpus pipeline with
// sigs.k8s.io/yaml, as Concourse itself does, into an untyped value.
func BenchmarkCorpusRawYAML(b *testing.B) {
	files, size := loadCorpus(b)
	b.SetBytes(size)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, f := range files {
			var v any
			_ = yaml.Unmarshal(f.data, &v)
		}
	}
}

// BenchmarkCorpusLoadValidatePlan loads (with positions), validates and plans every job of
// every corpus pipeline.
func BenchmarkCorpusLoadValidatePlan(b *testing.B) {
	files, size := loadCorpus(b)
	b.SetBytes(size)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, f := range files {
			p, diags := concourse.ParsePipeline(f.name, f.data, nil)
			if p == nil || len(diags.Errors()) > 0 {
				continue
			}
			for j := range p.Config.Jobs {
				if _, err := planner.Plan(&p.Config, &p.Config.Jobs[j], planner.Options{}); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
}
