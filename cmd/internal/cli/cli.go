package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// version is the project's version, set at build time with -ldflags -X.
var version = "dev"

// streams are the command's standard streams.
type streams struct {
	in       io.Reader
	out, err io.Writer
}

// exitError ends the command with a code, having already said why (or with a message to
// print as `error: ...`).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// Main runs the command line and returns the process's exit code. Errors are printed once,
// as `error: ...`, never with a stack trace.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	s := &streams{in: stdin, out: stdout, err: stderr}
	root := newRoot(s, args)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.Execute()
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintf(stderr, "error: %v\n", ee.err)
		}
		return ee.code
	}
	fmt.Fprintf(stderr, "error: %v\n", err)
	return 1
}

// commands are the commands, by name.
var commands = []struct {
	name string
	make func(*streams) *cobra.Command
}{
	{"validate", newValidate}, {"plan", newPlan},
	{"convert", newConvert}, {"run", newRun}, {"execute", newExecute}, {"intercept", newIntercept},
	{"events", newEvents}, {"abort", newAbort}, {"check-target", newCheckTarget}, {"gc", newGC},
	{"land", newLand}, {"retire", newRetire},
}

// newRoot is the root command for args. A command line that names one of commands gets
// that command alone, and one that asks the version none: making a command's flags is
// most of the work before it runs, and none of the others' is needed. Any other (help, a
// mistake) gets them all, so that help lists them and a misspelt name is suggested.
func newRoot(s *streams, args []string) *cobra.Command {
	if len(args) == 1 && (args[0] == "--version" || args[0] == "-v") {
		return rootOf()
	}
	var made []*cobra.Command
	for _, c := range commands {
		if len(args) > 0 && args[0] == c.name {
			return rootOf(c.make(s))
		}
		made = append(made, c.make(s))
	}
	return rootOf(made...)
}

// rootOf is the concourse-tekton command with cmds, and no other, under it.
func rootOf(cmds ...*cobra.Command) *cobra.Command {
	root := &cobra.Command{
		Use:           "concourse-tekton",
		Short:         "Run Concourse pipelines on Kubernetes through Tekton",
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.AddCommand(cmds...)
	return root
}
