//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The project's CLI, built once per test binary, driven the way a user drives it.
var (
	cliOnce sync.Once
	cliPath string
	cliErr  error
)

// cliBinary builds cmd/concourse-tekton (once) and returns its path. It is built under the
// repository's bin/e2e and moved into place, so that a test binary running at the same
// time keeps the binary it started with and nothing is left in /tmp.
func cliBinary(t testing.TB) string {
	t.Helper()
	cliOnce.Do(func() {
		dir, err := filepath.Abs(filepath.Join("..", "bin", "e2e"))
		if err != nil {
			cliErr = err
			return
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			cliErr = err
			return
		}
		tmp, err := os.MkdirTemp(dir, ".build-*")
		if err != nil {
			cliErr = err
			return
		}
		defer os.RemoveAll(tmp)
		cmd := exec.Command("go", "build", "-o", tmp+"/", "./cmd/concourse-tekton")
		cmd.Dir = ".."
		if out, err := cmd.CombinedOutput(); err != nil {
			cliErr = fmt.Errorf("building the CLI: %v\n%s", err, out)
			return
		}
		cliPath = filepath.Join(dir, "concourse-tekton")
		cliErr = os.Rename(filepath.Join(tmp, "concourse-tekton"), cliPath)
	})
	if cliErr != nil {
		t.Fatal(cliErr)
	}
	return cliPath
}

// cliProc is a running CLI process whose output the test can wait on.
type cliProc struct {
	t    testing.TB
	cmd  *exec.Cmd
	args []string

	mu             sync.Mutex
	stdout, stderr bytes.Buffer
	changed        chan struct{} // closed and replaced whenever output arrives
	done           chan struct{} // closed when the process has exited and its output is read
	exit           int
}

// startCLI starts the CLI with args (from the repository's root, with the test cluster's
// kubeconfig in the environment). The process is killed when ctx is done.
func startCLI(t testing.TB, ctx context.Context, args ...string) *cliProc {
	t.Helper()
	p := &cliProc{t: t, args: args, changed: make(chan struct{}), done: make(chan struct{})}
	p.cmd = exec.CommandContext(ctx, cliBinary(t), args...)
	p.cmd.Dir = ".."
	p.cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfigPath())
	// Interrupt first, as a user's ^C would, and give the build time to end.
	p.cmd.Cancel = func() error { return p.cmd.Process.Signal(os.Interrupt) }
	p.cmd.WaitDelay = time.Minute
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", p, err)
	}
	var copying sync.WaitGroup
	copying.Add(2)
	go p.copy(&copying, &p.stdout, stdout)
	go p.copy(&copying, &p.stderr, stderr)
	go func() {
		copying.Wait()
		err := p.cmd.Wait()
		var exitErr *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &exitErr) && exitErr.ExitCode() >= 0:
			p.exit = exitErr.ExitCode()
		default:
			p.exit = -1
			p.mu.Lock()
			fmt.Fprintf(&p.stderr, "e2e: %v\n", err)
			p.mu.Unlock()
		}
		close(p.done)
	}()
	return p
}

func (p *cliProc) String() string { return "concourse-tekton " + strings.Join(p.args, " ") }

func (p *cliProc) copy(wg *sync.WaitGroup, into *bytes.Buffer, r io.Reader) {
	defer wg.Done()
	s := bufio.NewReader(r)
	for {
		line, err := s.ReadString('\n')
		if line != "" {
			p.mu.Lock()
			into.WriteString(line)
			close(p.changed)
			p.changed = make(chan struct{})
			p.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

// output returns what the process printed so far.
func (p *cliProc) output() (stdout, stderr string, changed <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stdout.String(), p.stderr.String(), p.changed
}

// waitForLine waits until stdout or stderr has the line s, and fails the test if the
// process ends or the timeout passes first.
func (p *cliProc) waitForLine(s string, timeout time.Duration) {
	p.t.Helper()
	p.waitFor(fmt.Sprintf("%q", s), timeout, func(l string) bool { return l == s })
}

// waitFor waits until a line of stdout or stderr matches, and fails the test if the
// process ends or the timeout passes first.
func (p *cliProc) waitFor(what string, timeout time.Duration, match func(line string) bool) {
	p.t.Helper()
	deadline := time.After(timeout)
	for {
		stdout, stderr, changed := p.output()
		if slices.ContainsFunc(lines(stdout+stderr), match) {
			return
		}
		select {
		case <-changed:
		case <-p.done:
			stdout, stderr, _ = p.output()
			p.t.Fatalf("%s ended (exit %d) before printing %s\nstdout:\n%s\nstderr:\n%s", p, p.exit, what, stdout, stderr)
		case <-deadline:
			p.t.Fatalf("%s did not print %s within %v\nstdout:\n%s\nstderr:\n%s", p, what, timeout, stdout, stderr)
		}
	}
}

// interrupt sends SIGINT, as ^C in a terminal does.
func (p *cliProc) interrupt() {
	p.t.Helper()
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		p.t.Fatalf("interrupting %s: %v", p, err)
	}
}

// wait waits for the process to end and returns its exit code and output.
func (p *cliProc) wait() (exit int, stdout, stderr string) {
	<-p.done
	stdout, stderr, _ = p.output()
	return p.exit, stdout, stderr
}

// runCLI runs the CLI to its end.
func runCLI(t testing.TB, ctx context.Context, args ...string) (exit int, stdout, stderr string) {
	t.Helper()
	return startCLI(t, ctx, args...).wait()
}

var ansi = regexp.MustCompile("\x1b\\[[0-9;]*m")

// lines splits output into lines without colours or trailing spaces.
func lines(out string) []string {
	var ls []string
	for _, l := range strings.Split(ansi.ReplaceAllString(out, ""), "\n") {
		ls = append(ls, strings.TrimRight(l, " \r"))
	}
	return ls
}

// checkLines reports the lines of want that out lacks and the lines of notWant it has.
// Lines are compared whole, without colours: a step's output line "done" is not the
// line "running echo done" that announces its command.
func checkLines(t *testing.T, out string, want, notWant []string) {
	t.Helper()
	got := lines(out)
	var missing, unwanted []string
	for _, w := range want {
		if !slices.Contains(got, w) {
			missing = append(missing, w)
		}
	}
	for _, n := range notWant {
		if slices.Contains(got, n) {
			unwanted = append(unwanted, n)
		}
	}
	if len(missing) > 0 || len(unwanted) > 0 {
		t.Errorf("output lacks lines %q and has lines it must not have %q; output:\n%s", missing, unwanted, out)
	}
}
