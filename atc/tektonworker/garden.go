package tektonworker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"code.cloudfoundry.org/garden"
	"code.cloudfoundry.org/garden/server"
	"code.cloudfoundry.org/lager/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/concourse-tekton/concourse-tekton/tektonrun"
	"github.com/concourse-tekton/concourse-tekton/tektonrun/podexec"
)

// Steps are a target's step containers, as intercept sessions reach them:
// *tektonrun.Client, through ClientSteps.
type Steps interface {
	// ContainerOf is the step a TaskRun runs: an error apierrors.IsNotFound knows when
	// there is none.
	ContainerOf(ctx context.Context, taskRun string) (podexec.Container, error)
	// StartIntercept starts a command in a step's container (tektonrun.Client's).
	StartIntercept(ctx context.Context, ctr podexec.Container, o podexec.InterceptOptions) (Session, error)
	// ContainerHandles are the TaskRuns of the steps whose pods are there.
	ContainerHandles(ctx context.Context) ([]string, error)
}

// Session is a command started in a step's container: *podexec.Session.
type Session interface {
	Wait() error
	Stop()
}

// ClientSteps are the steps of a tektonrun.Client's target.
func ClientSteps(c *tektonrun.Client) Steps { return clientSteps{c} }

type clientSteps struct{ c *tektonrun.Client }

func (s clientSteps) ContainerOf(ctx context.Context, taskRun string) (podexec.Container, error) {
	return s.c.ContainerOf(ctx, taskRun)
}

func (s clientSteps) ContainerHandles(ctx context.Context) ([]string, error) {
	return s.c.ContainerHandles(ctx)
}

func (s clientSteps) StartIntercept(ctx context.Context, ctr podexec.Container, o podexec.InterceptOptions) (Session, error) {
	sess, err := s.c.StartIntercept(ctx, ctr, o)
	if err != nil {
		return nil, err
	}
	return sess, nil
}

// Garden is the Garden server of a target's worker: the web node reaches a worker's
// containers through its Garden server (fly intercept, fly hijack), and a target's
// containers are its steps' pods, each known to the ATC by its TaskRun's name (the
// handle the build's follower saves its container with: see tektonengine). A process
// run in one is an intercept session (tektonrun.Client.StartIntercept): in the step's
// container while it runs, else in a pod made again from its own, deleted when the
// process ends. It makes and destroys no container: pods are its builds', and go with
// them.
type Garden struct {
	Steps Steps
	// Timeout is how long a pod made again for a finished step lives at most, even if
	// its session is never ended (zero: an hour).
	Timeout time.Duration
	Logger  lager.Logger

	processes atomic.Int64
	starting  atomic.Bool // Serve is setting the server up: Containers lists none

	mu       sync.Mutex
	sessions map[string]map[*stepProcess]bool // handle → sessions running in it
}

var _ garden.Backend = (*Garden)(nil)

// Serve serves the Garden API on l until ctx ends: on a loopback address, to this
// process's user only (see ownUserListener).
func (g *Garden) Serve(ctx context.Context, l net.Listener) error {
	l = newOwnUserListener(l, g.Logger)
	srv := server.New("tcp", l.Addr().String(), 0, 10*time.Second, g, g.Logger)
	// The server lists the containers once, to arm the grace times of those that have
	// one. A step's pod has none (GraceTime), so that list is taken as empty: the server
	// starts, and the web node with it, while the API server does not answer.
	g.starting.Store(true)
	err := srv.SetupBomberman()
	g.starting.Store(false)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	select {
	case <-ctx.Done():
		srv.Stop()
		<-done
		return nil
	case err := <-done:
		return err
	}
}

// errNoContainers answers what a worker whose containers are its builds' pods cannot do.
var errNoContainers = errors.New("a Kubernetes target's containers are its builds' pods: it makes and streams none of its own")

func (g *Garden) Ping() error                              { return nil }
func (g *Garden) Capacity() (garden.Capacity, error)       { return garden.Capacity{}, nil }
func (g *Garden) Start() error                             { return nil }
func (g *Garden) Stop() error                              { return nil }
func (g *Garden) GraceTime(garden.Container) time.Duration { return 0 }

func (g *Garden) Create(garden.ContainerSpec) (garden.Container, error) { return nil, errNoContainers }

// Destroy does nothing: a step's pod goes with its build's run (gc).
func (g *Garden) Destroy(string) error { return nil }

