package webcmd

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"code.cloudfoundry.org/lager/v3"
	"github.com/concourse/concourse/atc/db"
	"github.com/concourse/concourse/atc/engine"
	"github.com/tedsuo/ifrit"

	"github.com/concourse-tekton/concourse-tekton/atc/tektonengine"
	"github.com/concourse-tekton/concourse-tekton/atc/tektonworker"
	"github.com/concourse-tekton/concourse-tekton/gc"
	"github.com/concourse-tekton/concourse-tekton/tektonrun"
	"github.com/concourse-tekton/concourse-tekton/translate"
)

// TektonFlags say where the web node's builds run: a namespace of a Kubernetes cluster
// with Tekton. Each is also read from its CONCOURSE_TEKTON_* variable
// (CONCOURSE_TEKTON_NAMESPACE, ...; CONCOURSE_TEKTON_RESOURCE_IMAGE=git=IMG,mock=IMG).
type TektonFlags struct {
	Kubeconfig string `long:"kubeconfig" value-name:"PATH" description:"Run builds on Kubernetes, with this kubeconfig (default: KUBECONFIG, then ~/.kube/config, then the pod's service account)."`
	Context    string `long:"context" description:"Run builds on Kubernetes, in this kubeconfig context (default: its current context)."`
	Namespace  string `long:"namespace" description:"Run builds on Kubernetes, in this namespace (default: the context's, else the pod's, else default)."`
	InCluster  bool   `long:"in-cluster" description:"Run builds on Kubernetes, with the pod's service account, whatever kubeconfig there is."`

	RunnerImage     string            `long:"runner-image" value-name:"IMAGE" description:"The step runner's image (default: this version's, ghcr.io/concourse-tekton/runner)."`
	ResourceImages  map[string]string `long:"resource-image" value-name:"TYPE=IMAGE" key-value-delimiter:"=" description:"The image of a base resource type, laid over the defaults (concourse/<type>-resource). Can be given multiple times."`
	ServiceAccount  string            `long:"service-account" description:"The service account the builds' pods run as (default: the namespace's default)."`
	StorageClass    string            `long:"storage-class" description:"The storage class of build volumes (default: the cluster's)."`
	BuildVolumeSize string            `long:"build-volume-size" default:"1Gi" description:"The size of each build's volume."`
	UserNamespaces  bool              `long:"user-namespaces" description:"Run every step that is not privileged in a user namespace of its own (hostUsers: false)."`

	ImageRegistry       string `long:"image-registry" value-name:"HOST[:PORT][/PATH]" description:"The registry that tasks running an artifact as their image (a task's output, a get of a type other than registry-image) pull it from: the cluster's nodes must pull from it and the builds' pods reach it."`
	ImageRegistrySecret string `long:"image-registry-secret" value-name:"NAME" description:"The Secret (kubernetes.io/dockerconfigjson) with the image registry's credentials for pushing (default: concourse-image-registry, if it exists)."`

	WorkerName        string        `long:"worker-name" description:"The name the namespace has as a worker (default: tekton-<namespace>)."`
	HeartbeatInterval time.Duration `long:"heartbeat-interval" default:"30s" description:"How often the namespace is checked and its worker heartbeated."`
	GCInterval        time.Duration `long:"gc-interval" default:"10m" description:"How often the namespace is swept of what no build needs: of each job's and each check's ended builds, all but the newest (the database keeps their events), pods of ended builds (but the latest failed build's, for --gc-failed-grace-period), volumes; 0: never."`
}

// Enabled tells whether builds run on Kubernetes: any flag that picks a cluster or a
// namespace says so.
func (f *TektonFlags) Enabled() bool {
	return f.Kubeconfig != "" || f.Context != "" || f.Namespace != "" || f.InCluster
}

// Options are the compile options every build starts from; the ATC's URL is given later.
func (f *TektonFlags) Options() (translate.Options, error) {
	for typ, img := range f.ResourceImages {
		if typ == "" || img == "" || strings.ContainsAny(typ, "=,") {
			return translate.Options{}, fmt.Errorf("invalid --tekton-resource-image %s=%s: use TYPE=IMAGE", typ, img)
		}
	}
	return translate.Options{
		RunnerImage:     f.RunnerImage,
		ResourceImages:  f.ResourceImages,
		ServiceAccount:  f.ServiceAccount,
		StorageClass:    f.StorageClass,
		BuildVolumeSize: f.BuildVolumeSize,
		UserNamespaces:  f.UserNamespaces,

		ImageRegistry:       strings.TrimSuffix(f.ImageRegistry, "/"),
		ImageRegistrySecret: f.ImageRegistrySecret,
	}, nil
}

