package cli

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/concourse-tekton/concourse-tekton/cmd/internal/cli/pipelinecmd"
)

// streams are the command's standard streams.
type streams struct {
	in       io.Reader
	out, err io.Writer
}

// pipelines are the streams as the pipeline commands take them.
func (s *streams) pipelines() *pipelinecmd.Streams {
	return &pipelinecmd.Streams{In: s.in, Out: s.out, Err: s.err}
}

// exitError ends the command with a code, having already said why (or with a message to
// print as `error: ...`).
type exitError = pipelinecmd.ExitError

// varFlags are fly's flags for static vars.
type varFlags = pipelinecmd.VarFlags

// Main runs the command line and returns the process's exit code. Errors are printed once,
// as `error: ...`, never with a stack trace.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	s := &streams{in: stdin, out: stdout, err: stderr}
	return pipelinecmd.Execute(newRoot(s, args), s.pipelines(), args)
}

// commands are this binary's commands beside validate and plan, by name.
var commands = []struct {
	name string
	make func(*streams) *cobra.Command
}{
	{"convert", newConvert}, {"run", newRun}, {"execute", newExecute}, {"intercept", newIntercept},
	{"events", newEvents}, {"abort", newAbort}, {"check-target", newCheckTarget}, {"gc", newGC},
	{"land", newLand}, {"retire", newRetire},
}

// newRoot is the root command for args. A command line that names one of commands gets
// that command alone, and one that pipelinecmd handles (validate, plan, the version)
// those of pipelinecmd: making a command's flags is most of the work before it runs, and
// none of the others' is needed. Any other (help, a mistake) gets them all, so that help
// lists them and a misspelt name is suggested.
func newRoot(s *streams, args []string) *cobra.Command {
	if pipelinecmd.Handles(args) {
		return pipelinecmd.NewRoot(s.pipelines())
	}
	var made []*cobra.Command
	for _, c := range commands {
		if len(args) > 0 && args[0] == c.name {
			return pipelinecmd.NewBareRoot(c.make(s))
		}
		made = append(made, c.make(s))
	}
	return pipelinecmd.NewRoot(s.pipelines(), made...)
}
