package proc

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/concourse-tekton/concourse-tekton/internal/syncbuf"
)

func sh(script string) Cmd {
	return Cmd{Path: "/bin/sh", Args: []string{"-c", script}}
}

func TestRunExitAndStreams(t *testing.T) {
	tests := []struct {
		name       string
		cmd        Cmd
		merge      bool
		wantStatus int
		wantOut    string
		wantErr    string
	}{
		{"success", sh("echo out; echo err >&2"), false, 0, "out\n", "err\n"},
		{"failure", sh("exit 3"), false, 3, "", ""},
		{"merged", sh("echo out; echo err >&2; echo out2"), true, 0, "out\nerr\nout2\n", ""},
		{"stdin", Cmd{Path: "/bin/sh", Args: []string{"-c", "cat"}, Stdin: strings.NewReader(`{"a":1}`)}, false, 0, `{"a":1}`, ""},
		{"killed by a signal", sh("kill -9 $$"), false, 137, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errs syncbuf.Buffer
			c := tt.cmd
			c.Stdout, c.Stderr, c.MergeStderr = &out, &errs, tt.merge
			res, err := Run(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			if res.ExitStatus != tt.wantStatus || res.Interrupted {
				t.Errorf("result = %+v, want status %d", res, tt.wantStatus)
			}
			if out.String() != tt.wantOut || errs.String() != tt.wantErr {
				t.Errorf("stdout %q stderr %q, want %q %q", out.String(), errs.String(), tt.wantOut, tt.wantErr)
			}
		})
	}
}

func TestRunNotFound(t *testing.T) {
	called := false
	_, err := Run(context.Background(), Cmd{Path: filepath.Join(t.TempDir(), "nope"), Started: func() { called = true }})
	if err == nil || !IsNotFound(err) {
		t.Errorf("err = %v, want not found", err)
	}
	if called {
		t.Error("Started was called for a process that never started")
	}
}

// TestStartedBeforeOutput: Started's writes come before anything the process writes, on
// a terminal or on pipes, however fast the process is.
func TestStartedBeforeOutput(t *testing.T) {
	for _, tty := range []bool{false, true} {
		for range 20 {
			var out syncbuf.Buffer
			c := sh("echo one; echo two >&2")
			c.Stdout, c.Stderr, c.MergeStderr, c.TTY = &out, &out, true, tty
			c.Started = func() {
				time.Sleep(time.Millisecond)
				out.Write([]byte("started\n"))
			}
			if res, err := Run(context.Background(), c); err != nil || res.ExitStatus != 0 {
				t.Fatalf("res %+v err %v", res, err)
			}
			if got := out.String(); got != "started\none\ntwo\n" {
				t.Fatalf("tty %v: out = %q, want Started's line first", tty, got)
			}
		}
	}
}

func TestInterruptTermThenKill(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "termed")
	tests := []struct {
		name   string
		script string
		want   int
		term   bool
	}{
		{"exits on SIGTERM", "trap ': > " + marker + "; exit 7' TERM; echo ready; while :; do sleep 0.05; done", 7, true},
		{"ignores SIGTERM, then killed", "trap '' TERM; echo ready; while :; do sleep 0.05; done", 137, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			os.Remove(marker)
			ctx, cancel := context.WithCancelCause(context.Background())
			var out syncbuf.Buffer
			errc := make(chan error, 1)
			var res Result
			start := time.Now()
			go func() {
				var err error
				res, err = Run(ctx, Cmd{Path: "/bin/sh", Args: []string{"-c", tt.script}, Stdout: &out, Grace: time.Second})
				errc <- err
			}()
			waitFor(t, func() bool { return strings.Contains(out.String(), "ready") })
			cancel(errors.New("aborted"))
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
			if !res.Interrupted || res.ExitStatus != tt.want {
				t.Errorf("result = %+v, want interrupted with status %d", res, tt.want)
			}
			if _, err := os.Stat(marker); (err == nil) != tt.term {
				t.Errorf("trap ran: %t, want %t", err == nil, tt.term)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

func TestLeftoverChildrenDoNotHang(t *testing.T) {
	var out syncbuf.Buffer
	start := time.Now()
	res, err := Run(context.Background(), Cmd{Path: "/bin/sh", Args: []string{"-c", "sleep 30 & echo bye"}, Stdout: &out})
	if err != nil || res.ExitStatus != 0 {
		t.Fatalf("res %+v err %v", res, err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v: a background child held the output open", d)
	}
	if out.String() != "bye\n" {
		t.Errorf("out = %q", out.String())
	}
}

func TestAlreadyCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := Run(ctx, sh("echo never"))
	if err != nil || !res.Interrupted {
		t.Errorf("res %+v err %v", res, err)
	}
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestTTY(t *testing.T) {
	if _, _, err := openPTY(); err != nil {
		t.Skipf("no terminal here: %v", err)
	}
	tests := []struct {
		name, script, want string
	}{
		{"a terminal of 500x500", `[ -t 1 ] && [ -t 2 ] && echo terminal; stty size </dev/tty`, "terminal\n500 500\n"},
		{"stderr merged, lines as written", `echo one; echo two >&2; printf 'three\n'`, "one\ntwo\nthree\n"},
		{"stdin is empty, not the terminal", `cat; echo after`, "after\n"},
		{"a background child does not hold the log open", `sleep 30 & echo bye`, "bye\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out syncbuf.Buffer
			start := time.Now()
			res, err := Run(context.Background(), Cmd{Path: "/bin/sh", Args: []string{"-c", tt.script}, Stdout: &out, TTY: true})
			if err != nil || res.ExitStatus != 0 {
				t.Fatalf("res %+v err %v out %q", res, err, out.String())
			}
			if out.String() != tt.want {
				t.Errorf("out = %q, want %q", out.String(), tt.want)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
	t.Run("interrupted", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		var out syncbuf.Buffer
		errc := make(chan error, 1)
		var res Result
		go func() {
			var err error
			res, err = Run(ctx, Cmd{Path: "/bin/sh", Args: []string{"-c", "trap 'echo term; exit 5' TERM; echo ready; while :; do sleep 0.05; done"}, Stdout: &out, TTY: true, Grace: time.Second})
			errc <- err
		}()
		waitFor(t, func() bool { return strings.Contains(out.String(), "ready") })
		cancel()
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		if !res.Interrupted || res.ExitStatus != 5 || !strings.Contains(out.String(), "term") {
			t.Errorf("res %+v out %q", res, out.String())
		}
	})
}
