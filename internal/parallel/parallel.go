// Package parallel spreads independent pieces of work over the processors the process
// may use, without changing what the work produces.
package parallel

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// ForEach calls work(i) once for each i in [0, n), on as many goroutines as the process
// may run at once (the caller's among them), but no more than one for each minEach
// items: fewer are done faster than a goroutine starts. Each goroutine gets its own
// work function from newWorker (for buffers it reuses) and takes the next i until none
// is left; ForEach returns when every call has returned. The calls may run in any order
// and at the same time: each must write only what belongs to its i.
func ForEach(n, minEach int, newWorker func() func(i int)) {
	var next atomic.Int64
	run := func() {
		work := newWorker()
		for {
			i := int(next.Add(1) - 1)
			if i >= n {
				return
			}
			work(i)
		}
	}
	workers := runtime.GOMAXPROCS(0)
	if minEach > 0 {
		workers = min(workers, n/minEach)
	}
	var wg sync.WaitGroup
	for range workers - 1 {
		wg.Go(run)
	}
	run()
	wg.Wait()
}
