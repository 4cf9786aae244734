// Command concourse-tekton-web is Concourse's web node (the ATC) with the build engine's
// StepperFactory provided through atccmd.NewStepperFactory, the hook that atc/patches
// adds to Concourse: with the web command's --tekton-* flags, builds run on Kubernetes
// as Tekton PipelineRuns; without them, on Concourse's own workers. It builds only
// against the patched module: atc/build.sh.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/concourse/concourse"
	"github.com/concourse/concourse/atc/atccmd"
	"github.com/concourse/concourse/atc/engine"
	flags "github.com/jessevdk/go-flags"
	// The web node's image holds no CA bundle: without these roots (Mozilla's), no TLS
	// certificate of an identity provider, a credential manager or a registry could be
	// verified there. A system's roots win where it has any.
	_ "golang.org/x/crypto/x509roots/fallback"

	"github.com/concourse-tekton/concourse-tekton/atc/internal/webcmd"
	"github.com/concourse-tekton/concourse-tekton/atc/tektonengine"
)

func main() {
	var cmd webcmd.Command
	// Builds run on Kubernetes when the web command's --tekton-* flags say where.
	atccmd.NewStepperFactory = func(config atccmd.StepperFactoryConfig) engine.StepperFactory {
		checks := &tektonengine.CheckConfig{
			ResourceConfigFactory: config.ResourceConfigFactory,
			ResourceCacheFactory:  config.ResourceCacheFactory,
			RateLimiter:           config.RateLimiter,
			PolicyChecker:         config.PolicyChecker,
			DefaultTimeout:        config.GlobalResourceCheckTimeout,
		}
		pipelines := &tektonengine.SetPipelineConfig{
			TeamFactory:   config.TeamFactory,
			BuildFactory:  config.BuildFactory,
			PolicyChecker: config.PolicyChecker,
		}
		atc := webcmd.ATC{
			DB:          config.Conn,
			Workers:     config.WorkerFactory,
			Teams:       config.TeamFactory,
			Containers:  config.ContainerRepository,
			Volumes:     config.VolumeRepository,
			WorkerPool:  &config.WorkerPool,
			ExternalURL: config.ExternalURL,
			TaskCaches:  tektonengine.DBTaskCaches{Conn: config.Conn, Factory: config.TaskCacheFactory, TTL: config.DefaultTaskCacheTTL},
		}
		return cmd.Web.StepperFactory(config.Logger, config.Default, atc, checks, pipelines)
	}
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
