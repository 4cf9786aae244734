package cli

import (
	"io"
	"os"
	"runtime"
	"runtime/metrics"
	"slices"
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

// BenchmarkPeakHeap runs `validate` and `convert -o DIR` on every pipeline of the corpus,
// in one process as a user would (`validate corpus/*`), and on its largest file; it
// reports the
// highest heap the command held, per byte of the files it read: peak-heap/in sampled
// every millisecond, live-heap/in the most a collection found alive. The process's own
// RSS adds the binary's pages and the runtime, the same for any input.
func BenchmarkPeakHeap(b *testing.B) {
	corpus := testcorpus.Pipelines(b)
	largest, size := "", int64(0)
	for _, f := range corpus {
		if st, err := os.Stat(f); err == nil && st.Size() > size {
			largest, size = f, st.Size()
		}
	}
	for _, bc := range []struct {
		name    string
		command []string
		files   []string
	}{
		{"validate/corpus", []string{"validate"}, corpus},
		{"validate/largest", []string{"validate"}, []string{largest}},
		{"convert/corpus", []string{"convert", "--skip-unsupported", "-o"}, corpus},
		{"convert/largest", []string{"convert", "--skip-unsupported", "-o"}, []string{largest}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var in int64
			for _, f := range bc.files {
				st, err := os.Stat(f)
				if err != nil {
					b.Fatal(err)
				}
				in += st.Size()
			}
			var peak, live uint64
			for b.Loop() {
				dir := b.TempDir()
				runtime.GC()
				args := slices.Clone(bc.command)
				if args[0] == "convert" {
					args = append(args, dir)
				}
				args = append(args, bc.files...)
				p, l := heapPeaks(func() { Main(args, strings.NewReader(""), io.Discard, io.Discard) })
				peak, live = max(peak, p), max(live, l)
			}
			b.ReportMetric(float64(peak)/float64(in), "peak-heap/in")
			b.ReportMetric(float64(live)/float64(in), "live-heap/in")
		})
	}
}

// heapPeaks runs f and returns how far the heap's objects grew beyond what they were
// when it started, sampled every millisecond, and the most a collection found alive
// beyond that.
func heapPeaks(f func()) (peak, live uint64) {
	samples := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/live:bytes"}}
	read := func() (uint64, uint64) {
		metrics.Read(samples)
		return samples[0].Value.Uint64(), samples[1].Value.Uint64()
	}
	base, baseLive := read()
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			objects, alive := read()
			peak, live = max(peak, objects-min(objects, base)), max(live, alive-min(alive, baseLive))
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	f()
	close(done)
	<-sampled
	objects, alive := read()
	return max(peak, objects-min(objects, base)), max(live, alive-min(alive, baseLive))
}
