package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/concourse-tekton/concourse-tekton/gc"
	"github.com/concourse-tekton/concourse-tekton/tektonrun"
)

func newGC(s *streams) *cobra.Command {
	var o tektonrun.TargetOptions
	var output string
	opts := gc.Options{Rules: gc.DefaultRules}
	cmd := &cobra.Command{
		Use:   "gc [flags]",
		Short: "Delete the builds beyond their job's build_log_retention, and what no build needs",
		Long: `Delete from the namespace what Concourse's garbage collector would: the builds of a job
beyond its build_log_retention (or the defaults below), with their TaskRuns, pods and
volumes; the pods of builds that ended (their events archived first, so that "events"
still prints their logs); build volumes no build needs; intercept and transfer pods whose
session ended; the shared resource caches no build used for --resource-cache-retention;
and, with --image-registry, the images that deleted builds pushed and the resource caches
no team's index names. Never a
running build, nor the volume a job's next build takes its caches from, nor, until
--failed-grace-period ends, the pods of a job's latest build when it failed (to intercept).

It prints what it deleted and what it kept, and why; --dry-run deletes nothing. Safe to run
at any time, for example every few minutes from a CronJob (see the README). The exit status
is 1 when a deletion failed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return s.gc(cmd.Context(), o, opts, output)
		},
	}
	addTargetFlags(cmd, &o)
	fl := cmd.Flags()
	fl.BoolVar(&opts.DryRun, "dry-run", false, "decide and print, delete nothing")
	fl.StringVarP(&output, "output", "o", "", "print the report as json or yaml instead of lines")
	fl.IntVar(&opts.Defaults.DefaultBuilds, "default-build-logs-to-retain", 0, "builds a job that sets no build_log_retention keeps (0: all)")
	fl.IntVar(&opts.Defaults.DefaultDays, "default-days-to-retain-build-logs", 0, "days of builds a job that sets no build_log_retention keeps (0: all)")
	fl.IntVar(&opts.Defaults.MaxBuilds, "max-build-logs-to-retain", 0, "the most builds any job keeps, whatever it sets (0: no cap)")
	fl.IntVar(&opts.Defaults.MaxDays, "max-days-to-retain-build-logs", 0, "the most days of builds any job keeps, whatever it sets (0: no cap)")
	fl.DurationVar(&opts.FailedGrace, "failed-grace-period", opts.FailedGrace, "how long the pods of a job's latest build, when it failed, stay to be intercepted (0: until the job's next build ends)")
	fl.DurationVar(&opts.OneOffGrace, "one-off-grace-period", opts.OneOffGrace, "how long the pods of a one-off build stay after it ended")
	fl.BoolVar(&opts.OneOffsEnd, "delete-one-off-builds", false, "delete one-off builds (execute) once they ended for --one-off-grace-period (at least 10m); by default they are kept, as Concourse keeps their logs")
	fl.StringVar(&opts.ImageRegistry, "image-registry", "", "the registry (HOST[:PORT][/PATH]) the builds push image artifacts and resource caches to: delete there the images of deleted builds and the caches no index names (the registry must allow deletes)")
	fl.DurationVar(&opts.ResourceCacheTTL, "resource-cache-retention", opts.ResourceCacheTTL, "how long a resource cache shared by a team's jobs stays once no build used it (0: for ever)")
	return cmd
}

func (s *streams) gc(ctx context.Context, o tektonrun.TargetOptions, opts gc.Options, output string) error {
	marshal, err := outputFormat(output)
	if err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		n    int
	}{{"--default-build-logs-to-retain", opts.Defaults.DefaultBuilds}, {"--default-days-to-retain-build-logs", opts.Defaults.DefaultDays},
		{"--max-build-logs-to-retain", opts.Defaults.MaxBuilds}, {"--max-days-to-retain-build-logs", opts.Defaults.MaxDays}} {
		if f.n < 0 {
			return fmt.Errorf("invalid %s %d: it is a number of builds or days, 0 or more", f.name, f.n)
		}
	}
	if opts.FailedGrace < 0 || opts.OneOffGrace < 0 || opts.ResourceCacheTTL < 0 {
		return fmt.Errorf("invalid grace or retention period: it is a duration, 0 or more")
	}
	t, err := dialTarget(o)
	if err != nil {
		return err
	}
	r, err := gc.Sweep(ctx, t, opts)
	if err != nil {
		return fmt.Errorf("gc of %s: %w", t.Name, err)
	}
	if err := writeReport(s.out, marshal, r, func() { printGC(s.out, r) }); err != nil {
		return err
	}
	if len(r.Failed) > 0 {
		return &exitError{code: 1}
	}
	return nil
}

// printGC writes a line per object decided on: deleted, kept, failed.
func printGC(w io.Writer, r gc.Report) {
	verb := "deleted"
	if r.DryRun {
		verb = "would delete"
	}
	line := func(what string, i gc.Item, why string) {
		build := ""
		if i.Build != "" {
			build = " (" + i.Build + ")"
		}
		fmt.Fprintf(w, "%s %s %s%s: %s\n", what, i.Kind, i.Name, build, why)
	}
	for _, i := range r.Deleted {
		line(verb, i, i.Reason)
	}
	for _, f := range r.Failed {
		line("failed to delete", f.Item, f.Error)
	}
	for _, i := range r.Kept {
		line("kept", i, i.Reason)
	}
	fmt.Fprintf(w, "%s: %s %d, kept %d, failed %d\n", r.Target, verb, len(r.Deleted), len(r.Kept), len(r.Failed))
}
