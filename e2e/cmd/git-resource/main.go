package main

import (
	"os"
	"path/filepath"

	"github.com/concourse-tekton/concourse-tekton/e2e/resource/git"
)

func main() {
	os.Exit(git.Main(filepath.Base(os.Args[0]), git.Env{
		Args: os.Args, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, TmpDir: os.TempDir(),
	}))
}
