package redact

import "sort"

// matcher is an Aho–Corasick automaton over a fixed set of secret strings: one pass over
// the output finds every occurrence of every secret, whatever their number, in time
// linear in the output.
type matcher struct {
	// root is the complete transition table of the root state: 0 for a byte that starts
	// no secret, which lets a scan skip such bytes without looking at any other state.
	root  [256]int32
	nodes []node
	// The edges of node n are labels[n.lo:n.hi] (sorted) and targets[n.lo:n.hi].
	labels  []byte
	targets []int32
}

type node struct {
	lo, hi int32
	// fail is the state of the longest proper suffix of this state's string that is a
	// prefix of a secret.
	fail int32
	// depth is the length of this state's string: how many of the last bytes seen can
	// still be the beginning of a secret.
	depth int32
	// match is the length of the longest secret that ends here (0: none). Shorter ones
	// that end at the same byte lie inside it.
	match int32
}

// newMatcher builds the automaton of secrets: non-empty strings (a duplicate is harmless).
func newMatcher(secrets []string) *matcher {
	type edge struct {
		label byte
		to    int32
	}
	var (
		edges    = [][]edge{nil}
		depth    = []int32{0}
		terminal = []bool{false}
	)
	for _, s := range secrets {
		cur := int32(0)
	next:
		for i := 0; i < len(s); i++ {
			for _, e := range edges[cur] {
				if e.label == s[i] {
					cur = e.to
					continue next
				}
			}
			n := int32(len(depth))
			edges[cur] = append(edges[cur], edge{s[i], n})
			edges = append(edges, nil)
			depth = append(depth, depth[cur]+1)
			terminal = append(terminal, false)
			cur = n
		}
		terminal[cur] = true
	}
	m := &matcher{nodes: make([]node, len(depth))}
	for n, es := range edges {
		sort.Slice(es, func(i, j int) bool { return es[i].label < es[j].label })
		m.nodes[n].lo = int32(len(m.labels))
		for _, e := range es {
			m.labels = append(m.labels, e.label)
			m.targets = append(m.targets, e.to)
		}
		m.nodes[n].hi = int32(len(m.labels))
		m.nodes[n].depth = depth[n]
	}
	for i := m.nodes[0].lo; i < m.nodes[0].hi; i++ {
		m.root[m.labels[i]] = m.targets[i]
	}
	// Breadth first, so that a state's fail state is complete before the state is.
	queue := []int32{0}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		for i := m.nodes[u].lo; i < m.nodes[u].hi; i++ {
			v := m.targets[i]
			if u != 0 {
				m.nodes[v].fail = m.next(m.nodes[u].fail, m.labels[i])
			}
			if terminal[v] {
				m.nodes[v].match = m.nodes[v].depth
			} else {
				m.nodes[v].match = m.nodes[m.nodes[v].fail].match
			}
			queue = append(queue, v)
		}
	}
	return m
}

// child is the edge of state s labelled b, or -1.
func (m *matcher) child(s int32, b byte) int32 {
	lo, hi := m.nodes[s].lo, m.nodes[s].hi
	if hi-lo <= 8 {
		for i := lo; i < hi; i++ {
			if m.labels[i] == b {
				return m.targets[i]
			}
		}
		return -1
	}
	for lo < hi {
		mid := int32(uint32(lo+hi) >> 1)
		switch l := m.labels[mid]; {
		case l == b:
			return m.targets[mid]
		case l < b:
			lo = mid + 1
		default:
			hi = mid
		}
	}
	return -1
}

// next is the state after reading b in state s.
func (m *matcher) next(s int32, b byte) int32 {
	for s != 0 {
		if t := m.child(s, b); t >= 0 {
			return t
		}
		s = m.nodes[s].fail
	}
	return m.root[b]
}

// span is a stretch [start, end) of the output, in bytes since the stream began.
type span struct{ start, end int64 }

// stream redacts one output as it comes. The overlapping occurrences of secrets form
// runs, each replaced by one Redacted; a byte is decided (written, or hidden in a run)
// as soon as no later byte can make it part of a secret, so what is held back is only
// the tail that may still begin a secret: fewer bytes than the longest secret.
type stream struct {
	m     *matcher
	state int32
	// pos counts the bytes read; done the bytes decided.
	pos, done int64
	// raw[head:] are the bytes held back from earlier writes: [done, base).
	raw  []byte
	head int
	// p is the write being read, from offset base; its bytes p[lazy:done-base] are
	// decided and clear but not yet in out (copied at once, not byte by byte). Between
	// writes p is nil and base is pos.
	p    []byte
	base int64
	lazy int
	// runs are the runs not yet closed, sorted and disjoint; open tells that the first
	// one's Redacted is already out (it may still grow).
	runs []span
	open bool
	// out collects what is decided, for the caller to write.
	out []byte
}

