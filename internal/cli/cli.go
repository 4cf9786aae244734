package cli

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/concourse-tekton/concourse-tekton/internal/cli/pipelinecmd"
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
	return pipelinecmd.Execute(newRoot(s), s.pipelines(), args)
}

func newRoot(s *streams) *cobra.Command {
	return pipelinecmd.NewRoot(s.pipelines(), newConvert(s), newRun(s), newExecute(s), newIntercept(s), newEvents(s), newAbort(s), newCheckTarget(s), newGC(s), newLand(s), newRetire(s))
}
