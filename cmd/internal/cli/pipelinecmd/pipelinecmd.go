// Package pipelinecmd is the part of the concourse-tekton command line that needs
// nothing but the pipeline model: the root command, validate, plan, --version, and
// what the other commands share with them (the standard streams, fly's var flags,
// loading a pipeline, exit codes). It links no Kubernetes or Tekton library: the
// concourse-tekton binary (cmd/concourse-tekton) runs these alone, without their package
// initialisation, and hands the other commands to concourse-tekton-kube.
package pipelinecmd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/concourse-tekton/concourse-tekton/cmd/internal/cli/varuse"
	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/planner"
	"github.com/concourse-tekton/concourse-tekton/internal/parallel"
)

// VarFlags are fly's flags for static vars.
type VarFlags struct {
	Vars     []string
	YAMLVars []string
	Files    []string
}

// Register adds the flags to cmd.
func (f *VarFlags) Register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringArrayVarP(&f.Vars, "var", "v", nil, "a var, as name=value (repeatable; name may be a path such as creds.user)")
	fl.StringArrayVarP(&f.YAMLVars, "yaml-var", "y", nil, "a var whose value is YAML, as name=value (repeatable)")
	fl.StringArrayVarP(&f.Files, "load-vars-from", "l", nil, "a YAML file of vars (repeatable; a later file wins)")
}

