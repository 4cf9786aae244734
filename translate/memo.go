package translate

import "sync"

// processMemo keeps, by key, values the process would otherwise compute again for every
// job of every pipeline it translates. It is safe for concurrent use, and forgets
// everything once it holds max values. A nil processMemo keeps nothing.
type processMemo[V any] struct {
	max int
	mu  sync.Mutex
	m   map[string]V
}

func (p *processMemo[V]) get(key string) (V, bool) {
	var zero V
	if p == nil {
		return zero, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	v, ok := p.m[key]
	return v, ok
}

func (p *processMemo[V]) put(key string, v V) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil || len(p.m) >= p.max {
		p.m = map[string]V{}
	}
	p.m[key] = v
}
