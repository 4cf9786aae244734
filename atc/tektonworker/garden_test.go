package tektonworker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"code.cloudfoundry.org/garden"
	"code.cloudfoundry.org/garden/client"
	"code.cloudfoundry.org/garden/client/connection"
	"code.cloudfoundry.org/lager/v3/lagertest"
	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/concourse-tekton/concourse-tekton/tektonrun/podexec"
)

// fakeSteps are steps whose sessions run do what their command says: "echo X" writes X
// to stdout, "exit N" ends with status N, "wait" waits to be stopped, anything else is
// not found.
type fakeSteps struct {
	handles []string
	down    atomic.Bool // the API server does not answer: the steps cannot be listed
	mu      sync.Mutex
	started []podexec.InterceptOptions
}

func (f *fakeSteps) ContainerHandles(context.Context) ([]string, error) {
	if f.down.Load() {
		return nil, errors.New("listing steps: connection refused")
	}
	return f.handles, nil
}

func (f *fakeSteps) ContainerOf(_ context.Context, taskRun string) (podexec.Container, error) {
	if !slices.Contains(f.handles, taskRun) {
		return podexec.Container{}, apierrors.NewNotFound(schema.GroupResource{Resource: "taskruns"}, taskRun)
	}
	return podexec.Container{TaskRun: taskRun, Step: "unit", Type: "task", Running: true}, nil
}

func (f *fakeSteps) StartIntercept(_ context.Context, ctr podexec.Container, o podexec.InterceptOptions) (Session, error) {
	f.mu.Lock()
	f.started = append(f.started, o)
	f.mu.Unlock()
	s := &fakeSession{done: make(chan struct{}), stop: make(chan struct{})}
	switch o.Command[0] {
	case "echo":
		go func() {
			fmt.Fprintln(o.Stdout, o.Command[1])
			close(s.done)
		}()
	case "exit":
		var n int
		fmt.Sscan(o.Command[1], &n)
		s.err = &podexec.ExitError{Status: n}
		close(s.done)
	case "cat":
		go func() {
			io.Copy(o.Stdout, o.Stdin)
			close(s.done)
		}()
	case "wait":
		go func() {
			<-s.stop
			s.err = &podexec.ExitError{Status: 129}
			close(s.done)
		}()
	default:
		return nil, &podexec.ExecutableNotFoundError{Command: o.Command[0], Message: "executable file not found in $PATH: " + o.Command[0]}
	}
	return s, nil
}

type fakeSession struct {
	done, stop chan struct{}
	once       sync.Once
	err        error
}

func (s *fakeSession) Wait() error { <-s.done; return s.err }
func (s *fakeSession) Stop()       { s.once.Do(func() { close(s.stop) }) }

// serveGarden serves a Garden of steps and returns a client of it: Concourse's own
// Garden client speaks the same protocol.
func serveGarden(t *testing.T, steps Steps) garden.Client {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	g := &Garden{Steps: steps, Logger: lagertest.NewTestLogger("garden")}
	done := make(chan error, 1)
	go func() { done <- g.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return client.New(connection.New("tcp", l.Addr().String()))
}

// TestGardenServesWhileTheAPIServerIsDown: the server starts without listing the steps
// (the web node must not exit while the API server is down), a list while it is down is
// the client's error, and the steps are there once it answers.
func TestGardenServesWhileTheAPIServerIsDown(t *testing.T) {
	steps := &fakeSteps{handles: []string{"build-1-task-unit"}}
	steps.down.Store(true)
	c := serveGarden(t, steps)
	if err := c.Ping(); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	if _, err := c.Containers(nil); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("Containers while down: %v, want the listing's error", err)
	}
	steps.down.Store(false)
	ctrs, err := c.Containers(nil)
	if err != nil || len(ctrs) != 1 || ctrs[0].Handle() != "build-1-task-unit" {
		t.Errorf("Containers once up: %v, %v; want build-1-task-unit", ctrs, err)
	}
}

