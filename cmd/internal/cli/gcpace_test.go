package cli

import (
	"os"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
)

func gcPercent() uint64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestBatchGC checks that validate's and convert's pace of the garbage collector is
// batchPercent while the live heap is small, Go's default past the limit, and put back
// when the command ends.
func TestBatchGC(t *testing.T) {
	if _, set := os.LookupEnv("GOGC"); set {
		t.Skip("GOGC is set: batchGC leaves it alone")
	}
	was := gcPercent()
	restore := batchGC()
	if got := gcPercent(); got != batchPercent {
		t.Errorf("pace %d, want %d", got, batchPercent)
	}
	restore()
	if got := gcPercent(); got != was {
		t.Errorf("pace %d once restored, want %d", got, was)
	}

	restore = paceGC(batchPercent, 1<<20)
	defer restore()
	held := make([][]byte, 8)
	for i := range held {
		held[i] = make([]byte, 1<<20)
	}
	for deadline := time.Now().Add(10 * time.Second); gcPercent() != was; {
		if time.Now().After(deadline) {
			t.Fatalf("pace %d with 8 MiB alive, want %d", gcPercent(), was)
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	runtime.KeepAlive(held)
}