// resourceImages are the images of every base resource type: the defaults, with the
// flags' over them.
func (f *TektonFlags) resourceImages() map[string]string {
	images := map[string]string{}
	for typ, img := range translate.DefaultResourceImages {
		images[typ] = img
	}
	for typ, img := range f.ResourceImages {
		images[typ] = img
	}
	return images
}

// tekton is the web node's Kubernetes side: where builds run, and the worker it is.
type tekton struct {
	target    *tektonrun.Target
	options   translate.Options
	backend   *tektonrun.Backend
	registrar *tektonworker.Registrar
	sweeper   *tektonworker.Sweeper // nil: --tekton-gc-interval=0
}

// openTekton loads the target the flags name. It does not contact the cluster: the
// registrar's checks do, and say what is wrong in the log and in `fly workers`.
func (f *TektonFlags) openTekton() (*tekton, error) {
	opts, err := f.Options()
	if err != nil {
		return nil, err
	}
	t, err := tektonrun.NewTarget(tektonrun.TargetOptions{
		Kubeconfig: f.Kubeconfig, Context: f.Context, Namespace: f.Namespace, InCluster: f.InCluster,
		UserAgent: "concourse-tekton-web",
	})
	if err != nil {
		return nil, fmt.Errorf("--tekton-*: %w", err)
	}
	return &tekton{target: t, options: opts}, nil
}

// StepperFactory is the build engine's StepperFactory, for the hook
// atccmd.NewStepperFactory, called while the web node is constructed: Concourse's own
// (fallback) unless the --tekton-* flags say where builds run. Then builds run there, all
// but check builds, which stay with fallback, and the namespace is registered as a worker
// through workers while the web node runs. Check builds run there too, saving versions
// through checks' database, unless checks is nil: then they go to fallback. set_pipeline
// steps set pipelines through pipelines (nil: they error).
func (cmd *WebCommand) StepperFactory(logger lager.Logger, fallback engine.StepperFactory, workers db.WorkerFactory, externalURL string, checks *tektonengine.CheckConfig, pipelines *tektonengine.SetPipelineConfig) engine.StepperFactory {
	if cmd.tekton == nil {
		logger.Info("using-concourse-default")
		return fallback
	}
	f, t := &cmd.Tekton, cmd.tekton
	opts := t.options
	opts.ExternalURL = externalURL
	t.backend = tektonrun.NewBackend(t.target, opts)
	name := f.WorkerName
	if name == "" {
		name = "tekton-" + t.target.Namespace
	}
	t.registrar = &tektonworker.Registrar{
		Workers:  workers,
		Target:   t.target,
		Worker:   tektonworker.Worker(name, f.resourceImages()),
		Interval: f.HeartbeatInterval,
		Logger:   logger.Session("worker"),
		Lander:   t.target,
	}
	if f.GCInterval > 0 {
		failed, oneOff := gc.DefaultRules.FailedGrace, gc.DefaultRules.OneOffGrace
		if cmd.RunCommand != nil { // the web node's --gc-* flags
			failed, oneOff = cmd.GC.FailedGracePeriod, cmd.GC.OneOffBuildGracePeriod
		}
		t.sweeper = &tektonworker.Sweeper{
			Target: t.target,
			Options: gc.Options{
				Rules:         tektonworker.ATCRules(failed, oneOff),
				ImageRegistry: opts.ImageRegistry,
			},
			Interval: f.GCInterval,
			Logger:   logger.Session("gc"),
		}
	}
	logger.Info("using-tekton", lager.Data{"target": t.target.Name, "namespace": t.target.Namespace, "worker": name})
	// A run of a build the database no longer has (of a pipeline destroyed and set
	// again) gives way to the new build of that name.
	var builds tektonengine.Builds
	if pipelines != nil && pipelines.BuildFactory != nil {
		builds = pipelines.BuildFactory
	}
	return &tektonengine.StepperFactory{Runs: tektonengine.NewRuns(t.backend, builds), Checks: checks, SetPipelines: pipelines, Fallback: fallback}
}

// contextRunner runs run (the registrar's, the sweeper's) as a member of the web node's
// process group, until it is signalled.
func contextRunner(run func(context.Context) error) ifrit.Runner {
	return ifrit.RunFunc(func(signals <-chan os.Signal, ready chan<- struct{}) error {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- run(ctx) }()
		close(ready)
		select {
		case <-signals:
			cancel()
			return <-done
		case err := <-done:
			return err
		}
	})
}
