package webcmd

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"code.cloudfoundry.org/lager/v3"
	"github.com/concourse/concourse/atc/db"
	"github.com/concourse/concourse/atc/engine"
	"github.com/concourse/concourse/atc/worker"
	"github.com/tedsuo/ifrit"

	"github.com/concourse-tekton/concourse-tekton/atc/tektonengine"
	"github.com/concourse-tekton/concourse-tekton/atc/tektonworker"
	"github.com/concourse-tekton/concourse-tekton/gc"
	"github.com/concourse-tekton/concourse-tekton/tektonrun"
	"github.com/concourse-tekton/concourse-tekton/translate"
	"github.com/concourse-tekton/concourse-tekton/translate/flagopts"
)

// TektonFlags say where the web node's builds run: a namespace of a Kubernetes cluster
// with Tekton. Each is also read from its CONCOURSE_TEKTON_* variable
// (CONCOURSE_TEKTON_NAMESPACE, ...; CONCOURSE_TEKTON_RESOURCE_IMAGE=git=IMG,mock=IMG).
type TektonFlags struct {
	Kubeconfig string `long:"kubeconfig" value-name:"PATH" description:"Run builds on Kubernetes, with this kubeconfig (default: KUBECONFIG, then ~/.kube/config, then the pod's service account)."`
	Context    string `long:"context" description:"Run builds on Kubernetes, in this kubeconfig context (default: its current context)."`
	Namespace  string `long:"namespace" description:"Run builds on Kubernetes, in this namespace (default: the context's, else the pod's, else default)."`
	InCluster  bool   `long:"in-cluster" description:"Run builds on Kubernetes, with the pod's service account, whatever kubeconfig there is."`

	RunnerImage         string        `long:"runner-image" value-name:"IMAGE" description:"The step runner's image (default: this version's, ghcr.io/concourse-tekton/runner)."`
	RunnerImageVolume   string        `long:"runner-image-volume" default:"auto" optional:"yes" optional-value:"true" choice:"auto" choice:"true" choice:"false" description:"Mount the runner's image into each step pod as a volume instead of copying the runner in with a container of its own: a container fewer a pod. auto: when the cluster is known to mount images (its API server and every node Kubernetes 1.35+, with containerd 2.1+ or CRI-O 1.31+), asked at most once a minute; true (the flag alone): always; false: never."`
	DefaultTaskImage    string        `long:"default-task-image" value-name:"IMAGE" description:"The image of a task that names none (its config no image_resource or rootfs_uri, its step no image), as Concourse runs such a task in its worker's default root file system (default: none, and such a task errors)."`
	ResourceImages      []string      `long:"resource-image" value-name:"TYPE=IMAGE" description:"The image of a base resource type, laid over the defaults (concourse/<type>-resource). Can be given multiple times."`
	NodeSelectors       []string      `long:"node-selector" value-name:"TAG=LABEL=VALUE" description:"Run the steps with a worker tag on the nodes with a label, on every target: a step tagged TAG runs on nodes labelled LABEL=VALUE. Can be given multiple times."`
	ServiceAccount      string        `long:"service-account" description:"The service account the builds' pods run as (default: the namespace's default)."`
	StorageClass        string        `long:"storage-class" description:"The storage class of build volumes (default: the cluster's)."`
	BuildVolumeSize     string        `long:"build-volume-size" default:"1Gi" description:"The size of each build's volume."`
	UserNamespaces      bool          `long:"user-namespaces" description:"Run every step that is not privileged in a user namespace of its own (hostUsers: false)."`
	TagServiceAccounts  []string      `long:"tag-service-account" value-name:"TAG=SERVICE_ACCOUNT" description:"Run the steps with a worker tag (tasks, gets, puts, checks) as a ServiceAccount of the namespace, with its token projected into the step alone: a cloud identity (IRSA, Workload Identity). Can be given multiple times; by default no step has a token."`
	TeamServiceAccounts []string      `long:"team-service-account" value-name:"TEAM=SERVICE_ACCOUNT" description:"Run the tasks of a team's builds whose tags map to no account (--tekton-tag-service-account) as a ServiceAccount, with its token projected into the task alone. Can be given multiple times."`
	IdentityAudience    string        `long:"identity-audience" default:"sts.amazonaws.com" description:"The audience of the token a step with a ServiceAccount has (EKS's IRSA by default)."`
	IdentityExpiration  time.Duration `long:"identity-expiration" default:"24h" description:"The lifetime of that token (the kubelet renews it before it ends; 10m at least)."`

	ImageRegistry       string `long:"image-registry" value-name:"HOST[:PORT][/PATH]" description:"The registry that tasks running an artifact as their image (a task's output, a get of a type other than registry-image) pull it from: the cluster's nodes must pull from it and the builds' pods reach it."`
	ImageRegistrySecret string `long:"image-registry-secret" value-name:"NAME" description:"The Secret (kubernetes.io/dockerconfigjson) with the image registry's credentials for pushing (default: concourse-image-registry, if it exists)."`

	WorkerName           string        `long:"worker-name" description:"The name the namespace has as a worker (default: tekton-<namespace>)."`
	Tags                 []string      `long:"tag" description:"A tag of the namespace's worker: steps with tags run on a worker with all of them, steps without on a worker without tags. Can be given multiple times."`
	Team                 string        `long:"team" description:"The team whose worker the namespace is: only its builds and checks run there, and they run nowhere else while it is running and fits them, as on a Concourse worker registered with --team (default: every team's)."`
	Targets              string        `long:"targets" value-name:"FILE" description:"A YAML list of further targets, each a worker of its own (worker, kubeconfig, context, namespace, in_cluster, tags, team, service_account, storage_class, build_volume_size, image_registry, image_registry_secret): each build runs on the running target whose tags match its steps' that runs the fewest builds, its team's own first."`
	HeartbeatInterval    time.Duration `long:"heartbeat-interval" default:"30s" description:"How often the namespace is checked and its worker heartbeated."`
	GardenBindIP         string        `long:"garden-bind-ip" default:"127.0.0.1" description:"The IP on which each namespace's worker serves the Garden API, through which this web node's fly intercept and fly hijack reach the builds' step containers. It authenticates no one: on a loopback address only this web node's own user may connect; on another, only the network protects it, as a Concourse worker's Garden."`
	GardenBindPort       int           `long:"garden-bind-port" value-name:"PORT" description:"The port of the first namespace's Garden API, the next ones' the ports after it (default: free ones). Several web nodes sharing a database need the same ports on a loopback address: each then reaches its own servers at the address the workers are registered with."`
	BaggageclaimBindIP   string        `long:"baggageclaim-bind-ip" default:"127.0.0.1" description:"The IP on which each namespace's worker serves the baggageclaim API, through which this web node keeps fly execute's inputs and outputs. It authenticates no one: on another address than a loopback one, only the network protects it."`
	BaggageclaimBindPort int           `long:"baggageclaim-bind-port" value-name:"PORT" description:"The port of the first namespace's baggageclaim API, the next ones' the ports after it (default: free ones; see --tekton-garden-bind-port)."`
	VolumesDir           string        `long:"volumes-dir" value-name:"DIR" description:"Where this web node keeps its copies of the workers' volumes (fly execute's inputs and outputs, which the database holds and every web node serves), a directory each (default: concourse-tekton-web/volumes in the user's cache directory)."`
	NoCheckContainers    bool          `long:"no-check-containers" description:"Run each check of a resource as a build of its own (a PipelineRun, a pod), rather than in the check container of the resource's config: a pod that serves its checks for as long as Concourse keeps its check session (up to an hour)."`
	CheckOverExec        bool          `long:"check-over-exec" description:"Run each check in its check container through pods/exec (the API server and the kubelet) rather than over the pod network to the container's runner: for a web node that cannot reach the builds' pods' IPs (one that can reach none falls back to pods/exec by itself, a pod at a time)."`
	GCInterval           time.Duration `long:"gc-interval" default:"10m" description:"How often the namespace is swept of what no build needs: of each job's and each check's ended builds, all but the newest (the database keeps their events), pods of ended builds (but the latest failed build's, for --gc-failed-grace-period), volumes; 0: never."`

	// revealSecrets is the web node's --disable-redact-secrets: the builds' steps then
	// show the credentials they use in their logs.
	revealSecrets bool
}

