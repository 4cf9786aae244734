package cli

import (
	"io"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/concourse-tekton/concourse-tekton/internal/testcorpus"
)

// BenchmarkConvert runs `convert` and `validate` (the command, in process, output
// discarded) on the corpus, every pipeline, and on its largest file, and in the same
// iterations decodes the same files with sigs.k8s.io/yaml, as Concourse reads a pipeline:
// the floor of issue 14's goals. x-decode is the ratio of the times, allocs-x-decode of
// the bytes allocated, out/in the YAML written per byte read.
func BenchmarkConvert(b *testing.B) {
	files := testcorpus.Pipelines(b)
	largest, size := "", int64(0)
	for _, f := range files {
		if st, err := os.Stat(f); err == nil && st.Size() > size {
			largest, size = f, st.Size()
		}
	}
	for _, bc := range []struct {
		name  string
		args  []string
		files []string
	}{
		{"convert/corpus", []string{"convert", "--skip-unsupported"}, files},
		{"convert/largest", []string{"convert", "--skip-unsupported"}, []string{largest}},
		{"validate/corpus", []string{"validate"}, files},
		{"validate/largest", []string{"validate"}, []string{largest}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var in, out int64
			var decodeTime, commandTime time.Duration
			var decodeAlloc, commandAlloc uint64
			var ms runtime.MemStats
			for b.Loop() {
				for _, f := range bc.files {
					runtime.ReadMemStats(&ms)
					alloc, start := ms.TotalAlloc, time.Now()
					data, err := os.ReadFile(f)
					if err != nil {
						b.Fatal(err)
					}
					var v any
					_ = yaml.Unmarshal(data, &v)
					decodeTime += time.Since(start)
					runtime.ReadMemStats(&ms)
					decodeAlloc += ms.TotalAlloc - alloc
					in += int64(len(data))

					alloc, start = ms.TotalAlloc, time.Now()
					var stdout countWriter
					Main(append(bc.args[:len(bc.args):len(bc.args)], f), strings.NewReader(""), &stdout, io.Discard)
					commandTime += time.Since(start)
					runtime.ReadMemStats(&ms)
					commandAlloc += ms.TotalAlloc - alloc
					out += stdout.n
				}
			}
			b.ReportMetric(float64(commandTime)/float64(decodeTime), "x-decode")
			b.ReportMetric(float64(commandAlloc)/float64(decodeAlloc), "allocs-x-decode")
			if bc.args[0] == "convert" {
				b.ReportMetric(float64(out)/float64(in), "out/in")
			}
		})
	}
}

// countWriter counts what is written to it.
type countWriter struct{ n int64 }

func (w *countWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	return len(p), nil
}
