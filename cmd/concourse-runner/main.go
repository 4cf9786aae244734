// Command concourse-runner is the step runner of concourse-tekton: see package runner, and
// package runspec for its command line.
package main

import (
	"os"

	"github.com/concourse-tekton/concourse-tekton/runner"
)

func main() {
	os.Exit(runner.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
