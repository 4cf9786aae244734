package redact

import (
	"io"
	"sort"
	"strings"
	"sync"
	"time"
)

// Redacted replaces a secret in the output.
const Redacted = "((redacted))"

// DefaultIdle is how long a Writer holds back the tail of an output that may begin a
// secret before it writes it anyway: short enough that a progress bar drawn with \r is
// seen as it is drawn.
const DefaultIdle = 100 * time.Millisecond

// chunk bounds what one Write sends to the underlying writer at a time, so that a huge
// write is not redacted into a second copy of itself.
const chunk = 32 << 10

// Secrets is a set of secret strings. The zero value hides nothing.
type Secrets struct {
	mu    sync.Mutex
	lines map[string]struct{}
	// m is the automaton of lines, built when first needed after a change.
	m *matcher
}

// Add tracks a secret value the way Concourse's tracker does: strings, and the string
// values inside maps; other values are not secrets of their own.
func (s *Secrets) Add(value any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.add(value)
}

func (s *Secrets) add(value any) {
	switch v := value.(type) {
	case string:
		for _, line := range strings.Split(v, "\n") {
			// Concourse's rule: every line, trimmed, longer than one character.
			if line = strings.TrimSpace(line); len(line) > 1 {
				if _, ok := s.lines[line]; ok {
					continue
				}
				if s.lines == nil {
					s.lines = map[string]struct{}{}
				}
				s.lines[line] = struct{}{}
				s.m = nil
			}
		}
	case map[string]any:
		for _, inner := range v {
			s.add(inner)
		}
	}
}

// Empty tells whether there is nothing to hide.
func (s *Secrets) Empty() bool {
	return s.matcher() == nil
}

// matcher returns the automaton of the secrets, nil when there are none. A new one is
// built after every change, so a stream can tell that the set changed.
func (s *Secrets) matcher() *matcher {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil && len(s.lines) > 0 {
		lines := make([]string, 0, len(s.lines))
		for l := range s.lines {
			lines = append(lines, l)
		}
		sort.Strings(lines)
		s.m = newMatcher(lines)
	}
	return s.m
}

// String hides the secrets in text. Occurrences that overlap are hidden together, as
// one Redacted: a secret inside a longer one is hidden whole with it, and no part of
// either shows.
func (s *Secrets) String(text string) string {
	m := s.matcher()
	if m == nil {
		return text
	}
	st := newStream(m)
	st.out = make([]byte, 0, len(text))
	st.feed([]byte(text))
	st.flush()
	return string(st.out)
}

// Clock schedules a Writer's idle flush; the time package's AfterFunc is one.
type Clock interface {
	// AfterFunc calls f in its own goroutine once d has passed, unless stopped first.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a scheduled call; *time.Timer is one.
type Timer interface {
	// Stop prevents the call if it has not started yet.
	Stop() bool
}

type systemClock struct{}

func (systemClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

var _ Clock = systemClock{}

// Writer writes to W with the secrets hidden, in one pass and in constant memory whatever
// the length of a line. A byte is written as soon as it can no longer be part of a
// secret; only a tail that may begin a secret (shorter than the longest secret) is held
// back, until the next write tells, Flush, or Idle passes without a write. A secret
// split across writes is hidden; one split by an idle flush is hidden from there on.
// With no secrets, writes pass straight through.
type Writer struct {
	W       io.Writer
	Secrets *Secrets
	// Idle is how long a held-back tail waits for more output; 0 means DefaultIdle.
	Idle time.Duration
	// Clock schedules the idle flush; nil means the system clock.
	Clock Clock

	mu sync.Mutex
	st *stream
	// writes counts the writes, so that a timer armed before the last one does nothing.
	writes uint64
	timer  Timer
	// err is a failure of a write made by the idle flush, returned by the next call.
	err error
}

var _ io.Writer = (*Writer)(nil)

// Write implements io.Writer.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes++
	if err := w.err; err != nil {
		w.err = nil
		return 0, err
	}
	m := w.Secrets.matcher()
	if m == nil {
		return w.W.Write(p)
	}
	switch {
	case w.st == nil:
		w.st = newStream(m)
	case w.st.m != m:
		w.st.rematch(m)
	}
	for rest := p; len(rest) > 0; {
		n := min(len(rest), chunk)
		w.st.feed(rest[:n])
		rest = rest[n:]
		if err := w.out(); err != nil {
			return 0, err
		}
	}
	if w.st.pending() {
		w.arm()
	}
	return len(p), nil
}

// arm (re)starts the idle timer for the tail held back now.
func (w *Writer) arm() {
	if w.timer != nil {
		w.timer.Stop()
	}
	clock, idle := w.Clock, w.Idle
	if clock == nil {
		clock = systemClock{}
	}
	if idle <= 0 {
		idle = DefaultIdle
	}
	writes := w.writes
	w.timer = clock.AfterFunc(idle, func() { w.expire(writes) })
}

// expire flushes the held-back tail if no write came since the timer was armed.
func (w *Writer) expire(writes uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if writes != w.writes || w.st == nil || !w.st.pending() {
		return
	}
	w.st.flush()
	if err := w.out(); err != nil && w.err == nil {
		w.err = err
	}
}

// out writes what the stream has decided.
func (w *Writer) out() error {
	if len(w.st.out) == 0 {
		return nil
	}
	_, err := w.W.Write(w.st.out)
	w.st.out = w.st.out[:0]
	return err
}

// Flush writes what is held back.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes++
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
	if err := w.err; err != nil {
		w.err = nil
		return err
	}
	if w.st == nil {
		return nil
	}
	w.st.flush()
	return w.out()
}
