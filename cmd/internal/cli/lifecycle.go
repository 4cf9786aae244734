package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/concourse-tekton/concourse-tekton/tektonrun"
)

func newLand(s *streams) *cobra.Command {
	var o tektonrun.TargetOptions
	var undo bool
	cmd := &cobra.Command{
		Use:   "land [--undo]",
		Short: "Take no new build in the namespace; running builds finish (fly land-worker)",
		Long: `Land the target, as fly land-worker lands a worker: no new build starts there (run,
execute, and a web node's builds wait), the running ones finish; check-target then says
landing, and landed once none runs. --undo takes builds again.`,
		Args: cobra.NoArgs,
		RunE: s.onTarget(&o, func(ctx context.Context, t *tektonrun.Target) error {
			var err error
			if undo {
				err = t.Resume(ctx)
			} else {
				err = t.Land(ctx)
			}
			if err != nil {
				return err
			}
			return s.printStatus(ctx, t)
		}),
	}
	addTargetFlags(cmd, &o)
	cmd.Flags().BoolVar(&undo, "undo", false, "take builds again")
	return cmd
}

func newRetire(s *streams) *cobra.Command {
	var o tektonrun.TargetOptions
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "retire [--timeout D]",
		Short: "Land the namespace, then remove everything builds made there (fly retire-worker)",
		Long: `Retire the target, as fly retire-worker retires a worker: it lands (no new build
starts), waits until the running builds end, then deletes everything concourse-tekton made
in the namespace (builds, their TaskRuns, pods, volumes, Secrets and event archives,
Pipelines, Tasks) and waits until it is gone. Afterwards the namespace holds nothing of
ours, and may take builds again. --timeout bounds the wait (0: none); Ctrl-C stops it,
leaving the target retiring.`,
		Args: cobra.NoArgs,
		RunE: s.onTarget(&o, func(ctx context.Context, t *tektonrun.Target) error {
			if timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			progress := func(format string, args ...any) {
				fmt.Fprintf(s.err, "%s: "+format+"\n", append([]any{t.Name}, args...)...)
			}
			if err := t.Retire(ctx, 2*time.Second, progress); err != nil {
				return err
			}
			fmt.Fprintf(s.out, "target %s is retired: nothing of ours is left in namespace %s\n", t.Name, t.Namespace)
			return nil
		}),
	}
	addTargetFlags(cmd, &o)
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "give up after this long (0: wait as long as builds run)")
	return cmd
}

// onTarget is a command's RunE that opens the target o names and runs f on it.
func (s *streams) onTarget(o *tektonrun.TargetOptions, f func(context.Context, *tektonrun.Target) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		t, err := dialTarget(*o)
		if err != nil {
			return err
		}
		return f(cmd.Context(), t)
	}
}

// printStatus prints the target's state in a line.
func (s *streams) printStatus(ctx context.Context, t *tektonrun.Target) error {
	st, err := t.Status(ctx)
	if err != nil {
		return err
	}
	switch st.State {
	case tektonrun.StateRunning:
		fmt.Fprintf(s.out, "target %s is running: it takes builds (%d running)\n", t.Name, st.Running)
	case tektonrun.StateLanded:
		fmt.Fprintf(s.out, "target %s is landed: it takes no new build, and none runs\n", t.Name)
	default:
		fmt.Fprintf(s.out, "target %s is %s: it takes no new build; %d running\n", t.Name, st.State, st.Running)
	}
	return nil
}
