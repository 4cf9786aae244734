package main

import (
	"os"
	"path/filepath"

	"github.com/concourse-tekton/concourse-tekton/e2e/resource/mock"
)

func main() {
	os.Exit(mock.Main(filepath.Base(os.Args[0]), mock.OSEnv()))
}