// Enabled tells whether builds run on Kubernetes: any flag that picks a cluster, a
// namespace or further targets says so.
func (f *TektonFlags) Enabled() bool {
	return f.Kubeconfig != "" || f.Context != "" || f.Namespace != "" || f.InCluster || f.Targets != ""
}

// settings are the flags the CLI has too.
func (f *TektonFlags) settings() flagopts.Flags {
	return flagopts.Flags{
		RunnerImage:         f.RunnerImage,
		RunnerVolume:        flagopts.RunnerVolume(f.RunnerImageVolume),
		DefaultTaskImage:    f.DefaultTaskImage,
		ResourceImages:      f.ResourceImages,
		NodeSelectors:       f.NodeSelectors,
		ServiceAccount:      f.ServiceAccount,
		StorageClass:        f.StorageClass,
		BuildVolumeSize:     f.BuildVolumeSize,
		UserNamespaces:      f.UserNamespaces,
		ImageRegistry:       f.ImageRegistry,
		ImageRegistrySecret: f.ImageRegistrySecret,
		TagAccounts:         f.TagServiceAccounts,
		TeamAccounts:        f.TeamServiceAccounts,
		IdentityAudience:    f.IdentityAudience,
		IdentityExpiration:  f.IdentityExpiration,
	}
}

