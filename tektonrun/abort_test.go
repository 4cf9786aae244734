package tektonrun

import (
	"context"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"

	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// TestLockedBuffer checks that a command's stdout and stderr, copied into one buffer
// from two goroutines as remotecommand does, lose nothing. A bytes.Buffer there lost a
// fast command's output, or turned it into NULs: each copy reads into the buffer's own
// slice (io.ReaderFrom), and the stderr copy, waiting on an empty stream, then cuts the
// buffer back to what it had when it began to wait.
func TestLockedBuffer(t *testing.T) {
	var b lockedBuffer
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

// TestWriteAbortMarker: the marker is written from a running step's container once the
// runner says so. An exec that ends with no error but without its word (client-go's
// report of a stream lost before the status came) is not taken for it: each running
// step is tried, and the failures are said.
func TestWriteAbortMarker(t *testing.T) {
	pr := &v1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Name: "b-1", Namespace: "ci"}}
	abort := []string{runspec.RunnerPath, string(runspec.ModeAbort), "--volume=" + runspec.DefaultVolume}
	for _, tc := range []struct {
		name  string
		out   string
		done  bool
		calls int
	}{
		{"written", runspec.AbortWritten + "\n", true, 1},
		{"stream lost", "", false, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exec := &fakeExecer{out: tc.out}
			c, _ := interceptClient(t, exec, nil)
			done, err := c.writeAbortMarker(context.Background(), pr)
			if done != tc.done || (err == nil) != tc.done {
				t.Errorf("writeAbortMarker = %v, %v; want done %v, and an error unless done", done, err, tc.done)
			}
			if !tc.done && (err == nil || !strings.Contains(err.Error(), "without the runner's word")) {
				t.Errorf("the error does not say the runner's word was missing: %v", err)
			}
			if len(exec.calls) != tc.calls {
				t.Fatalf("%d execs, want %d: %+v", len(exec.calls), tc.calls, exec.calls)
			}
			if got := exec.calls[0].Command; !slices.Equal(got, abort) {
				t.Errorf("exec %q, want %q", got, abort)
			}
		})
	}
}
