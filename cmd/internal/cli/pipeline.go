package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/concourse-tekton/concourse-tekton/cmd/internal/cli/varuse"
	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/planner"
	"github.com/concourse-tekton/concourse-tekton/internal/parallel"
)

// varFlags are fly's flags for static vars.
type varFlags struct {
	vars     []string
	yamlVars []string
	files    []string
}

// register adds the flags to cmd.
func (f *varFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringArrayVarP(&f.vars, "var", "v", nil, "a var, as name=value (repeatable; name may be a path such as creds.user)")
	fl.StringArrayVarP(&f.yamlVars, "yaml-var", "y", nil, "a var whose value is YAML, as name=value (repeatable)")
	fl.StringArrayVarP(&f.files, "load-vars-from", "l", nil, "a YAML file of vars (repeatable; a later file wins)")
}

// read reads the vars the flags give, files included.
func (f *varFlags) read() (*concourse.VarFlags, error) {
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
		data, err := readFile(file)
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
	vf, err := flags.read()
	if err != nil {
		return nil, nil, err
	}
	name, data, err := s.readInput(path)
	if err != nil {
		return nil, nil, err
	}
	rec := varuse.NewRecorder(vf.Variables())
	p, diags := concourse.ParsePipeline(name, data, rec)
	s.warn(diags)
	if errs := diags.Errors(); len(errs) > 0 {
		for _, d := range errs {
			fmt.Fprintln(s.err, d.Error())
		}
		return nil, nil, fmt.Errorf("%s is not a valid pipeline: %s", name, plural(len(errs), "error"))
	}
	s.reportUnresolved(p)
	return p, rec.Used(), nil
}

// warn says the warnings among diags on stderr, each prefixed "warning: ".
func (s *streams) warn(diags concourse.Diagnostics) {
	for _, d := range diags.Warnings() {
		fmt.Fprintf(s.err, "warning: %s\n", d.Error())
	}
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

// plural is n word, or n words.
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// newValidate is the validate command.
func newValidate(s *streams) *cobra.Command {
	var flags varFlags
	var inputs []string
	cmd := &cobra.Command{
		Use:   "validate PIPELINE...",
		Short: "Check pipelines the way Concourse does, reporting every problem with its position",
		Long: `Check pipelines the way Concourse does, in one process, on every processor. Every
error is printed as file:line:col: path: message, warnings are prefixed with "warning:",
each pipeline's in the order of the arguments. One
PIPELINE may be - for standard input. The vars of -v, -y and -l apply to every pipeline.
With -i name=dir, the task files that steps' file: read from that artifact are checked
too, from the local directory, their errors said at the steps, their warnings in the
files. The exit code is 1 when any pipeline or task file is invalid.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := stdinOnce(args); err != nil {
				return err
			}
			dirs, err := artifactDirs(inputs)
			if err != nil {
				return err
			}
			defer batchGC()()
			// What is said of each valid pipeline, and nothing more: a pipeline's model
			// goes once it is checked, so the process holds a few at a time, not all.
			valid := make([]string, len(args))
			errs := make([]error, len(args))
			var invalid []string
			err = s.eachPath(args, func(i int, own *streams) {
				p, err := own.loadPipeline(args[i], &flags)
				if err == nil {
					err = own.checkTaskFiles(p, dirs)
				}
				if err != nil {
					errs[i] = err
					return
				}
				valid[i] = fmt.Sprintf("%s: valid: %s, %s\n", p.File, plural(len(p.Config.Jobs), "job"), plural(len(p.Config.Resources), "resource"))
			}, func(i int) error {
				if err := errs[i]; err != nil {
					if len(args) == 1 {
						return err
					}
					fmt.Fprintf(s.err, "error: %v\n", err)
					invalid = append(invalid, args[i])
					return nil
				}
				_, err := io.WriteString(s.err, valid[i])
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
	flags.register(cmd)
	cmd.Flags().StringArrayVarP(&inputs, "input", "i", nil, "an artifact's local directory, as name=dir, to check the task files that steps read from it (repeatable)")
	return cmd
}

// checkTaskFiles reads the task files of a pipeline that the artifacts' directories hold
// (LoadTaskFiles), and says their problems on stderr as loadPipeline says a pipeline's.
func (s *streams) checkTaskFiles(p *concourse.Pipeline, dirs map[string]fs.FS) error {
	_, diags := p.LoadTaskFiles(dirs)
	s.warn(diags)
	errs := diags.Errors()
	for _, d := range errs {
		fmt.Fprintln(s.err, d.Error())
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s's task files are invalid: %s", p.File, plural(len(errs), "error"))
	}
	return nil
}

// newPlan is the plan command.
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

// eachPath works on the pipelines of paths at the same time (parallel.ForEach): work(i,
// own) for each, where own are these streams but, when there are several paths, an err
// of its own, a buffer. Then, in the order of paths, it writes each one's buffer to
// s.err and calls then(i), and stops at the first error then returns. What is said is
// that of the pipelines worked on one after another.
func (s *streams) eachPath(paths []string, work func(i int, own *streams), then func(i int) error) error {
	said := make([]bytes.Buffer, len(paths))
	parallel.ForEach(len(paths), 1, func() func(int) {
		return func(i int) {
			own := *s
			if len(paths) > 1 {
				own.err = &said[i]
			}
			work(i, &own)
		}
	})
	for i := range paths {
		if _, err := s.err.Write(said[i].Bytes()); err != nil {
			return err
		}
		if err := then(i); err != nil {
			return err
		}
	}
	return nil
}

// readInput reads a file, or standard input for "-". It returns the name to use in
// diagnostics.
func (s *streams) readInput(path string) (string, []byte, error) {
	var data []byte
	var err error
	if path == "-" {
		if data, err = concourse.ReadConfig(inputName(path), s.in); err != nil {
			return "", nil, err
		}
	} else if data, err = readFile(path); err != nil {
		return "", nil, err
	}
	return inputName(path), data, nil
}

// readFile reads a file of the user's (a pipeline, a task config, vars, images) no
// further than the loader's limit (concourse.ReadConfig): /dev/zero is refused, not read
// until memory runs out.
func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return concourse.ReadConfig(path, f)
}

// inputName is the name a path has in diagnostics: <stdin> for "-".
func inputName(path string) string {
	if path == "-" {
		return "<stdin>"
	}
	return path
}

// stdinOnce refuses standard input given twice: the second read would find it empty.
func stdinOnce(paths []string) error {
	if n := slices.Index(paths, "-"); n >= 0 && slices.Contains(paths[n+1:], "-") {
		return errors.New("- (standard input) is given more than once: give it once")
	}
	return nil
}