// Options are the compile options every build starts from; the ATC's URL is given later.
func (f *TektonFlags) Options() (translate.Options, error) {
	opts, err := f.settings().Options(flagopts.Prefixed("--tekton-"))
	opts.RevealSecrets = f.revealSecrets
	return opts, err
}

// resourceImages are the images of every base resource type: the defaults, with the
// given ones (translate.Options.ResourceImages) over them.
func resourceImages(given map[string]string) map[string]string {
	images := maps.Clone(translate.DefaultResourceImages)
	maps.Copy(images, given)
	return images
}

// tekton is the web node's Kubernetes side: the targets builds run on, each a worker.
type tekton struct {
	targets []*tektonTarget
	// db is the ATC's database, once the ATC is constructed (nil: none, the volumes are
	// this web node's alone).
	db db.DbConn
}

// tektonTarget is one target: where its builds run, and the worker it is.
type tektonTarget struct {
	worker    string
	tags      []string
	team      string // the team whose worker it is (empty: every team's)
	target    *tektonrun.Target
	options   translate.Options
	backend   *tektonrun.Backend
	registrar *tektonworker.Registrar
	sweeper   *tektonworker.Sweeper // nil: --tekton-gc-interval=0
	// garden is the listener of the worker's Garden server (nil: none, the worker's
	// containers cannot be intercepted); reporter reports its containers, and its volumes.
	garden   net.Listener
	reporter *tektonworker.Reporter
	// baggageclaim is the listener of the worker's baggageclaim server, which serves
	// volumes (nil: none, the worker keeps no artifacts).
	baggageclaim net.Listener
	volumes      *tektonworker.Volumes
}

