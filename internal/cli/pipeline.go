package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/planner"
	"github.com/concourse-tekton/concourse-tekton/internal/cli/varuse"
)

// varFlags are fly's flags for static vars.
type varFlags struct {
	vars     []string
	yamlVars []string
	files    []string
}

func (f *varFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringArrayVarP(&f.vars, "var", "v", nil, "a var, as name=value (repeatable; name may be a path such as creds.user)")
	fl.StringArrayVarP(&f.yamlVars, "yaml-var", "y", nil, "a var whose value is YAML, as name=value (repeatable)")
	fl.StringArrayVarP(&f.files, "load-vars-from", "l", nil, "a YAML file of vars (repeatable; a later file wins)")
}

func (f *varFlags) build() (*concourse.VarFlags, error) {
	var vf concourse.VarFlags
	for _, v := range f.vars {
		if err := vf.AddVar(v); err != nil {
			return nil, err
		}
	}
	for _, v := range f.yamlVars {
		if err := vf.AddYAMLVar(v); err != nil {
			return nil, err
		}
	}
	for _, file := range f.files {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("reading vars file: %w", err)
		}
		if err := vf.AddFile(file, data); err != nil {
			return nil, err
		}
	}
	return &vf, nil
}

// loadPipeline reads, parses and validates a pipeline, printing its warnings and the vars
// left for run time on stderr. Invalid pipelines print every error and exit 1.
func (s *streams) loadPipeline(path string, flags *varFlags) (*concourse.Pipeline, error) {
	p, _, err := s.loadPipelineVars(path, flags)
	return p, err
}

// loadPipelineVars is loadPipeline that also returns the static vars interpolated into
// the pipeline: those whose values may be written out with it.
func (s *streams) loadPipelineVars(path string, flags *varFlags) (*concourse.Pipeline, []varuse.Var, error) {
	vf, err := flags.build()
	if err != nil {
		return nil, nil, err
	}
	name, data, err := s.readInput(path)
	if err != nil {
		return nil, nil, err
	}
	rec := varuse.NewRecorder(vf.Variables())
	p, diags := concourse.ParsePipeline(name, data, rec)
	for _, d := range diags.Warnings() {
		fmt.Fprintf(s.err, "warning: %s\n", d.Error())
	}
	if errs := diags.Errors(); len(errs) > 0 {
		for _, d := range errs {
			fmt.Fprintln(s.err, d.Error())
		}
		return nil, nil, fmt.Errorf("%s is not a valid pipeline: %s", name, plural(len(errs), "error"))
	}
	s.reportUnresolved(p)
	return p, rec.Used(), nil
}

// reportUnresolved says which vars stay for run time, once each, at their first use.
// Local vars (((.:name)), set by load_var, a get or an across step as the build runs)
// are never given: they are not reported.
func (s *streams) reportUnresolved(p *concourse.Pipeline) {
	seen := map[string]bool{}
	for _, u := range p.Unresolved {
		name := u.Ref.String()
		if seen[name] || u.Ref.Source == "." {
			continue
		}
		seen[name] = true
		fmt.Fprintf(s.err, "note: %s:%d:%d: ((%s)) is not given: it is left for run time\n", p.File, u.Pos.Line, u.Pos.Col, name)
	}
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func newValidate(s *streams) *cobra.Command {
	var flags varFlags
	cmd := &cobra.Command{
		Use:   "validate PIPELINE...",
		Short: "Check pipelines the way Concourse does, reporting every problem with its position",
		Long: `Check pipelines the way Concourse does, each in turn, in one process. Every error is
printed as file:line:col: path: message, warnings are prefixed with "warning:". One
PIPELINE may be - for standard input. The vars of -v, -y and -l apply to every pipeline.
The exit code is 1 when any of them is invalid.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := stdinOnce(args); err != nil {
				return err
			}
			var invalid []string
			for _, path := range args {
				p, err := s.loadPipeline(path, &flags)
				if err != nil {
					if len(args) == 1 {
						return err
					}
					fmt.Fprintf(s.err, "error: %v\n", err)
					invalid = append(invalid, path)
					continue
				}
				fmt.Fprintf(s.err, "%s: valid: %s, %s\n", p.File, plural(len(p.Config.Jobs), "job"), plural(len(p.Config.Resources), "resource"))
			}
			if len(invalid) > 0 {
				return fmt.Errorf("%d of %d pipelines are invalid: %s", len(invalid), len(args), strings.Join(invalid, ", "))
			}
			return nil
		},
	}
	flags.register(cmd)
	return cmd
}

func newPlan(s *streams) *cobra.Command {
	var flags varFlags
	var job string
	var versions []string
	cmd := &cobra.Command{
		Use:   "plan PIPELINE -j JOB",
		Short: "Print the build plan (atc.Plan JSON) Concourse would run for a job",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if job == "" {
				return errors.New("no job given: use -j JOB")
			}
			opts := planner.Options{Versions: map[string]concourse.Version{}}
			for _, v := range versions {
				name, raw, ok := strings.Cut(v, "=")
				var ver concourse.Version
				if !ok || json.Unmarshal([]byte(raw), &ver) != nil {
					return fmt.Errorf("invalid --version %q: use STEP={\"ref\":\"...\"}", v)
				}
				opts.Versions[name] = ver
			}
			p, err := s.loadPipeline(args[0], &flags)
			if err != nil {
				return err
			}
			plan, err := planner.PlanJob(&p.Config, job, opts)
			if err != nil {
				return err
			}
			out, err := json.MarshalIndent(plan, "", "  ")
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(s.out, "%s\n", out)
			return err
		},
	}
	flags.register(cmd)
	cmd.Flags().StringVarP(&job, "job", "j", "", "the job to plan")
	cmd.Flags().StringArrayVar(&versions, "version", nil, "the version a get step fetches, as STEP=JSON (repeatable)")
	return cmd
}
