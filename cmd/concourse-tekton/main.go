// Command concourse-tekton runs Concourse pipelines on Kubernetes through Tekton.
package main

import (
	"os"

	"github.com/concourse-tekton/concourse-tekton/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
