package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/concourse-tekton/concourse-tekton/tektonrun"
)

func newCheckTarget(s *streams) *cobra.Command {
	var o tektonrun.TargetOptions
	var output string
	var main tektonrun.TargetSpec
	var targets string
	cmd := &cobra.Command{
		Use:   "check-target [flags]",
		Short: "Check that a cluster's namespace can run builds (a Concourse worker)",
		Long: `Check that the API server answers, that Tekton Pipelines is installed, and that the
user may do everything the backend does in the namespace. Each check is a line on stdout,
✓ or ✗; the exit status is 0 when all pass, 1 otherwise. The cluster is chosen the way
kubectl chooses it.

With --targets, the namespace of the flags is the web node's first worker (--worker,
--team and --tag say it as the web node's --tekton-worker-name, --tekton-team and
--tekton-tag do), and every target of the file is checked too; then, for each team, which
workers its steps go to, by their tags, and which of them admit privileged steps.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if targets == "" {
				if main.Worker != "" || main.Team != "" || len(main.Tags) > 0 {
					return errors.New("--worker, --team and --tag describe the first of the web node's workers: give --targets too")
				}
				return s.checkTarget(cmd.Context(), o, output)
			}
			return s.checkTargets(cmd.Context(), o, main, targets, output)
		},
	}
	addTargetFlags(cmd, &o)
	fl := cmd.Flags()
	fl.StringVarP(&output, "output", "o", "", "print the report as json or yaml instead of status lines")
	fl.StringVar(&targets, "targets", "", "the web node's --tekton-targets file: check each of its targets too, and say per team where its steps run (an entry with in_cluster is checked in the cluster of the flags)")
	fl.StringVar(&main.Worker, "worker", "", "with --targets: the worker name of the flags' namespace (default: tekton-<namespace>)")
	fl.StringVar(&main.Team, "team", "", "with --targets: the team whose worker the flags' namespace is (default: every team's)")
	fl.StringSliceVar(&main.Tags, "tag", nil, "with --targets: a tag of the flags' namespace's worker (repeatable)")
	return cmd
}

func (s *streams) checkTarget(ctx context.Context, o tektonrun.TargetOptions, output string) error {
	marshal, err := outputFormat(output)
	if err != nil {
		return err
	}
	t, err := dialTarget(o)
	if err != nil {
		return err
	}
	r := t.Check(ctx)
	if err := writeReport(s.out, marshal, r, func() { printCheck(s.out, t, r) }); err != nil {
		return err
	}
	if !r.OK() {
		return &exitError{code: 1}
	}
	return nil
}

// printCheck writes one status line per check, the way kind does.
func printCheck(w io.Writer, t *tektonrun.Target, r tektonrun.CheckReport) {
	server := t.Name
	if t.Config != nil {
		server = t.Config.Host
	}
	if !r.Reachable {
		fmt.Fprintf(w, "✗ API server %s does not answer: %v\n", server, r.Err)
		return
	}
	fmt.Fprintf(w, "✓ API server %s answers (%s)\n", server, r.ServerVersion)
	if r.TektonInstalled {
		fmt.Fprintln(w, "✓ Tekton Pipelines (tekton.dev/v1) is installed")
	} else {
		fmt.Fprintln(w, "✗ Tekton Pipelines (tekton.dev/v1) is not installed: install it, see https://tekton.dev/docs/installation/pipelines/")
	}
	switch {
	case len(r.Missing) > 0:
		fmt.Fprintf(w, "✗ missing permissions in namespace %s (%d):\n", t.Namespace, len(r.Missing))
		for _, p := range r.Missing {
			fmt.Fprintf(w, "    %s\n", p)
		}
	case r.Err == nil:
		fmt.Fprintf(w, "✓ all %d permissions are granted in namespace %s\n", len(tektonrun.Permissions), t.Namespace)
	}
	if ps := r.PodSecurity; ps != nil {
		switch {
		case ps.Unknown != "":
			fmt.Fprintf(w, "? Pod Security level unknown: %s\n", ps.Unknown)
		case len(ps.Rejected) == 0:
			fmt.Fprintf(w, "✓ Pod Security %q (%s) admits every step\n", ps.Level, ps.Version)
		default:
			mark := "!"
			if ps.Blocks() {
				mark = "✗"
			}
			fmt.Fprintf(w, "%s Pod Security %q (%s) in namespace %s rejects:\n", mark, ps.Level, ps.Version, t.Namespace)
			for _, rj := range ps.Rejected {
				fmt.Fprintf(w, "    %s: %s\n", rj.Steps, strings.Join(rj.Reasons, "; "))
			}
			if ps.Level == "restricted" && !ps.TektonSecurityContext {
				fmt.Fprintf(w, "    (Tekton's init container \"prepare\" passes \"restricted\" only with set-security-context: \"true\" in its ConfigMap tekton-pipelines/feature-flags)\n")
			}
		}
	}
	if st := r.Status; st != nil {
		switch st.State {
		case tektonrun.StateRunning:
			fmt.Fprintf(w, "✓ target %s is running: it takes builds (%d running)\n", t.Name, st.Running)
		case tektonrun.StateLanded:
			fmt.Fprintf(w, "! target %s is landed since %s: it takes no new build (land --undo takes them again)\n", t.Name, st.Since.Format(time.RFC3339))
		default:
			fmt.Fprintf(w, "! target %s is %s since %s: it takes no new build; %d running\n", t.Name, st.State, st.Since.Format(time.RFC3339), st.Running)
		}
	}
	if m := r.Runner; m != nil {
		if m.Mounted {
			fmt.Fprintln(w, "✓ step pods mount the runner's image as a volume: the cluster mounts images")
		} else {
			fmt.Fprintf(w, "! step pods copy the runner in, with a container of their own: %s\n", m.Why)
		}
	}
	for _, a := range r.Advice {
		fmt.Fprintf(w, "! %s\n", a)
	}
	if r.Err != nil {
		fmt.Fprintf(w, "✗ %v\n", r.Err)
	}
}

// outputFormat is how --output prints a report: nil for lines, else json or yaml.
func outputFormat(output string) (func(any) ([]byte, error), error) {
	switch output {
	case "":
		return nil, nil
	case "json":
		return func(v any) ([]byte, error) {
			b, err := json.MarshalIndent(v, "", "  ")
			return append(b, '\n'), err
		}, nil
	case "yaml":
		return yaml.Marshal, nil
	}
	return nil, fmt.Errorf("invalid --output %q: use json or yaml", output)
}

// writeReport prints v with marshal, or as lines when it is nil.
func writeReport(w io.Writer, marshal func(any) ([]byte, error), v any, lines func()) error {
	if marshal == nil {
		lines()
		return nil
	}
	out, err := marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(out)
	return err
}
