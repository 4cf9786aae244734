package cli

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/concourse-tekton/concourse-tekton/internal/syncbuf"
)

func TestByteCount(t *testing.T) {
	for n, want := range map[float64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 200 << 20: "200.0 MiB", 3 << 30: "3.0 GiB"} {
		if got := byteCount(n); got != want {
			t.Errorf("byteCount(%v) = %q, want %q", n, got, want)
		}
	}
}

func TestProgress(t *testing.T) {
	defer func(d time.Duration) { progressEvery = d }(progressEvery)
	progressEvery = 20 * time.Millisecond

	var quick syncbuf.Buffer
	p := newProgress(&quick, "uploading", "src")
	io.WriteString(p.writer(io.Discard), "abc")
	p.done(nil)
	if quick.String() != "" {
		t.Errorf("a transfer quicker than a tick said %q", quick.String())
	}

	var slow syncbuf.Buffer
	p = newProgress(&slow, "downloading", "out")
	io.WriteString(p.writer(io.Discard), strings.Repeat("x", 2048))
	time.Sleep(70 * time.Millisecond)
	p.done(nil)
	lines := strings.Split(strings.TrimSpace(slow.String()), "\n")
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "downloading out: 2.0 KiB (") || !strings.HasPrefix(lines[len(lines)-1], "downloading out: done, 2.0 KiB (") {
		t.Errorf("progress lines:\n%s", slow.String())
	}

	var failed syncbuf.Buffer
	p = newProgress(&failed, "uploading", "big")
	time.Sleep(50 * time.Millisecond)
	p.done(errors.New("broken pipe"))
	if !strings.HasSuffix(failed.String(), "uploading big failed after 0 B\n") {
		t.Errorf("failed transfer:\n%s", failed.String())
	}
}
