package syncbuf

import (
	"io"
	"strings"
	"sync"
	"testing"
)

// TestBuffer checks that a command's stdout and stderr, copied into one buffer
// from two goroutines as remotecommand does, lose nothing. A bytes.Buffer there lost a
// fast command's output, or turned it into NULs: each copy reads into the buffer's own
// slice (io.ReaderFrom), and the stderr copy, waiting on an empty stream, then cuts the
// buffer back to what it had when it began to wait.
func TestBuffer(t *testing.T) {
	var b Buffer
	pipe, closeStderr := io.Pipe()
	waiting := make(chan struct{})
	stderr := &signalReader{Reader: pipe, reading: waiting}
	copied := make(chan error)
	go func() {
		_, err := io.Copy(&b, stderr)
		copied <- err
	}()
	<-waiting
	// The stdout stream: a reader that is only a reader, as the remote stream is.
	stdout := struct{ io.Reader }{strings.NewReader(strings.Repeat("out\n", 13))}
	if _, err := io.Copy(&b, stdout); err != nil {
		t.Fatal(err)
	}
	closeStderr.Close()
	if err := <-copied; err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), strings.Repeat("out\n", 13); got != want {
		t.Errorf("combined output %q, want %q", got, want)
	}
}

// signalReader is a Reader that says when it is first read.
type signalReader struct {
	io.Reader
	reading chan struct{}
	once    sync.Once
}

func (r *signalReader) Read(p []byte) (int, error) {
	r.once.Do(func() { close(r.reading) })
	return r.Reader.Read(p)
}
