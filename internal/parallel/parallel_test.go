package parallel

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

func TestForEachCallsEachOnce(t *testing.T) {
	for _, n := range []int{0, 1, 3, 100, 1000} {
		calls := make([]atomic.Int32, n)
		ForEach(n, 1, func() func(int) {
			return func(i int) { calls[i].Add(1) }
		})
		for i := range calls {
			if c := calls[i].Load(); c != 1 {
				t.Fatalf("n=%d: item %d worked %d times, want once", n, i, c)
			}
		}
	}
}

func TestForEachWorkers(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	for _, tc := range []struct{ n, minEach, want int }{
		{n: 100, minEach: 1, want: 4},
		{n: 100, minEach: 50, want: 2},
		{n: 3, minEach: 4, want: 1},
		{n: 0, minEach: 4, want: 1},
		{n: 10, minEach: 0, want: 4},
	} {
		var mu sync.Mutex
		workers := 0
		// Workers are counted as they start, whether or not an item is left for them.
		ForEach(tc.n, tc.minEach, func() func(int) {
			mu.Lock()
			workers++
			mu.Unlock()
			return func(int) {}
		})
		if workers != tc.want {
			t.Errorf("n=%d minEach=%d: %d workers, want %d", tc.n, tc.minEach, workers, tc.want)
		}
	}
}
