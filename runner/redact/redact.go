package redact

import (
	"bytes"
	"io"
	"sort"
	"strings"
	"sync"
)

// Redacted replaces a secret in the output.
const Redacted = "((redacted))"

// Secrets is a set of secret strings. The zero value hides nothing.
type Secrets struct {
	mu    sync.RWMutex
	lines []string
}

// Add tracks a secret value the way Concourse's tracker does: strings, and the string
// values inside maps; other values are not secrets of their own.
func (s *Secrets) Add(value any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.add(value)
	sort.Slice(s.lines, func(i, j int) bool {
		if len(s.lines[i]) != len(s.lines[j]) {
			return len(s.lines[i]) > len(s.lines[j])
		}
		return s.lines[i] < s.lines[j]
	})
}

func (s *Secrets) add(value any) {
	switch v := value.(type) {
	case string:
		for _, line := range strings.Split(v, "\n") {
			if line = strings.TrimSpace(line); len(line) > 1 {
				s.lines = append(s.lines, line)
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
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.lines) == 0
}

// String hides the secrets in text; longer secrets are replaced first, so that a secret
// that contains another is hidden whole.
func (s *Secrets) String(text string) string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, line := range s.lines {
		text = strings.ReplaceAll(text, line, Redacted)
	}
	return text
}

// Writer writes to W with the secrets hidden. It holds back a partial line until its end
// comes (or Flush), because a secret could be split across two writes; with no secrets it
// passes writes straight through.
type Writer struct {
	W       io.Writer
	Secrets *Secrets

	mu      sync.Mutex
	pending []byte
}

var _ io.Writer = (*Writer)(nil)

// Write implements io.Writer.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.Secrets == nil || w.Secrets.Empty() {
		if len(w.pending) > 0 {
			if err := w.flush(); err != nil {
				return 0, err
			}
		}
		return w.W.Write(p)
	}
	w.pending = append(w.pending, p...)
	if i := bytes.LastIndexByte(w.pending, '\n'); i >= 0 {
		lines := w.pending[:i+1]
		if _, err := io.WriteString(w.W, w.Secrets.String(string(lines))); err != nil {
			return 0, err
		}
		w.pending = append(w.pending[:0], w.pending[i+1:]...)
	}
	return len(p), nil
}

// Flush writes what is held back of a partial line.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.flush()
}

func (w *Writer) flush() error {
	if len(w.pending) == 0 {
		return nil
	}
	text := string(w.pending)
	if w.Secrets != nil {
		text = w.Secrets.String(text)
	}
	w.pending = w.pending[:0]
	_, err := io.WriteString(w.W, text)
	return err
}
