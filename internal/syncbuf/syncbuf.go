// Package syncbuf is a byte buffer that goroutines may write, and read, at the same time.
package syncbuf

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer behind a mutex, with Write and String only. io.Copy into it
// goes through Write: a bare bytes.Buffer's ReadFrom reads into the buffer's own slice,
// which another writer's growing replaces, and what it read is lost.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
