package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// DefaultGrace is how long a process has to exit after SIGTERM before SIGKILL (Concourse's
// 10 s).
const DefaultGrace = 10 * time.Second

// drainTimeout bounds how long output is still read after the process exited, for when a
// process it left behind outside its group keeps the pipe open.
const drainTimeout = 2 * time.Second

// Cmd is a process to run.
type Cmd struct {
	Path  string
	Args  []string
	Dir   string
	Env   []string
	Stdin io.Reader
	// Stdout receives the process's stdout, and its stderr too when MergeStderr is set
	// (a task's TTY merges them); otherwise Stderr receives stderr.
	Stdout      io.Writer
	Stderr      io.Writer
	MergeStderr bool
	// TTY gives the process a terminal (ttyRows×ttyCols) as its stdout and stderr, as
	// Concourse gives a task; the output is relayed to Stdout. Where no terminal can be
	// had, stdout and stderr are merged into one pipe instead.
	TTY bool
	// Credential, when set, is the user and groups the process runs as.
	Credential *syscall.Credential
	// Grace is the time between SIGTERM and SIGKILL; zero means DefaultGrace.
	Grace time.Duration
	// Started, when set, is called once the process started, before any of its output is
	// relayed; never for a process that could not be started.
	Started func()
}

// Result is how the process ended.
type Result struct {
	// ExitStatus is the exit code, or 128+N for a process killed by signal N (the shell's
	// and runc's convention).
	ExitStatus int
	// Interrupted is set when the context ended the process; context.Cause tells why.
	Interrupted bool
}

// Run runs the process and waits for it. The error is for a process that could not be
// started; a process that ran and exited non-zero is a Result.
func Run(ctx context.Context, c Cmd) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{Interrupted: true}, nil
	}
	cmd := exec.Command(c.Path, c.Args...)
	cmd.Dir = c.Dir
	cmd.Env = c.Env
	cmd.Stdin = c.Stdin
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: c.Credential}

	// readers are what we relay from; writers are the child's ends, which we close once
	// it has them.
	var readers, writers []*os.File
	var copiers sync.WaitGroup
	// The copiers relay nothing before the process started and Started was called.
	relaying := make(chan struct{})
	relayFrom := func(r *os.File, dst io.Writer) {
		readers = append(readers, r)
		copiers.Add(1)
		go func() {
			defer copiers.Done()
			<-relaying
			// A write error (our own stdout gone) must not block the child: keep draining.
			// A terminal's end reads EIO once the child's side is closed: that is its EOF.
			if _, err := io.Copy(dst, r); err != nil {
				_, _ = io.Copy(io.Discard, r)
			}
		}()
	}
	relay := func(dst io.Writer) (*os.File, error) {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, fmt.Errorf("creating a pipe: %w", err)
		}
		writers = append(writers, w)
		relayFrom(r, dst)
		return w, nil
	}
	closeAll := func() {
		for _, f := range append(readers, writers...) {
			f.Close()
		}
	}
	fail := func(err error) (Result, error) {
		closeAll()
		close(relaying)
		copiers.Wait()
		return Result{}, err
	}
	if c.TTY {
		if master, slave, err := openPTY(); err == nil {
			writers = append(writers, slave)
			relayFrom(master, orDiscard(c.Stdout))
			cmd.Stdout, cmd.Stderr = slave, slave
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 1, Credential: c.Credential}
		} else {
			c.MergeStderr = true
		}
	}
	if cmd.Stdout == nil {
		out, err := relay(orDiscard(c.Stdout))
		if err != nil {
			return fail(err)
		}
		cmd.Stdout = out
		cmd.Stderr = out
		if !c.MergeStderr {
			if cmd.Stderr, err = relay(orDiscard(c.Stderr)); err != nil {
				return fail(err)
			}
		}
	}
	if err := cmd.Start(); err != nil {
		return fail(fmt.Errorf("starting %s: %w", c.Path, err))
	}
	// The child has its copies of the write ends: ours must go for the reads to end.
	for _, w := range writers {
		w.Close()
	}
	if c.Started != nil {
		c.Started()
	}
	close(relaying)

	pgid := cmd.Process.Pid
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	grace := c.Grace
	if grace <= 0 {
		grace = DefaultGrace
	}
	var res Result
	select {
	case <-done:
	case <-ctx.Done():
		res.Interrupted = true
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(grace):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			<-done
		}
	}
	// What the process left running in its group would outlive its container: stop it.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	for _, r := range readers {
		_ = r.SetReadDeadline(time.Now().Add(drainTimeout))
	}
	copiers.Wait()
	for _, r := range readers {
		r.Close()
	}
	res.ExitStatus = exitStatus(cmd.ProcessState)
	return res, nil
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

func exitStatus(ps *os.ProcessState) int {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// IsNotFound tells whether a start error means the executable does not exist.
func IsNotFound(err error) bool {
	return errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist)
}
