package cli

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
)

// Version is the project's version, set at build time with -ldflags.
var Version = "dev"

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

// streams are the command's standard streams.
type streams struct {
	in       io.Reader
	out, err io.Writer
}

// Main runs the command line and returns the process's exit code. Errors are printed once,
// as `error: ...`, never with a stack trace.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	s := &streams{in: stdin, out: stdout, err: stderr}
	root := newRoot(s)
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

func newRoot(s *streams) *cobra.Command {
	root := &cobra.Command{
		Use:           "concourse-tekton",
		Short:         "Run Concourse pipelines on Kubernetes through Tekton",
		Version:       Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.AddCommand(newValidate(s), newPlan(s), newConvert(s), newRun(s), newExecute(s), newIntercept(s), newEvents(s), newAbort(s), newCheckTarget(s), newGC(s), newLand(s), newRetire(s))
	return root
}

// readInput reads a file, or standard input for "-". It returns the name to use in
// diagnostics.
func (s *streams) readInput(path string) (string, []byte, error) {
	if path == "-" {
		data, err := io.ReadAll(s.in)
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