// Containers lists the steps whose pods are there (the ATC's Garden client looks a
// container up in that list): by handle only, looked up again when used. Containers
// have no properties: none has those asked for.
func (g *Garden) Containers(props garden.Properties) ([]garden.Container, error) {
	if len(props) > 0 || g.starting.Load() {
		return nil, nil
	}
	handles, err := g.Steps.ContainerHandles(context.Background())
	if err != nil {
		return nil, err
	}
	out := make([]garden.Container, len(handles))
	for i, h := range handles {
		out[i] = &stepContainer{garden: g, ctr: podexec.Container{TaskRun: h}}
	}
	return out, nil
}

func (g *Garden) BulkInfo(handles []string) (map[string]garden.ContainerInfoEntry, error) {
	out := map[string]garden.ContainerInfoEntry{}
	for _, h := range handles {
		c, err := g.Lookup(h)
		if err != nil {
			out[h] = garden.ContainerInfoEntry{Err: garden.NewError(err.Error())}
			continue
		}
		info, _ := c.Info()
		out[h] = garden.ContainerInfoEntry{Info: info}
	}
	return out, nil
}

func (g *Garden) BulkMetrics([]string) (map[string]garden.ContainerMetricsEntry, error) {
	return map[string]garden.ContainerMetricsEntry{}, nil
}

// Lookup finds the step whose TaskRun is handle.
func (g *Garden) Lookup(handle string) (garden.Container, error) {
	ctr, err := g.Steps.ContainerOf(context.Background(), handle)
	if apierrors.IsNotFound(err) {
		return nil, garden.ContainerNotFoundError{Handle: handle}
	}
	if err != nil {
		return nil, err
	}
	return &stepContainer{garden: g, ctr: ctr}, nil
}

// stepContainer is a step's container.
type stepContainer struct {
	garden *Garden
	ctr    podexec.Container
}

var _ garden.Container = (*stepContainer)(nil)

func (c *stepContainer) Handle() string { return c.ctr.TaskRun }

func (c *stepContainer) Info() (garden.ContainerInfo, error) {
	state := "stopped"
	if c.ctr.Running {
		state = "active"
	}
	return garden.ContainerInfo{State: state, Properties: garden.Properties{}}, nil
}

// Run starts an intercept session running spec's command in the step's container:
// spec.Dir, when set, in place of the step's working directory, spec.Env added to its
// environment, as the step's user (spec.User is the one the ATC recorded: none).
func (c *stepContainer) Run(spec garden.ProcessSpec, pio garden.ProcessIO) (garden.Process, error) {
	p := &stepProcess{id: spec.ID}
	if p.id == "" {
		p.id = "intercept-" + strconv.FormatInt(c.garden.processes.Add(1), 10)
	}
	o := podexec.InterceptOptions{
		Command: append([]string{spec.Path}, spec.Args...),
		Env:     spec.Env,
		Dir:     spec.Dir,
		Stdin:   pio.Stdin,
		Stdout:  orDiscard(pio.Stdout),
		Stderr:  orDiscard(pio.Stderr),
		Timeout: c.garden.Timeout,
	}
	if spec.TTY != nil {
		p.sizes = newSizeQueue()
		o.TTY, o.Sizes = true, p.sizes
		if ws := spec.TTY.WindowSize; ws != nil {
			p.sizes.push(ws)
		}
	}
	sess, err := c.garden.Steps.StartIntercept(context.Background(), c.ctr, o)
	var notFound *podexec.ExecutableNotFoundError
	if errors.As(err, &notFound) {
		return nil, garden.ExecutableNotFoundError{Message: notFound.Message}
	}
	if err != nil {
		return nil, err
	}
	p.session = sess
	c.garden.track(c.ctr.TaskRun, p)
	c.garden.Logger.Info("intercepting", lager.Data{"step": c.ctr.Step, "taskrun": c.ctr.TaskRun, "running": c.ctr.Running, "process": p.id})
	return p, nil
}

// Stop ends the sessions this server runs in the container (the web node stops a
// container when the client of a session in it is gone), not the step's own process:
// that is its build's to end.
func (c *stepContainer) Stop(bool) error {
	for _, p := range c.garden.running(c.ctr.TaskRun) {
		p.session.Stop()
	}
	return nil
}

// Attach finds no process: a session's stream is its client's, gone with it.
func (c *stepContainer) Attach(id string, _ garden.ProcessIO) (garden.Process, error) {
	return nil, garden.ProcessNotFoundError{ProcessID: id}
}