// TestGardenRunsSessions: a Garden client finds a step's container among the listed
// ones (as the ATC's does) and runs a process there as an intercept session, with the
// process's command, environment and directory; its output and exit status come back.
func TestGardenRunsSessions(t *testing.T) {
	steps := &fakeSteps{handles: []string{"build-1-task-unit", "build-1-get-repo"}}
	gc := serveGarden(t, steps)
	list, err := gc.Containers(nil)
	if err != nil {
		t.Fatal(err)
	}
	var handles []string
	for _, c := range list {
		handles = append(handles, c.Handle())
	}
	if diff := cmp.Diff(steps.handles, handles); diff != "" {
		t.Errorf("containers (-want +got):\n%s", diff)
	}
	if list, err := gc.Containers(garden.Properties{"concourse:exit-status": "0"}); err != nil || len(list) != 0 {
		t.Errorf("containers with properties: %v, %v; want none", list, err)
	}

	ctr, err := gc.Lookup("build-1-task-unit")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	p, err := ctr.Run(garden.ProcessSpec{Path: "echo", Args: []string{"hello"}, Env: []string{"TERM=xterm"}, Dir: "/tmp/build/x"}, garden.ProcessIO{Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	if status, err := p.Wait(); status != 0 || err != nil {
		t.Errorf("Wait: %d, %v; want 0", status, err)
	}
	if out.String() != "hello\n" {
		t.Errorf("stdout %q, want hello", out.String())
	}
	o := steps.started[0]
	if !slices.Equal(o.Command, []string{"echo", "hello"}) || !slices.Equal(o.Env, []string{"TERM=xterm"}) || o.Dir != "/tmp/build/x" || o.TTY {
		t.Errorf("session options %+v; want the process's command, env and dir, no terminal", o)
	}

	p, err = ctr.Run(garden.ProcessSpec{Path: "exit", Args: []string{"3"}, TTY: &garden.TTYSpec{WindowSize: &garden.WindowSize{Columns: 80, Rows: 24}}}, garden.ProcessIO{})
	if err != nil {
		t.Fatal(err)
	}
	if status, err := p.Wait(); status != 3 || err != nil {
		t.Errorf("Wait: %d, %v; want 3", status, err)
	}
	o = steps.started[1]
	if !o.TTY || o.Sizes == nil {
		t.Fatalf("session options %+v; want a terminal", o)
	}
	if size := o.Sizes.Next(); size == nil || size.Width != 80 || size.Height != 24 {
		t.Errorf("terminal size %+v, want 80x24", size)
	}

	var echoed bytes.Buffer
	p, err = ctr.Run(garden.ProcessSpec{Path: "cat"}, garden.ProcessIO{Stdin: bytes.NewBufferString("from stdin"), Stdout: &echoed})
	if err != nil {
		t.Fatal(err)
	}
	if status, err := p.Wait(); status != 0 || err != nil || echoed.String() != "from stdin" {
		t.Errorf("Wait: %d, %v, stdout %q; want stdin copied", status, err, echoed.String())
	}
}

// TestGardenNotFound: a command the container lacks is Garden's ExecutableNotFoundError
// (fly falls back from bash to sh on it); an unknown handle is no container; a
// container is never made.
func TestGardenNotFound(t *testing.T) {
	gc := serveGarden(t, &fakeSteps{handles: []string{"build-1-task-unit"}})
	ctr, err := gc.Lookup("build-1-task-unit")
	if err != nil {
		t.Fatal(err)
	}
	_, err = ctr.Run(garden.ProcessSpec{Path: "bash"}, garden.ProcessIO{})
	var notFound garden.ExecutableNotFoundError
	if !errors.As(err, &notFound) || notFound.Message != "executable file not found in $PATH: bash" {
		t.Errorf("Run bash: %v (%T); want ExecutableNotFoundError", err, err)
	}
	if _, err := gc.Lookup("build-2-task-unit"); !errors.As(err, new(garden.ContainerNotFoundError)) {
		t.Errorf("Lookup of an unknown handle: %v; want ContainerNotFoundError", err)
	}
	if _, err := gc.Create(garden.ContainerSpec{Handle: "new"}); err == nil {
		t.Error("Create made a container")
	}
}

// TestGardenStopEndsSessions: stopping a container (what the web node does when a
// session's client is gone) ends the sessions running in it, and only those.
func TestGardenStopEndsSessions(t *testing.T) {
	gc := serveGarden(t, &fakeSteps{handles: []string{"a", "b"}})
	run := func(handle string) garden.Process {
		ctr, err := gc.Lookup(handle)
		if err != nil {
			t.Fatal(err)
		}
		p, err := ctr.Run(garden.ProcessSpec{Path: "wait"}, garden.ProcessIO{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	pa, pb := run("a"), run("b")
	ended := make(chan int, 2)
	go func() { s, _ := pa.Wait(); ended <- s }()
	ctr, _ := gc.Lookup("a")
	if err := ctr.Stop(false); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-ended:
		if s != 129 {
			t.Errorf("stopped session: status %d, want the session's 129", s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("stopping the container did not end its session")
	}
	go func() { s, _ := pb.Wait(); ended <- s }()
	select {
	case <-ended:
		t.Error("stopping one container ended another's session")
	case <-time.After(200 * time.Millisecond):
	}
	if err := pb.Signal(garden.SignalTerminate); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("a signal did not end the session")
	}
}
