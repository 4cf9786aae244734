// Command concourse-tekton-web is Concourse's web node (the ATC) with the build engine's
// StepperFactory provided through atccmd.NewStepperFactory, the hook that
// atc/patches adds to Concourse. It builds only against the patched module:
// atc/build.sh.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/concourse/concourse"
	"github.com/concourse/concourse/atc/atccmd"
	"github.com/concourse/concourse/atc/engine"
	flags "github.com/jessevdk/go-flags"

	"github.com/concourse-tekton/concourse-tekton/atc/internal/webcmd"
)

func main() {
	atccmd.NewStepperFactory = newStepperFactory

	var cmd webcmd.Command
	cmd.Version = func() {
		fmt.Println(concourse.Version)
		os.Exit(0)
	}

	_, err := webcmd.NewParser(&cmd).Parse()
	var flagsErr *flags.Error
	switch {
	case err == nil:
	case errors.As(err, &flagsErr) && flagsErr.Type == flags.ErrHelp:
		fmt.Println(err)
	default:
		fmt.Fprintf(os.Stderr, "error: %s\n", err)
		os.Exit(1)
	}
}

// newStepperFactory provides the engine's StepperFactory. The Tekton adapter does not
// exist yet, so it is still Concourse's own (steps in containers on workers); the hook is
// wired and says so in the log, and the adapter replaces the returned value.
func newStepperFactory(config atccmd.StepperFactoryConfig) engine.StepperFactory {
	config.Logger.Info("using-concourse-default")
	return config.Default
}