func (c *stepContainer) StreamIn(garden.StreamInSpec) error { return errNoContainers }
func (c *stepContainer) StreamOut(garden.StreamOutSpec) (io.ReadCloser, error) {
	return nil, errNoContainers
}
func (c *stepContainer) CurrentBandwidthLimits() (garden.BandwidthLimits, error) {
	return garden.BandwidthLimits{}, nil
}
func (c *stepContainer) CurrentCPULimits() (garden.CPULimits, error) { return garden.CPULimits{}, nil }
func (c *stepContainer) CurrentDiskLimits() (garden.DiskLimits, error) {
	return garden.DiskLimits{}, nil
}
func (c *stepContainer) CurrentMemoryLimits() (garden.MemoryLimits, error) {
	return garden.MemoryLimits{}, nil
}
func (c *stepContainer) NetIn(uint32, uint32) (uint32, uint32, error) { return 0, 0, errNoContainers }
func (c *stepContainer) NetOut(garden.NetOutRule) error               { return errNoContainers }
func (c *stepContainer) BulkNetOut([]garden.NetOutRule) error         { return errNoContainers }
func (c *stepContainer) Metrics() (garden.Metrics, error)             { return garden.Metrics{}, nil }
func (c *stepContainer) SetGraceTime(time.Duration) error             { return nil }
func (c *stepContainer) Properties() (garden.Properties, error)       { return garden.Properties{}, nil }
func (c *stepContainer) SetProperty(string, string) error             { return nil }
func (c *stepContainer) RemoveProperty(string) error                  { return nil }

func (c *stepContainer) Property(name string) (string, error) {
	return "", fmt.Errorf("container %s has no property %s", c.ctr.TaskRun, name)
}

// track records a session running in a container, until it ends.
func (g *Garden) track(handle string, p *stepProcess) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.sessions == nil {
		g.sessions = map[string]map[*stepProcess]bool{}
	}
	if g.sessions[handle] == nil {
		g.sessions[handle] = map[*stepProcess]bool{}
	}
	g.sessions[handle][p] = true
	go func() {
		_ = p.session.Wait()
		g.mu.Lock()
		defer g.mu.Unlock()
		delete(g.sessions[handle], p)
		if len(g.sessions[handle]) == 0 {
			delete(g.sessions, handle)
		}
	}()
}

// running are the sessions running in a container.
func (g *Garden) running(handle string) []*stepProcess {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []*stepProcess
	for p := range g.sessions[handle] {
		out = append(out, p)
	}
	return out
}

// stepProcess is an intercept session, as a Garden process.
type stepProcess struct {
	id      string
	session Session
	sizes   *sizeQueue // nil: no terminal
}

func (p *stepProcess) ID() string { return p.id }

// Wait returns the command's exit status; an error when the session broke.
func (p *stepProcess) Wait() (int, error) {
	err := p.session.Wait()
	if p.sizes != nil {
		p.sizes.close()
	}
	var exit *podexec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &exit):
		return exit.Status, nil
	}
	return -1, err
}

func (p *stepProcess) SetTTY(spec garden.TTYSpec) error {
	if p.sizes != nil && spec.WindowSize != nil {
		p.sizes.push(spec.WindowSize)
	}
	return nil
}

// Signal ends the session, whichever the signal: its stream is closed, which hangs up
// a command on a terminal, and a pod made for it is deleted.
func (p *stepProcess) Signal(garden.Signal) error {
	p.session.Stop()
	return nil
}

// sizeQueue hands a session's terminal the latest size its client has: the queue
// remotecommand reads.
type sizeQueue struct {
	mu     sync.Mutex
	next   *remotecommand.TerminalSize
	ready  chan struct{} // has a value when next is set
	closed chan struct{}
	once   sync.Once
}

var _ remotecommand.TerminalSizeQueue = (*sizeQueue)(nil)

func newSizeQueue() *sizeQueue {
	return &sizeQueue{ready: make(chan struct{}, 1), closed: make(chan struct{})}
}

func (q *sizeQueue) push(ws *garden.WindowSize) {
	q.mu.Lock()
	q.next = &remotecommand.TerminalSize{Width: ws.Columns, Height: ws.Rows}
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// Next waits for a size; nil once the session has ended and no size is left.
func (q *sizeQueue) Next() *remotecommand.TerminalSize {
	select {
	case <-q.ready:
		q.mu.Lock()
		defer q.mu.Unlock()
		return q.next
	default:
	}
	select {
	case <-q.ready:
		q.mu.Lock()
		defer q.mu.Unlock()
		return q.next
	case <-q.closed:
		return nil
	}
}

func (q *sizeQueue) close() { q.once.Do(func() { close(q.closed) }) }

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}
