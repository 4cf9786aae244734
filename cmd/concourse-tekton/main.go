// Command concourse-tekton runs Concourse pipelines on Kubernetes through Tekton.
//
// It runs validate, plan and --version itself: they need only the pipeline model. Every
// other command line goes, whole, to concourse-tekton-kube, the part of the command that
// links the Kubernetes and Tekton libraries, found beside this binary (else on PATH): the
// package initialisation of those libraries alone costs several times a bare Go program's
// start-up, which a validate of a small pipeline would otherwise pay.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/concourse-tekton/concourse-tekton/cmd/internal/cli/pipelinecmd"
)

// kubeCommand is the binary that runs the other commands.
const kubeCommand = "concourse-tekton-kube"

func main() {
	args := os.Args[1:]
	if pipelinecmd.Handles(args) {
		os.Exit(pipelinecmd.Main(args, &pipelinecmd.Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
	}
	kube, err := kubeBinary()
	if err == nil {
		err = handOver(kube, args)
	}
	fmt.Fprintf(os.Stderr, "error: %v\n", err)
	os.Exit(1)
}

// kubeBinary is concourse-tekton-kube beside this binary (symbolic links resolved), else
// the first on PATH.
func kubeBinary() (string, error) {
	self, err := os.Executable()
	if err == nil {
		if s, err := filepath.EvalSymlinks(self); err == nil {
			self = s
		}
		beside := filepath.Join(filepath.Dir(self), kubeCommand)
		if fi, err := os.Stat(beside); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return beside, nil
		}
	}
	if p, err := exec.LookPath(kubeCommand); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%s, which runs every command but validate and plan, is neither beside %s nor on PATH: build both (make build, or go build -o DIR ./cmd/concourse-tekton ./cmd/concourse-tekton-kube)", kubeCommand, self)
}
