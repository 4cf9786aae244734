package cowcopy

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

const benchTotal = 200 << 20

// benchTree writes benchTotal bytes below a new directory: files of fileSize in
// directories of 128 files each.
func benchTree(b *testing.B, base string, fileSize int) string {
	b.Helper()
	root := filepath.Join(base, "src")
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
// throughput and ours as a share of cp -a's (goal: at least 0.7). Both copies start from
// a synced filesystem, in alternating order, so that neither pays for the other's
// writeback. tmp is the disk (t.TempDir); shm is a tmpfs, where only the CPU counts;
// COWCOPY_BENCH_DIR adds a directory of your choice (for example on XFS or btrfs, where
// files are cloned).
func BenchmarkStage(b *testing.B) {
	bases := []struct{ name, dir string }{{"tmp", ""}, {"shm", "/dev/shm"}}
	if dir := os.Getenv("COWCOPY_BENCH_DIR"); dir != "" {
		bases = append(bases, struct{ name, dir string }{"custom", dir})
	}
	for _, base := range bases {
		for _, bc := range []struct {
			name     string
			fileSize int
		}{
			{"small-files-16KiB", 16 << 10},
			{"one-large-file", benchTotal},
		} {
			b.Run(base.name+"/"+bc.name, func(b *testing.B) {
				dir := b.TempDir()
				if base.dir != "" {
					if _, err := os.Stat(base.dir); err != nil {
						b.Skipf("no %s", base.dir)
					}
					var err error
					if dir, err = os.MkdirTemp(base.dir, "cowcopy-bench-"); err != nil {
						b.Fatal(err)
					}
					b.Cleanup(func() { os.RemoveAll(dir) })
				}
				stage(b, dir, bc.fileSize)
			})
		}
	}
}

func stage(b *testing.B, dir string, fileSize int) {
	src := benchTree(b, dir, fileSize)
	var ours, cp time.Duration
	var stats Stats
	runOurs := func(dst string) {
		syscall.Sync()
		start := time.Now()
		var err error
		if stats, err = Tree(src, dst, Options{}); err != nil {
			b.Fatal(err)
		}
		ours += time.Since(start)
	}
	runCp := func(dst string) {
		syscall.Sync()
		start := time.Now()
		if out, err := exec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
			b.Fatalf("cp -a: %v: %s", err, out)
		}
		cp += time.Since(start)
	}
	b.SetBytes(benchTotal)
	b.ResetTimer()
	b.StopTimer()
	for i := 0; i < b.N; i++ {
		dst, cpDst := filepath.Join(dir, fmt.Sprintf("ours-%d", i)), filepath.Join(dir, fmt.Sprintf("cp-%d", i))
		if i%2 == 0 {
			b.StartTimer()
			runOurs(dst)
			b.StopTimer()
			runCp(cpDst)
		} else {
			runCp(cpDst)
			b.StartTimer()
			runOurs(dst)
			b.StopTimer()
		}
		os.RemoveAll(dst)
		os.RemoveAll(cpDst)
	}
	mb := float64(benchTotal) / (1 << 20) * float64(b.N)
	b.ReportMetric(mb/ours.Seconds(), "ours-MB/s")
	b.ReportMetric(mb/cp.Seconds(), "cp-a-MB/s")
	b.ReportMetric(cp.Seconds()/ours.Seconds(), "ratio-vs-cp-a")
	b.ReportMetric(float64(stats.Cloned), "files-cloned")
}
