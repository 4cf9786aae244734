package translate

import "sync"

// processMemo keeps, by key, values the process would otherwise compute again for every
// job of every pipeline it translates. It is safe for concurrent use, and forgets
// everything once it holds max values. A nil processMemo keeps nothing.
type processMemo[K comparable, V any] struct {
	max int
	mu  sync.Mutex
	m   map[K]V
}

func (p *processMemo[K, V]) get(key K) (V, bool) {
	var zero V
	if p == nil {
		return zero, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	v, ok := p.m[key]
	return v, ok
}

func (p *processMemo[K, V]) put(key K, v V) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil || len(p.m) >= p.max {
		p.m = map[K]V{}
	}
	p.m[key] = v
}
