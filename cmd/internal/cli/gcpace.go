package cli

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// batchPercent is the garbage collector's pace (GOGC) for a command that reads its input,
// makes what it writes and ends, while its heap is small: the next collection when the
// heap has grown by four times what the last found alive.
const batchPercent = 400

// batchLive is the live heap past which such a command goes back to Go's default pace, so
// that a large input costs no more memory than it did: at 400 %, a heap of 64 MiB alive
// may grow to 320 MiB before it is collected.
const batchLive = 64 << 20

// batchGC paces the garbage collector for validate and convert, whose heap only grows as
// they go (convert holds every document until it writes them): Go's default pace
// (GOGC=100, from 4 MiB) collects the corpus's twenty times on the way up to 20 MiB,
// marking all that is held each time, a fifth of convert's time. Until the live heap
// passes batchLive, it collects at batchPercent. A GOGC given in the environment is left
// alone. The function returned puts back the pace it found.
func batchGC() (restore func()) {
	return paceGC(batchPercent, batchLive)
}

// paceGC collects at percent until the live heap passes live. Both are the call's own, so
// that the finalizer goroutine reads nothing another goroutine writes.
func paceGC(percent int, live uint64) (restore func()) {
	if _, set := os.LookupEnv("GOGC"); set {
		return func() {}
	}
	old := debug.SetGCPercent(percent)
	var mu sync.Mutex
	done := false
	finish := func() {
		mu.Lock()
		defer mu.Unlock()
		if !done {
			done = true
			debug.SetGCPercent(old)
		}
	}
	// After each collection, a finalizer looks at what it found alive.
	type tick struct{ _ *byte }
	var watch func(*tick)
	watch = func(t *tick) {
		mu.Lock()
		stopped := done
		mu.Unlock()
		switch {
		case stopped:
		case liveHeap() > live:
			finish()
		default:
			runtime.SetFinalizer(t, watch)
		}
	}
	runtime.SetFinalizer(&tick{}, watch)
	return finish
}

// liveHeap is the heap the last collection found alive.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