func newStream(m *matcher) *stream {
	return &stream{m: m}
}

// feed reads p.
func (st *stream) feed(p []byte) {
	m := st.m
	st.p, st.base, st.lazy = p, st.pos, 0
	for i := 0; i < len(p); {
		if st.state == 0 {
			// Nothing is held back: let every byte that starts no secret through.
			j := i
			for j < len(p) && m.root[p[j]] == 0 {
				j++
			}
			st.pos += int64(j - i)
			st.done = st.pos
			if i = j; i == len(p) {
				break
			}
		}
		st.state = m.next(st.state, p[i])
		st.pos++
		i++
		n := &m.nodes[st.state]
		if n.match > 0 {
			st.found(st.pos - int64(n.match))
		}
		decided := st.pos - int64(n.depth)
		if len(st.runs) > 0 {
			st.settle(decided)
		} else if st.done < decided {
			st.emit(decided)
		}
	}
	st.commit()
	if st.done < st.pos {
		st.raw = append(st.raw, p[max(st.done, st.base)-st.base:]...)
	}
	st.p, st.base, st.lazy = nil, st.pos, 0
}

// found records a secret occurrence [start, pos), merging the runs it overlaps.
func (st *stream) found(start int64) {
	i := len(st.runs)
	for i > 0 && st.runs[i-1].end > start {
		i--
	}
	if i < len(st.runs) {
		start = min(start, st.runs[i].start)
	}
	if i > 0 || !st.open {
		// The bytes before done were written in clear by a forced flush: too late.
		start = max(start, st.done)
	}
	if start >= st.pos {
		return
	}
	st.runs = append(st.runs[:i], span{start, st.pos})
}

// settle decides the bytes before offset decided, which no secret yet to come can
// cover.
func (st *stream) settle(decided int64) {
	for len(st.runs) > 0 {
		r := st.runs[0]
		if !st.open {
			if r.start > decided {
				break
			}
			st.emit(r.start)
			st.commit()
			st.out = append(st.out, Redacted...)
			st.open = true
		}
		st.skip(r.end)
		if r.end > decided {
			// A later occurrence may still overlap it.
			break
		}
		st.runs = st.runs[:copy(st.runs, st.runs[1:])]
		st.open = false
	}
	if st.done < decided {
		st.emit(decided)
	}
}

// emit decides the bytes up to offset to in clear.
func (st *stream) emit(to int64) {
	if to <= st.done {
		return
	}
	if st.done < st.base {
		n := int(min(to, st.base) - st.done)
		st.out = append(st.out, st.raw[st.head:st.head+n]...)
		st.dropRaw(n)
	}
	st.done = max(st.done, to)
}

// skip decides the bytes up to offset to hidden.
func (st *stream) skip(to int64) {
	if to <= st.done {
		return
	}
	st.commit()
	if st.done < st.base {
		st.dropRaw(int(min(to, st.base) - st.done))
	}
	st.done = max(st.done, to)
	st.lazy = int(max(st.done-st.base, 0))
}

// commit copies the clear bytes decided in the write being read to out.
func (st *stream) commit() {
	if end := int(st.done - st.base); end > st.lazy {
		st.out = append(st.out, st.p[st.lazy:end]...)
		st.lazy = end
	}
}

func (st *stream) dropRaw(n int) {
	st.head += n
	st.done += int64(n)
	if st.head >= len(st.raw)-st.head {
		// Compact once as much was dropped as is left: linear over the stream.
		st.raw = st.raw[:copy(st.raw, st.raw[st.head:])]
		st.head = 0
	}
}

// flush decides everything held back, as at the end of the output. The automaton keeps
// its state: a secret whose beginning was flushed is still hidden from there on.
func (st *stream) flush() {
	st.settle(st.pos)
}

// pending tells whether bytes are held back.
func (st *stream) pending() bool {
	return st.done < st.pos
}

// rematch goes on with a new automaton (more secrets): the bytes held back are read
// again from its root. Bytes already decided stay as they were.
func (st *stream) rematch(m *matcher) {
	held := append([]byte(nil), st.raw[st.head:]...)
	st.m, st.state, st.pos, st.base = m, 0, st.done, st.done
	st.raw, st.head = st.raw[:0], 0
	st.runs, st.open = st.runs[:0], false
	st.feed(held)
}
