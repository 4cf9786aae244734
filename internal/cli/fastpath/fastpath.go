// Package fastpath runs the commands that need only the pipeline model (validate, plan,
// --version: pipelinecmd.Handles) from its package initialisation, then exits, so that
// they do not pay for the Kubernetes and Tekton libraries the other commands link: their
// package initialisation alone costs about ten times a bare Go program's start-up.
//
// A main imports it for its side effect, first. Go initialises a program's packages in
// the order of their import paths, each once all it imports is initialised (the Go
// specification, "Package initialization"): this package imports nothing heavy and sorts
// before those libraries, so it runs before them. The command's tests hold that order.
package fastpath

import (
	"os"

	"github.com/concourse-tekton/concourse-tekton/internal/cli/pipelinecmd"
)

func init() {
	args := os.Args[1:]
	if !pipelinecmd.Handles(args) {
		return
	}
	os.Exit(pipelinecmd.Main(args, &pipelinecmd.Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
}
