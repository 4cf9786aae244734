package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/concourse-tekton/concourse-tekton/cmd/internal/render"
	"github.com/concourse-tekton/concourse-tekton/concourse/event"
	"github.com/concourse-tekton/concourse-tekton/concourse/planner"
	"github.com/concourse-tekton/concourse-tekton/tektonrun"
	"github.com/concourse-tekton/concourse-tekton/tektonrun/buildevents"
	"github.com/concourse-tekton/concourse-tekton/translate"
)

// exitDetached is the exit code when a second Ctrl-C leaves a build running.
const exitDetached = 130

// watchFlags say how a build's events are shown.
type watchFlags struct {
	json    bool
	noColor bool
}

func (w *watchFlags) register(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&w.json, "json", false, "print the events as the ATC's envelopes, one JSON object per line")
	cmd.Flags().BoolVar(&w.noColor, "no-color", false, "no colours or bold, even on a terminal")
}

func newRun(s *streams) *cobra.Command {
	var f convertFlags
	var target tektonrun.TargetOptions
	var wf watchFlags
	var job string
	var watch bool
	cmd := &cobra.Command{
		Use:   "run PIPELINE -j JOB [-w]",
		Short: "Run a build of a job on the cluster, like fly trigger-job",
		Long: `Compile a job of a pipeline, start a build of it on the cluster (a PipelineRun in the
namespace), and with -w follow it like fly trigger-job -w: its output, then its status.
The exit code is fly's: the exit status of the build's last task when it is not 0, else
0 succeeded, 1 failed, 2 errored, 3 aborted. Ctrl-C aborts the
build (its on_abort and ensure hooks run); a second Ctrl-C detaches, leaving it running.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if job == "" {
				return errors.New("no job given: use -j JOB")
			}
			f.mountRunnerByDefault(cmd)
			return s.run(cmd.Context(), args[0], job, watch, &f, target, wf)
		},
	}
	cmd.Flags().StringVarP(&job, "job", "j", "", "the job to run")
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "follow the build until it ends, and exit with its status")
	cmd.Flags().StringVar(&f.build, "build", "", "the build's name (default: the job's next build number); running a build that exists attaches to it")
	f.registerCompile(cmd)
	cmd.Flags().Lookup("runner-image-volume").Usage = runnerVolumeRunUsage
	wf.register(cmd)
	addTargetFlags(cmd, &target)
	return cmd
}

func (s *streams) run(ctx context.Context, path, job string, watch bool, f *convertFlags, to tektonrun.TargetOptions, wf watchFlags) error {
	if ctx == nil {
		ctx = context.Background()
	}
	p, opts, used, err := s.loadVars(path, f)
	if err != nil {
		return err
	}
	b, err := planner.PlanBuild(p, job, planner.Options{ManuallyTriggered: true})
	if err != nil {
		return err
	}
	t, err := dialTarget(to)
	if err != nil {
		return err
	}
	backend := f.newBackend(t, opts)
	defer backend.Close()
	// Ctrl-C from the moment the build may exist aborts it, rather than killing us.
	var signals chan os.Signal
	if watch {
		signals = notifySignals()
		defer signal.Stop(signals)
	}
	build, err := backend.Run(ctx, b.Plan, tektonrun.BuildMeta{Team: opts.Team, Pipeline: opts.Pipeline, Job: job, Build: opts.Build, Retention: b.Retention})
	var unsupported *translate.UnsupportedError
	if errors.As(err, &unsupported) {
		return errors.New(stepError(p, b.Paths, job, unsupported))
	}
	if err != nil {
		return err
	}
	for _, w := range build.Warnings {
		fmt.Fprintf(s.err, "warning: %s\n", w)
	}
	if build.Compiled != nil {
		for _, w := range build.Compiled.Warnings {
			fmt.Fprintf(s.err, "warning: %s\n", stepWarning(p, b.Paths, job, w))
		}
	}
	if !build.Existed {
		held, err := varsHeld(build.Compiled.Objects(), used)
		if err != nil {
			return err
		}
		s.warnPlainText(held)
	}
	verb := "started"
	if build.Existed {
		verb = "attached to"
	}
	m := build.Meta
	fmt.Fprintf(s.err, "%s %s/%s #%s (pipelinerun %s/%s)\n", verb, m.Pipeline, m.Job, m.Build, build.Namespace, build.Name)
	if !watch {
		return nil
	}
	return s.watch(ctx, build, wf, signals)
}

// notifySignals catches Ctrl-C and SIGTERM.
func notifySignals() chan os.Signal {
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	return signals
}

// newBackend connects to the target; opts say how plans are compiled.
func newBackend(to tektonrun.TargetOptions, opts translate.Options) (*tektonrun.Backend, error) {
	t, err := dialTarget(to)
	if err != nil {
		return nil, err
	}
	return tektonrun.NewBackend(t, opts), nil
}

// watch renders a build's events until it ends and returns its exit code. The first
// Ctrl-C (or SIGTERM) aborts the build and goes on watching it end; the second detaches.
func (s *streams) watch(ctx context.Context, build *tektonrun.Build, wf watchFlags, signals chan os.Signal) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if signals == nil {
		signals = notifySignals()
		defer signal.Stop(signals)
	}
	detached := make(chan struct{})
	go func() {
		select {
		case <-signals:
		case <-ctx.Done():
			return
		}
		fmt.Fprintf(s.err, "aborting build %s (Ctrl-C again to detach)\n", build.Name)
		go func() {
			if err := build.Abort(ctx); err != nil && ctx.Err() == nil {
				fmt.Fprintf(s.err, "error: %v\n", err)
			}
		}()
		select {
		case <-signals:
			close(detached)
			cancel()
		case <-ctx.Done():
		}
	}()
	emit := s.emitter(wf)
	var exit render.Exit
	status, err := build.Events(ctx, buildevents.Cursor{}, func(e buildevents.Event) error {
		if e.Pipeline != nil {
			// No ATC sets it here: say what a set_pipeline step would set.
			for _, l := range e.Pipeline.Logs() {
				if err := emit(l); err != nil {
					return err
				}
			}
			return nil
		}
		exit.Observe(e.Event)
		return emit(e.Event)
	})
	select {
	case <-detached:
		fmt.Fprintf(s.err, "detached: build %s goes on; follow it with `concourse-tekton events %s -n %s`\n", build.Name, build.Name, build.Namespace)
		return &exitError{code: exitDetached}
	default:
	}
	if err != nil {
		return err
	}
	// The final status is the last event; a follower that ended without it (it cannot
	// have, but the exit code must not say succeeded then) takes the status it returned.
	exit.Observe(event.Status{Status: status})
	if code := exit.Code(); code != 0 {
		return &exitError{code: code}
	}
	return nil
}

// emitter writes events as fly does, or as JSON envelopes.
func (s *streams) emitter(wf watchFlags) func(event.Event) error {
	if wf.json {
		return render.NewJSONWriter(s.out, 0).Write
	}
	return render.New(s.out, render.Options{Color: !wf.noColor && isTerminal(s.out)}).Render
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// buildName is a PipelineRun's name, or the name of PIPELINE/JOB/BUILD's.
func buildName(arg string) (string, error) {
	if !strings.Contains(arg, "/") {
		return arg, nil
	}
	parts := strings.Split(arg, "/")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return "", fmt.Errorf("invalid build %q: use the PipelineRun's name or PIPELINE/JOB/BUILD", arg)
	}
	return translate.RunName(parts[0], parts[1], parts[2]), nil
}

// onBuild runs fn on the build named by arg, on the target.
func onBuild(cmd *cobra.Command, arg string, target tektonrun.TargetOptions, fn func(context.Context, *tektonrun.Build) error) error {
	run, err := buildName(arg)
	if err != nil {
		return err
	}
	backend, err := newBackend(target, translate.Options{})
	if err != nil {
		return err
	}
	defer backend.Close()
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	return fn(ctx, backend.Attach(run))
}

func newEvents(s *streams) *cobra.Command {
	var target tektonrun.TargetOptions
	var wf watchFlags
	cmd := &cobra.Command{
		Use:   "events BUILD",
		Short: "Follow a build's events from its start, like fly watch",
		Long: `Print a build's events from its start and follow it until it ends, like fly watch;
BUILD is its PipelineRun's name or PIPELINE/JOB/BUILD. The exit code is the build's, as
fly's: the exit status of the build's last task when it is not 0, else 0 succeeded,
1 failed, 2 errored, 3 aborted.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return onBuild(cmd, args[0], target, func(ctx context.Context, build *tektonrun.Build) error {
				return s.watch(ctx, build, wf, nil)
			})
		},
	}
	wf.register(cmd)
	addTargetFlags(cmd, &target)
	return cmd
}

func newAbort(s *streams) *cobra.Command {
	var target tektonrun.TargetOptions
	cmd := &cobra.Command{
		Use:   "abort BUILD",
		Short: "Abort a running build, like fly abort-build",
		Long: `Abort a running build: its running steps are interrupted, its on_abort and ensure hooks
run, and it ends aborted. BUILD is its PipelineRun's name or PIPELINE/JOB/BUILD.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return onBuild(cmd, args[0], target, func(ctx context.Context, build *tektonrun.Build) error {
				if err := build.Abort(ctx); err != nil {
					return err
				}
				fmt.Fprintf(s.err, "build %s: abort requested\n", build.Name)
				return nil
			})
		},
	}
	addTargetFlags(cmd, &target)
	return cmd
}
