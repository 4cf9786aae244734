package tektonrun

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// scriptedLogs serves one scripted stream per Open, the way the API serves a log whose
// connection breaks: each stream is what the client receives, then how it ends.
type scriptedLogs struct {
	mu      sync.Mutex
	streams []scriptedStream
	opened  []string // since, per open
}

type scriptedStream struct {
	data string
	end  error // io.EOF for a stream that ended cleanly
}

func (s *scriptedLogs) Open(_ context.Context, _, _, _ string, _ bool, since *metav1.Time) (io.ReadCloser, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at := ""
	if since != nil {
		at = since.UTC().Format(time.RFC3339)
	}
	s.opened = append(s.opened, at)
	if len(s.streams) == 0 {
		return nil, errors.New("no more streams")
	}
	st := s.streams[0]
	s.streams = s.streams[1:]
	return io.NopCloser(io.MultiReader(strings.NewReader(st.data), errReader{st.end})), nil
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// A stream cut in the middle of a line (an apiserver restart) keeps no part of that line:
// the next stream, opened from the second of the last whole line, brings it whole, and the
// lines of that second already kept are not kept twice.
func TestLogFollowerStreamCutMidLine(t *testing.T) {
	for _, end := range []error{io.EOF, io.ErrUnexpectedEOF} {
		t.Run(end.Error(), func(t *testing.T) {
			src := &scriptedLogs{streams: []scriptedStream{
				{data: "2026-01-01T00:00:01.1Z line 1\n2026-01-01T00:00:02.1Z line 2\n2026-01-01T00:00:02.5Z li", end: end},
				{data: "2026-01-01T00:00:02.1Z line 2\n2026-01-01T00:00:02.5Z line 3\n2026-01-01T00:00:03.0Z line 4\n", end: io.EOF},
				{data: "2026-01-01T00:00:03.0Z line 4\n2026-01-01T00:00:04.0Z no newline at the end", end: io.EOF},
			}}
			restore := retryDelay
			retryDelay = time.Millisecond
			defer func() { retryDelay = restore }()
			var phases sync.Mutex
			opens := 0
			phase := func() containerPhase {
				phases.Lock()
				defer phases.Unlock()
				opens++
				if opens >= 3 {
					return containerEnded
				}
				return containerRunning
			}
			f := &logFollower{wake: func() {}}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			f.run(ctx, src, "ns", "pod", phase)
			lines, done := f.snapshot()
			if !done {
				t.Fatal("the follower did not finish")
			}
			var got []string
			for _, l := range lines {
				got = append(got, l.Text)
			}
			want := []string{"line 1\n", "line 2\n", "line 3\n", "line 4\n", "no newline at the end"}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("lines (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"", "2026-01-01T00:00:02Z", "2026-01-01T00:00:03Z"}, src.opened); diff != "" {
				t.Errorf("streams opened from (-want +got):\n%s", diff)
			}
		})
	}
}