// Build reads the vars the flags give, files included.
func (f *VarFlags) Build() (*concourse.VarFlags, error) {
	var vf concourse.VarFlags
	for _, v := range f.Vars {
		if err := vf.AddVar(v); err != nil {
			return nil, err
		}
	}
	for _, v := range f.YAMLVars {
		if err := vf.AddYAMLVar(v); err != nil {
			return nil, err
		}
	}
	for _, file := range f.Files {
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

// LoadPipeline reads, parses and validates a pipeline, printing its warnings and the vars
// left for run time on stderr. Invalid pipelines print every error and exit 1.
func (s *Streams) LoadPipeline(path string, flags *VarFlags) (*concourse.Pipeline, error) {
	p, _, err := s.LoadPipelineVars(path, flags)
	return p, err
}

// LoadPipelineVars is LoadPipeline that also returns the static vars interpolated into
// the pipeline: those whose values may be written out with it.
func (s *Streams) LoadPipelineVars(path string, flags *VarFlags) (*concourse.Pipeline, []varuse.Var, error) {
	vf, err := flags.Build()
	if err != nil {
		return nil, nil, err
	}
	name, data, err := s.ReadInput(path)
	if err != nil {
		return nil, nil, err
	}
	rec := varuse.NewRecorder(vf.Variables())
	p, diags := concourse.ParsePipeline(name, data, rec)
	for _, d := range diags.Warnings() {
		fmt.Fprintf(s.Err, "warning: %s\n", d.Error())
	}
	if errs := diags.Errors(); len(errs) > 0 {
		for _, d := range errs {
			fmt.Fprintln(s.Err, d.Error())
		}
		return nil, nil, fmt.Errorf("%s is not a valid pipeline: %s", name, Plural(len(errs), "error"))
	}
	s.ReportUnresolved(p)
	return p, rec.Used(), nil
}

// ReportUnresolved says which vars stay for run time, once each, at their first use.
// Local vars (((.:name)), set by load_var, a get or an across step as the build runs)
// are never given: they are not reported.
func (s *Streams) ReportUnresolved(p *concourse.Pipeline) {
	seen := map[string]bool{}
	for _, u := range p.Unresolved {
		name := u.Ref.String()
		if seen[name] || u.Ref.Source == "." {
			continue
		}
		seen[name] = true
		fmt.Fprintf(s.Err, "note: %s:%d:%d: ((%s)) is not given: it is left for run time\n", p.File, u.Pos.Line, u.Pos.Col, name)
	}
}

// Plural is n word, or n words.
func Plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// NewValidate is the validate command.
func NewValidate(s *Streams) *cobra.Command {
	var flags VarFlags
	cmd := &cobra.Command{
		Use:   "validate PIPELINE...",
		Short: "Check pipelines the way Concourse does, reporting every problem with its position",
		Long: `Check pipelines the way Concourse does, in one process, on every processor. Every
error is printed as file:line:col: path: message, warnings are prefixed with "warning:",
each pipeline's in the order of the arguments. One
PIPELINE may be - for standard input. The vars of -v, -y and -l apply to every pipeline.
The exit code is 1 when any of them is invalid.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := StdinOnce(args); err != nil {
				return err
			}
			// What is said of each valid pipeline, and nothing more: a pipeline's model
			// goes once it is checked, so the process holds a few at a time, not all.
			valid := make([]string, len(args))
			errs := make([]error, len(args))
			var invalid []string
			err := s.EachPath(args, func(i int, own *Streams) {
				p, err := own.LoadPipeline(args[i], &flags)
				if err != nil {
					errs[i] = err
					return
				}
				valid[i] = fmt.Sprintf("%s: valid: %s, %s\n", p.File, Plural(len(p.Config.Jobs), "job"), Plural(len(p.Config.Resources), "resource"))
			}, func(i int) error {
				if err := errs[i]; err != nil {
					if len(args) == 1 {
						return err
					}
					fmt.Fprintf(s.Err, "error: %v\n", err)
					invalid = append(invalid, args[i])
					return nil
				}
				_, err := io.WriteString(s.Err, valid[i])
				return err
			})
			if err != nil {
				return err
			}
			if len(invalid) > 0 {
				return fmt.Errorf("%d of %d pipelines are invalid: %s", len(invalid), len(args), strings.Join(invalid, ", "))
			}
			return nil
		},
	}
	flags.Register(cmd)
	return cmd
}

// NewPlan is the plan command.
func NewPlan(s *Streams) *cobra.Command {
	var flags VarFlags
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
			p, err := s.LoadPipeline(args[0], &flags)
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
			_, err = fmt.Fprintf(s.Out, "%s\n", out)
			return err
		},
	}
	flags.Register(cmd)
	cmd.Flags().StringVarP(&job, "job", "j", "", "the job to plan")
	cmd.Flags().StringArrayVar(&versions, "version", nil, "the version a get step fetches, as STEP=JSON (repeatable)")
	return cmd
}

// Version is the project's version, set at build time with -ldflags.
var Version = "dev"

// Streams are a command's standard streams.
type Streams struct {
	In       io.Reader
	Out, Err io.Writer
}

// EachPath works on the pipelines of paths at the same time (parallel.ForEach): work(i,
// own) for each, where own are these streams but, when there are several paths, an Err
// of its own, a buffer. Then, in the order of paths, it writes each one's buffer to
// s.Err and calls then(i), and stops at the first error then returns. What is said is
// that of the pipelines worked on one after another.
func (s *Streams) EachPath(paths []string, work func(i int, own *Streams), then func(i int) error) error {
	said := make([]bytes.Buffer, len(paths))
	parallel.ForEach(len(paths), 1, func() func(int) {
		return func(i int) {
			own := *s
			if len(paths) > 1 {
				own.Err = &said[i]
			}
			work(i, &own)
		}
	})
	for i := range paths {
		if _, err := s.Err.Write(said[i].Bytes()); err != nil {
			return err
		}
		if err := then(i); err != nil {
			return err
		}
	}
	return nil
}

// ExitError ends the command with a code, having already said why (or with a message to
// print as `error: ...`).
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// NewRoot is the concourse-tekton command with validate, plan and the commands given.
func NewRoot(s *Streams, commands ...*cobra.Command) *cobra.Command {
	root := NewBareRoot(commands...)
	root.AddCommand(NewValidate(s), NewPlan(s))
	return root
}

// NewBareRoot is the concourse-tekton command with the commands given alone: for a
// command line that names one of them, which needs no other.
func NewBareRoot(commands ...*cobra.Command) *cobra.Command {
	root := &cobra.Command{
		Use:           "concourse-tekton",
		Short:         "Run Concourse pipelines on Kubernetes through Tekton",
		Version:       Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.AddCommand(commands...)
	return root
}

// Execute runs root with args and returns the process's exit code. Errors are printed
// once, as `error: ...`, never with a stack trace.
func Execute(root *cobra.Command, s *Streams, args []string) int {
	root.SetArgs(args)
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	err := root.Execute()
	if err == nil {
		return 0
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		if ee.Err != nil {
			fmt.Fprintf(s.Err, "error: %v\n", ee.Err)
		}
		return ee.Code
	}
	fmt.Fprintf(s.Err, "error: %v\n", err)
	return 1
}

// Handles tells whether this package alone runs the command line args: validate, plan,
// or the version.
func Handles(args []string) bool {
	if len(args) == 0 {
		return false
	}
	switch args[0] {
	case "validate", "plan":
		return true
	case "--version", "-v":
		return len(args) == 1
	}
	return false
}

// Main runs the command line args that Handles accepts (others are unknown commands
// here) and returns the process's exit code.
func Main(args []string, s *Streams) int {
	return Execute(NewRoot(s), s, args)
}

// ReadInput reads a file, or standard input for "-". It returns the name to use in
// diagnostics.
func (s *Streams) ReadInput(path string) (string, []byte, error) {
	if path == "-" {
		data, err := io.ReadAll(s.In)
		if err != nil {
			return "", nil, fmt.Errorf("reading standard input: %w", err)
		}
		return "<stdin>", data, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", nil, err
	}
	return path, data, nil
}

// StdinOnce refuses standard input given twice: the second read would find it empty.
func StdinOnce(paths []string) error {
	if n := slices.Index(paths, "-"); n >= 0 && slices.Contains(paths[n+1:], "-") {
		return errors.New("- (standard input) is given more than once: give it once")
	}
	return nil
}