// openTekton loads the targets the flags name: the flags' own, then the --tekton-targets
// file's. It does not contact the clusters: the registrars' checks do, and say what is
// wrong in the log and in `fly workers`.
func (f *TektonFlags) openTekton() (*tekton, error) {
	opts, err := f.Options()
	if err != nil {
		return nil, err
	}
	specs := []tektonrun.TargetSpec{{Worker: f.WorkerName, Kubeconfig: f.Kubeconfig, Context: f.Context, Namespace: f.Namespace, InCluster: f.InCluster, Tags: f.Tags, Team: f.Team}}
	for _, tag := range f.Tags {
		if err := tektonrun.CheckTag(tag); err != nil {
			return nil, fmt.Errorf("--tekton-tag %w", err)
		}
	}
	if f.Targets != "" {
		more, err := tektonrun.ReadTargets(f.Targets)
		if err != nil {
			return nil, fmt.Errorf("--tekton-targets %w", err)
		}
		specs = append(specs, more...)
	}
	t := &tekton{}
	workers, places := map[string]string{}, map[string]string{}
	for i, s := range specs {
		where := "--tekton-*"
		if i > 0 {
			where = fmt.Sprintf("--tekton-targets %s:%d:%d: targets[%d]", f.Targets, s.Line, s.Column, i-1)
		}
		target, err := tektonrun.NewTarget(tektonrun.TargetOptions{
			Kubeconfig: s.Kubeconfig, Context: s.Context, Namespace: s.Namespace, InCluster: s.InCluster,
			UserAgent: "concourse-tekton-web",
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		name := s.WorkerName(target.Namespace)
		if other, ok := workers[name]; ok {
			return nil, fmt.Errorf("%s: worker %s is %s's name already: give it another (worker:)", where, name, other)
		}
		place := target.Config.Host + " " + target.Namespace
		if other, ok := places[place]; ok {
			return nil, fmt.Errorf("%s: namespace %s of %s is worker %s already: a namespace is one target", where, target.Namespace, target.Config.Host, other)
		}
		workers[name], places[place] = where, name
		o := opts
		o.ServiceAccount = cmp.Or(s.ServiceAccount, o.ServiceAccount)
		o.StorageClass = cmp.Or(s.StorageClass, o.StorageClass)
		o.BuildVolumeSize = cmp.Or(s.BuildVolumeSize, o.BuildVolumeSize)
		o.ImageRegistry = cmp.Or(strings.TrimSuffix(s.ImageRegistry, "/"), o.ImageRegistry)
		o.ImageRegistrySecret = cmp.Or(s.ImageRegistrySecret, o.ImageRegistrySecret)
		t.targets = append(t.targets, &tektonTarget{worker: name, tags: s.Tags, team: s.Team, target: target, options: o})
	}
	return t, nil
}

// ATC is what of the web node its Kubernetes side works with: its database's workers,
// containers, volumes and task caches, its worker pool (which reaches the workers' volumes),
// its URL.
type ATC struct {
	// DB is the ATC's database: the workers' volumes are kept there, for every web node
	// (nil: on this one's disk alone).
	DB      db.DbConn
	Workers db.WorkerFactory
	// Teams finds the teams whose workers namespaces are (--tekton-team, team:).
	Teams      db.TeamFactory
	Containers db.ContainerRepository
	Volumes    db.VolumeRepository
	// WorkerPool, when set, keeps one-off builds' artifacts on the workers' volumes
	// (fly execute's inputs and outputs).
	WorkerPool  *worker.Pool
	ExternalURL string
	// TaskCaches are the records of jobs' task caches, which job builds honour, so that
	// fly clear-task-cache clears them (nil: not recorded).
	TaskCaches tektonengine.TaskCaches
}

// StepperFactory is the build engine's StepperFactory, for the hook
// atccmd.NewStepperFactory, called while the web node is constructed: Concourse's own
// (fallback) unless the --tekton-* flags say where builds run. Then builds run there, all
// but check builds, which stay with fallback, and each target is registered as a worker
// through atc.Workers while the web node runs. Check builds run there too, saving versions
// through checks' database, unless checks is nil: then they go to fallback. set_pipeline
// steps set pipelines through pipelines (nil: they error).
func (cmd *WebCommand) StepperFactory(logger lager.Logger, fallback engine.StepperFactory, atc ATC, checks *tektonengine.CheckConfig, pipelines *tektonengine.SetPipelineConfig) engine.StepperFactory {
	if cmd.tekton == nil {
		logger.Info("using-concourse-default")
		return fallback
	}
	f := &cmd.Tekton
	// A run of a build the database no longer has (of a pipeline destroyed and set
	// again) gives way to the new build of that name.
	var builds tektonengine.Builds
	if pipelines != nil && pipelines.BuildFactory != nil {
		builds = pipelines.BuildFactory
	}
	failed, oneOff := gc.DefaultRules.FailedGrace, gc.DefaultRules.OneOffGrace
	if cmd.RunCommand != nil { // the web node's --gc-* flags
		failed, oneOff = cmd.GC.FailedGracePeriod, cmd.GC.OneOffBuildGracePeriod
	}
	// The workers keep fly execute's artifacts on their volumes, which the ATC's worker
	// pool reaches.
	keepsArtifacts := atc.WorkerPool != nil && atc.Volumes != nil
	cmd.tekton.db = atc.DB
	pool := &tektonengine.Pool{}
	for _, t := range cmd.tekton.targets {
		opts := t.options
		opts.ExternalURL = atc.ExternalURL
		t.backend = tektonrun.NewBackend(t.target, opts)
		if f.settings().MountRunnerWhereSupported() {
			t.backend.MountRunnerWhereSupported()
		}
		if f.CheckOverExec {
			t.backend.CheckOverExec()
		}
		worker := tektonworker.Worker(t.worker, resourceImages(opts.ResourceImages))
		worker.Tags, worker.Team = t.tags, t.team
		reporter := &tektonworker.Reporter{
			Worker:   t.worker,
			Interval: f.HeartbeatInterval,
			Logger:   logger.Session("reports", lager.Data{"worker": t.worker}),
		}
		if t.garden != nil && atc.Containers != nil {
			worker.GardenAddr = t.garden.Addr().String()
			reporter.Handles, reporter.Records = t.backend.Client(), atc.Containers
			reporter.Checks = tektonworker.TargetCheckRuns{Target: t.target}
		}
		if t.volumes != nil && keepsArtifacts {
			worker.BaggageclaimURL = "http://" + t.baggageclaim.Addr().String()
			reporter.Volumes, reporter.VolumeRecords = t.volumes, atc.Volumes
		}
		if reporter.Records != nil || reporter.VolumeRecords != nil {
			t.reporter = reporter
		}
		t.registrar = &tektonworker.Registrar{
			Workers:  atc.Workers,
			Teams:    atc.Teams,
			Target:   t.target,
			Worker:   worker,
			Interval: f.HeartbeatInterval,
			Logger:   logger.Session("worker", lager.Data{"worker": t.worker}),
			Lander:   t.target,
			Counter:  t.target,
		}
		if f.GCInterval > 0 {
			t.sweeper = &tektonworker.Sweeper{
				Target: t.target,
				Options: gc.Options{
					Rules:         tektonworker.ATCRules(failed, oneOff),
					ImageRegistry: opts.ImageRegistry,
				},
				Interval: f.GCInterval,
				Logger:   logger.Session("gc", lager.Data{"worker": t.worker}),
			}
		}
		pool.Workers = append(pool.Workers, tektonengine.Worker{Name: t.worker, Tags: t.tags, Team: t.team, Target: t.target, Runs: tektonengine.NewRuns(t.backend, builds)})
		logger.Info("using-tekton", lager.Data{"target": t.target.Name, "namespace": t.target.Namespace, "worker": t.worker, "tags": t.tags, "team": t.team})
	}
	if checks != nil {
		checks.CheckContainers = !f.NoCheckContainers
	}
	factory := &tektonengine.StepperFactory{Runs: pool, Checks: checks, SetPipelines: pipelines, Fallback: fallback, Containers: atc.Workers, TaskCaches: atc.TaskCaches}
	if keepsArtifacts {
		factory.Artifacts = tektonengine.PoolArtifacts{Pool: *atc.WorkerPool}
	}
	return factory
}

// listen opens the listeners of each target's Garden and baggageclaim servers, on
// --tekton-garden-bind-ip and --tekton-baggageclaim-bind-ip, at the ports their -port
// flags give (free ones without), and its volumes, in a directory of
// --tekton-volumes-dir named after its worker.
func (t *tekton) listen(logger lager.Logger, f *TektonFlags, volumesDir string) error {
	gardenIP, baggageclaimIP := f.GardenBindIP, f.BaggageclaimBindIP
	for flag, ip := range map[string]string{"--tekton-garden-bind-ip": gardenIP, "--tekton-baggageclaim-bind-ip": baggageclaimIP} {
		if parsed := net.ParseIP(ip); parsed == nil || !parsed.IsLoopback() {
			logger.Info("unauthenticated-server", lager.Data{"flag": flag, "ip": ip, "warning": "the server authenticates no one: whoever the network lets reach it can run commands in the builds' pods or read and write fly execute's volumes"})
		}
	}
	for flag, port := range map[string]int{"--tekton-garden-bind-port": f.GardenBindPort, "--tekton-baggageclaim-bind-port": f.BaggageclaimBindPort} {
		if port < 0 || port+len(t.targets)-1 > 65535 {
			return fmt.Errorf("%s %d: not a port for %d namespaces", flag, port, len(t.targets))
		}
	}
	for i, target := range t.targets {
		l, err := net.Listen("tcp", net.JoinHostPort(gardenIP, nthPort(f.GardenBindPort, i)))
		if err != nil {
			t.close()
			return fmt.Errorf("--tekton-garden-bind-ip, --tekton-garden-bind-port: %w", err)
		}
		target.garden = l
		if target.baggageclaim, err = net.Listen("tcp", net.JoinHostPort(baggageclaimIP, nthPort(f.BaggageclaimBindPort, i))); err != nil {
			t.close()
			return fmt.Errorf("--tekton-baggageclaim-bind-ip, --tekton-baggageclaim-bind-port: %w", err)
		}
		if target.volumes, err = tektonworker.OpenVolumes(logger.Session("volumes", lager.Data{"worker": target.worker}), filepath.Join(volumesDir, target.worker)); err != nil {
			t.close()
			return fmt.Errorf("--tekton-volumes-dir: %w", err)
		}
	}
	return nil
}

// nthPort is the port of the i-th target's server, from the flag's first one (0: a free
// one).
func nthPort(first, i int) string {
	if first == 0 {
		return "0"
	}
	return strconv.Itoa(first + i)
}

// share keeps the targets' volumes in the ATC's database, shared by every web node that
// uses it (tektonworker.VolumeDB).
func (t *tekton) share(ctx context.Context) error {
	if t.db == nil {
		return nil
	}
	for _, target := range t.targets {
		if target.volumes == nil || target.reporter == nil || target.reporter.VolumeRecords == nil {
			continue
		}
		if err := target.volumes.Share(ctx, t.db, t.db.EncryptionStrategy(), target.worker); err != nil {
			return fmt.Errorf("worker %s: %w", target.worker, err)
		}
	}
	return nil
}

// close closes the servers' listeners.
func (t *tekton) close() {
	for _, target := range t.targets {
		for _, l := range []net.Listener{target.garden, target.baggageclaim} {
			if l != nil {
				l.Close()
			}
		}
	}
}

// volumesDir is --tekton-volumes-dir, or its default.
func (f *TektonFlags) volumesDir() (string, error) {
	if f.VolumesDir != "" {
		return f.VolumesDir, nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("--tekton-volumes-dir is not given, and there is no cache directory for its default: %w", err)
	}
	return filepath.Join(cache, "concourse-tekton-web", "volumes"), nil
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
