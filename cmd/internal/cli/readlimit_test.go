package cli

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// endless is standard input that never ends: a command that takes more than 64 MiB of
// it fails the test instead of running out of memory.
type endless struct{ read int }

func (e *endless) Read(p []byte) (int, error) {
	if e.read > 64<<20 {
		return 0, errors.New("64 MiB read of an input that never ends: it is read whole")
	}
	clear(p)
	e.read += len(p)
	return len(p), nil
}

// endlessFile is a file that never ends, as /dev/zero, but that fails the test rather
// than the machine: a FIFO fed 64 MiB of zeros at most. It reports how much was taken.
func endlessFile(t *testing.T) (string, func() int) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "zero")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("no FIFO: %v", err)
	}
	written := make(chan int, 1)
	go func() {
		n := 0
		defer func() { written <- n }()
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer f.Close()
		chunk := make([]byte, 64<<10)
		for n < 64<<20 {
			m, err := f.Write(chunk)
			n += m
			if err != nil {
				return // the reader is gone
			}
		}
	}()
	t.Cleanup(func() {
		// Unblock a writer whose reader never came.
		if f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
	return path, func() int { return <-written }
}

// TestInputLimit: a pipeline, vars or resource images file, or standard input, that is
// larger than the loader's limit is refused once the limit is read, with its name and
// the limit, not read whole (/dev/zero ran the process out of memory).
func TestInputLimit(t *testing.T) {
	const limit = "over the loader's limit of 4 MiB for a file"
	good := writeFile(t, "good.yml", pipeline)
	t.Run("standard input", func(t *testing.T) {
		in := &endless{}
		var out, errb bytes.Buffer
		code := Main([]string{"validate", "-"}, in, &out, &errb)
		if code != 1 || !strings.Contains(errb.String(), "<stdin>:1:4194305: the file is "+limit) {
			t.Errorf("code %d: %s", code, errb.String())
		}
		if in.read > 8<<20 {
			t.Errorf("%d MiB of standard input read", in.read>>20)
		}
	})
	for _, tc := range []struct {
		name string
		args func(file string) []string
	}{
		{"a pipeline", func(file string) []string { return []string{"validate", file} }},
		{"a vars file", func(file string) []string { return []string{"validate", good, "-l", file} }},
		{"a resource images file", func(file string) []string { return []string{"convert", good, "--resource-images", file} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file, written := endlessFile(t)
			code, _, stderr := run(t, "", tc.args(file)...)
			if code != 1 || !strings.Contains(stderr, file+":1:4194305: the file is "+limit) {
				t.Errorf("code %d: %s", code, stderr)
			}
			if n := written(); n > 8<<20 {
				t.Errorf("%d MiB of the file read", n>>20)
			}
		})
	}
}
