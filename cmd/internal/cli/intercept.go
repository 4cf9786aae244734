package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/concourse-tekton/concourse-tekton/tektonrun"
	"github.com/concourse-tekton/concourse-tekton/tektonrun/podexec"
	"github.com/concourse-tekton/concourse-tekton/translate"
)

type interceptFlags struct {
	step     string
	stepType string
	attempt  int
	timeout  time.Duration
}

func newIntercept(s *streams) *cobra.Command {
	var f interceptFlags
	var target tektonrun.TargetOptions
	cmd := &cobra.Command{
		Use:   "intercept [BUILD] [-s STEP] [--step-type TYPE] [--attempt N] [-- COMMAND ARGS...]",
		Short: "Open a shell in a step's container, like fly intercept",
		Long: `Run a command (default: bash, else sh) in a step's container, in the step's working
directory with its environment and user, like fly intercept. BUILD is a PipelineRun's name
or PIPELINE/JOB/BUILD; without it, the steps of every build in the namespace are
candidates. When more than one step matches, they are listed, newest first, and you choose
one; with one, the session starts at once.

A running step is entered as it runs. For a step that has ended, a pod is made again from
its own (same image, environment, mounts and security, on the build's volume: inputs and
outputs are there while the build runs, and afterwards for one-off builds; a job build's
volume keeps only its task caches once the build has ended), and deleted when the session
ends or after --timeout, even if this command dies. On a terminal the session has one (raw
mode, window size followed); Ctrl-D ends it. The exit code is the command's.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			build := ""
			dash := cmd.ArgsLenAtDash()
			switch {
			case dash == 1 || dash < 0 && len(args) == 1:
				build = args[0]
			case dash > 1 || dash < 0 && len(args) > 1:
				return errors.New("intercept takes one BUILD; put the command after --")
			}
			var command []string
			if dash >= 0 {
				command = args[dash:]
			}
			return s.intercept(cmd.Context(), build, command, f, target)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.step, "step", "s", "", "the step's name")
	fl.StringVar(&f.stepType, "step-type", "", "the step's type: task, get, put, check, load_var or set_pipeline")
	fl.IntVarP(&f.attempt, "attempt", "a", 0, "the attempt of a step in attempts (1 is the first)")
	fl.DurationVar(&f.timeout, "timeout", time.Hour, "how long a pod made again for a step that has ended lives at most")
	addTargetFlags(cmd, &target)
	return cmd
}

func (s *streams) intercept(ctx context.Context, build string, command []string, f interceptFlags, target tektonrun.TargetOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	// Stopped, it still deletes the pod it made (on a terminal, Ctrl-C goes to the
	// session's command, as a key).
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	filter := podexec.ContainerFilter{Step: f.step, Type: f.stepType, Attempt: f.attempt}
	if build != "" {
		run, err := buildName(build)
		if err != nil {
			return err
		}
		filter.Run = run
	}
	backend, err := newBackend(target, translate.Options{})
	if err != nil {
		return err
	}
	defer backend.Close()
	client := backend.Client()
	ctrs, err := client.Containers(ctx, filter)
	if err != nil {
		return err
	}
	in := bufio.NewReader(s.in)
	ctr, err := s.choose(ctrs, in)
	if err != nil {
		return err
	}
	o := podexec.InterceptOptions{
		Command: command, Stdin: in, Stdout: s.out, Stderr: s.err, Timeout: f.timeout,
		Progress: func(msg string) { fmt.Fprintln(s.err, msg) },
	}
	if restore, sizes, ok := s.rawTerminal(); ok {
		defer restore()
		o.TTY, o.Sizes = true, sizes
	}
	err = client.Intercept(ctx, ctr, o)
	var exit *podexec.ExitError
	if errors.As(err, &exit) {
		return &exitError{code: exit.Status}
	}
	return err
}

// describe is a step as fly lists containers.
func describe(c podexec.Container) string {
	var b strings.Builder
	if c.Job != "" && c.Pipeline != "one-off" {
		fmt.Fprintf(&b, "pipeline: %s, job: %s, ", c.Pipeline, c.Job)
	}
	fmt.Fprintf(&b, "build #%s, step: %s, type: %s", c.Build, c.Step, c.Type)
	if c.Attempt > 0 {
		fmt.Fprintf(&b, ", attempt: %d", c.Attempt)
	}
	if c.Running {
		b.WriteString(", running")
	}
	return b.String()
}

// choose picks the step: the one there is, or the one the user names from the list.
func (s *streams) choose(ctrs []podexec.Container, in *bufio.Reader) (podexec.Container, error) {
	switch len(ctrs) {
	case 0:
		return podexec.Container{}, errors.New("no containers matched your search parameters!\n\nthey may have expired if your build hasn't recently finished")
	case 1:
		return ctrs[0], nil
	}
	for i, c := range ctrs {
		fmt.Fprintf(s.err, "%d: %s\n", i+1, describe(c))
	}
	for {
		fmt.Fprint(s.err, "choose a container: ")
		line, err := in.ReadString('\n')
		n, convErr := strconv.Atoi(strings.TrimSpace(line))
		if convErr == nil && n >= 1 && n <= len(ctrs) {
			return ctrs[n-1], nil
		}
		if err != nil {
			if err == io.EOF {
				return podexec.Container{}, errors.New("no container chosen")
			}
			return podexec.Container{}, err
		}
		fmt.Fprintf(s.err, "invalid selection: choose a number from 1 to %d\n", len(ctrs))
	}
}

// rawTerminal puts a terminal on stdin and stdout into raw mode, and follows its size.
func (s *streams) rawTerminal() (restore func(), sizes remotecommand.TerminalSizeQueue, ok bool) {
	stdin, isFile := s.in.(*os.File)
	stdout, isOut := s.out.(*os.File)
	if !isFile || !isOut || !term.IsTerminal(int(stdin.Fd())) || !term.IsTerminal(int(stdout.Fd())) {
		return nil, nil, false
	}
	state, err := term.MakeRaw(int(stdin.Fd()))
	if err != nil {
		return nil, nil, false
	}
	q := &sizeQueue{fd: int(stdout.Fd()), sizes: make(chan remotecommand.TerminalSize, 1), stop: make(chan struct{})}
	q.start()
	return func() {
		close(q.stop)
		_ = term.Restore(int(stdin.Fd()), state)
	}, q, true
}

// sizeQueue sends the terminal's size at the start and at each SIGWINCH.
type sizeQueue struct {
	fd    int
	sizes chan remotecommand.TerminalSize
	stop  chan struct{}
}

func (q *sizeQueue) start() {
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	send := func() {
		w, h, err := term.GetSize(q.fd)
		if err != nil {
			return
		}
		select {
		case q.sizes <- remotecommand.TerminalSize{Width: uint16(w), Height: uint16(h)}:
		default:
		}
	}
	send()
	go func() {
		defer signal.Stop(winch)
		for {
			select {
			case <-q.stop:
				close(q.sizes)
				return
			case <-winch:
				send()
			}
		}
	}()
}

// Next is the next size, nil once the session is over.
func (q *sizeQueue) Next() *remotecommand.TerminalSize {
	size, ok := <-q.sizes
	if !ok {
		return nil
	}
	return &size
}
