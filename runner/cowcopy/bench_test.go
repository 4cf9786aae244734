package cowcopy

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

const benchTotal = 200 << 20

// benchTree writes benchTotal bytes below a new directory: files of fileSize in
// directories of 128 files each.
func benchTree(b *testing.B, fileSize int) string {
	b.Helper()
	root := filepath.Join(b.TempDir(), "src")
	data := make([]byte, fileSize)
	for i := range data {
		data[i] = byte(i*31 + 7)
	}
	for i := 0; i < benchTotal/fileSize; i++ {
		dir := filepath.Join(root, fmt.Sprintf("d%03d", i/128))
		if i%128 == 0 {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				b.Fatal(err)
			}
		}
		data[0] = byte(i)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%05d", i)), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return root
}

// BenchmarkStage stages an input both ways in every iteration and reports each one's
// throughput and ours as a share of cp -a's (goal: at least 0.7).
func BenchmarkStage(b *testing.B) {
	for _, bc := range []struct {
		name     string
		fileSize int
	}{
		{"small-files-16KiB", 16 << 10},
		{"one-large-file", benchTotal},
	} {
		b.Run(bc.name, func(b *testing.B) {
			src := benchTree(b, bc.fileSize)
			work := b.TempDir()
			var ours, cp time.Duration
			var stats Stats
			b.SetBytes(benchTotal)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				dst := filepath.Join(work, fmt.Sprintf("ours-%d", i))
				start := time.Now()
				var err error
				if stats, err = Tree(src, dst, Options{}); err != nil {
					b.Fatal(err)
				}
				ours += time.Since(start)
				b.StopTimer()
				cpDst := filepath.Join(work, fmt.Sprintf("cp-%d", i))
				start = time.Now()
				if out, err := exec.Command("cp", "-a", src, cpDst).CombinedOutput(); err != nil {
					b.Fatalf("cp -a: %v: %s", err, out)
				}
				cp += time.Since(start)
				os.RemoveAll(dst)
				os.RemoveAll(cpDst)
				b.StartTimer()
			}
			mb := float64(benchTotal) / (1 << 20) * float64(b.N)
			b.ReportMetric(mb/ours.Seconds(), "ours-MB/s")
			b.ReportMetric(mb/cp.Seconds(), "cp-a-MB/s")
			b.ReportMetric(cp.Seconds()/ours.Seconds(), "ratio-vs-cp-a")
			b.ReportMetric(float64(stats.Cloned), "files-cloned")
		})
	}
}
