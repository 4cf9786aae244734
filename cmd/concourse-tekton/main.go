// Command concourse-tekton runs Concourse pipelines on Kubernetes through Tekton: every
// command, from validate to gc, in one binary.
package main

import (
	"os"

	"github.com/concourse-tekton/concourse-tekton/cmd/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
