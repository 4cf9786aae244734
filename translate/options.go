package translate

import (
	"fmt"
	"strings"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// Options say what the plan belongs to and how its steps meet the cluster.
type Options struct {
	Team     string
	Pipeline string
	Job      string
	// Build names the build; the PipelineRun is <pipeline>-<job>-<build>.
	Build string
	// OneOff compiles a one-off build (fly execute): Pipeline and Job then only name its
	// objects. Its steps see no pipeline or job (no BUILD_PIPELINE_NAME or BUILD_JOB_NAME,
	// no task caches kept), its volume is kept whole when it ends (its outputs are read
	// from it), its PipelineRun carries its Pipeline's spec (no other build shares it),
	// and its plan may hold artifact inputs and outputs (Result.ArtifactInputs).
	OneOff bool
	// Check compiles a check build (the web node's check of a resource or a resource
	// type): Job and Build then only name its objects and key its volume. Its resource
	// scripts see a build named check, of no job (runspec.Build.Check).
	Check bool
	// RevealSecrets leaves the credentials the steps use unredacted in their logs (the web
	// node's --disable-redact-secrets; runspec.Build.RevealSecrets). By default they show
	// as ((redacted)), as Concourse 8 always shows them.
	RevealSecrets bool
	// BuildPipeline is the pipeline a one-off build belongs to (fly execute -j, whose
	// build is its pipeline's), which its steps see (BUILD_PIPELINE_NAME), as Concourse's
	// steps see a pipeline build's; empty: none.
	BuildPipeline string
	// TaskCaches, when not nil, are the records an ATC's database holds of the job's task
	// caches: by step name, the ID of each cache path's record. Each task of the job gets
	// its step's (runspec.Task.CacheRecords): a cache whose record is gone starts empty,
	// and the task lists its cache paths (runspec.ResultCaches) for the ATC to record.
	// nil: the caches are not recorded, and are kept until the job's volume goes.
	TaskCaches map[string]map[string]int
	// InstanceVars are the pipeline's instance vars, if it is an instanced pipeline.
	InstanceVars map[string]any
	// BuildLogRetention is the job's (concourse.JobConfig.LogRetention), kept on its
	// Pipeline and PipelineRun for gc; nil: the job sets none.
	BuildLogRetention *concourse.BuildLogRetention
	// ExternalURL is the ATC's URL, for the BUILD_URL the resource scripts see.
	ExternalURL string
	// The ATC's IDs of the build's team, pipeline and job, the build's own, and its
	// creator, which resource scripts see (BUILD_TEAM_ID, BUILD_PIPELINE_ID, BUILD_JOB_ID,
	// BUILD_ID, BUILD_CREATED_BY); zero where there is none. The build's own and its
	// creator are on its run alone, so that the job's Pipeline is the same for every build.
	TeamID, PipelineID, JobID, BuildID int64
	CreatedBy                          string

	// RunnerImage is the step runner's image.
	RunnerImage string
	// DefaultTaskImage is the image of a task that names none (its config has no
	// image_resource and no rootfs_uri, its step no image), as Concourse runs such a task
	// in its worker's default root file system. Empty: such a task cannot be compiled, and
	// one whose config is read when the build runs errors.
	DefaultTaskImage string
	// ResourceImages maps base resource types to images; it is laid over DefaultResourceImages.
	ResourceImages map[string]string
	// TaskFiles are task configs known at convert time, by the `artifact/path` a task's
	// `file:` names. Such tasks need no resolve step.
	TaskFiles map[string]concourse.TaskConfig
	// NodeSelectors map worker tags to node labels: a step tagged `t` runs on nodes with
	// the labels NodeSelectors[t].
	NodeSelectors map[string]map[string]string
	// Identity maps steps to the ServiceAccounts whose tokens they run with, a cloud
	// identity each (IRSA, Workload Identity): none by default, every step's pod then
	// running as ServiceAccount without a token.
	Identity Identity
	// VarSources are the names of the pipeline's var_sources, whose ((source:var)) the
	// runner reads from Secrets.
	VarSources []string
	// SuppliedCredentials has the build's credentials supplied by whoever starts it (an
	// ATC resolves them through its credential manager and the pipeline's var_sources)
	// rather than looked up by its steps in the namespace's Secrets: every ((var)) of
	// the build, with any var source, is listed in Result.Credentials for the starter to
	// resolve into the build's own Secret (Result.CredentialSecret), and each step mounts
	// the keys of its own vars. VarSources is then unused.
	SuppliedCredentials bool
	// ImageRegistry (HOST[:PORT][/PATH]) is where a task's image that an earlier step made
	// or fetched as files (a task's output, a get of a type other than registry-image)
	// is pushed, for the task's pod to pull it: the cluster's nodes must pull from it,
	// and the build's pods reach it. It is the PipelineRun's param; a Pipeline that needs
	// it declares it, and a build without one errors such a task.
	ImageRegistry string
	// With ImageRegistry, a job build's gets (and the fetches of images that are the mock
	// resource fetching itself) share their resource caches with the team's other jobs
	// through the namespace's store in that registry (see runspec's ResourceCacheIndex).
	// ImageRegistrySecret names the Secret (kubernetes.io/dockerconfigjson) of the
	// registry's credentials for pushing; default runspec.DefaultImageRegistrySecret,
	// used if it exists. Pulls use the service account's imagePullSecrets, as any pod's.
	ImageRegistrySecret string
	// ServiceAccount runs the build's pods; empty means the namespace's default.
	ServiceAccount string
	// BuildVolumeSize is the size requested for the build volume; default 1Gi.
	BuildVolumeSize string
	// StorageClass is the build volume's storage class; empty means the cluster default.
	StorageClass string
	// UserNamespaces runs every step that is not privileged in a user namespace of its
	// own (the pod's hostUsers: false): root in the container is an unprivileged user on
	// the node, as in Concourse's unprivileged Garden containers. The cluster must
	// support it (Kubernetes 1.33+, a runtime and file systems with idmap mounts).
	UserNamespaces bool
	// RunnerImageVolume mounts the runner's image into each step pod as a volume
	// (Kubernetes' image volumes) instead of copying the runner out of it by a step of
	// its own: a container fewer in every step pod. The cluster must support it
	// (Kubernetes 1.35+, or 1.33+ with the ImageVolume feature gate; containerd 2.1+ or
	// CRI-O 1.31+): elsewhere the pods never start.
	RunnerImageVolume bool
	// AcrossSlots is how many combinations of values an across step whose values are
	// known only at run time can run: the Pipeline has that many copies of its substep,
	// and a build with more combinations errors the step. Default DefaultAcrossSlots.
	AcrossSlots int
}

// DefaultAcrossSlots is the default of Options.AcrossSlots.
const DefaultAcrossSlots = 32

// DefaultRunnerImage is the step runner image of this version of the project.
const DefaultRunnerImage = "ghcr.io/concourse-tekton/runner:dev"

// DefaultResourceImages are the images of Concourse's base resource types.
var DefaultResourceImages = map[string]string{
	"bosh-io-release":    "concourse/bosh-io-release-resource",
	"bosh-io-stemcell":   "concourse/bosh-io-stemcell-resource",
	"cf":                 "concourse/cf-resource",
	"docker-image":       "concourse/docker-image-resource",
	"git":                "concourse/git-resource",
	"github-release":     "concourse/github-release-resource",
	"hg":                 "concourse/hg-resource",
	"mock":               "concourse/mock-resource",
	"pool":               "concourse/pool-resource",
	"registry-image":     "concourse/registry-image-resource",
	"s3":                 "concourse/s3-resource",
	"semver":             "concourse/semver-resource",
	"time":               "concourse/time-resource",
	"tracker":            "concourse/tracker-resource",
	"concourse-pipeline": "concourse/concourse-pipeline-resource",
}

func (o Options) withDefaults() Options {
	if o.Team == "" {
		o.Team = "main"
	}
	if o.Build == "" {
		o.Build = "1"
	}
	if o.RunnerImage == "" {
		o.RunnerImage = DefaultRunnerImage
	}
	if o.AcrossSlots < 1 {
		o.AcrossSlots = DefaultAcrossSlots
	}
	if o.BuildVolumeSize == "" {
		o.BuildVolumeSize = "1Gi"
	}
	images := map[string]string{}
	for k, v := range DefaultResourceImages {
		images[k] = v
	}
	for k, v := range o.ResourceImages {
		images[k] = v
	}
	o.ResourceImages = images
	return o
}

// UnsupportedError is a construct the translation cannot express, with what to do instead.
type UnsupportedError struct {
	// PlanID is the node of the translated plan the construct is in: for a node of an
	// across substep, the node of the substep's template. planner.Build's Paths give the
	// step of the pipeline it came from.
	PlanID concourse.PlanID
	// Step is the step's name, if it has one.
	Step   string
	Reason string
}

func (e *UnsupportedError) Error() string {
	if e.Step != "" {
		return fmt.Sprintf("step %q (plan %s): %s", e.Step, e.PlanID, e.Reason)
	}
	return fmt.Sprintf("plan %s: %s", e.PlanID, e.Reason)
}

// imageFromResource turns a registry-image or docker-image source into an image reference,
// or says why it cannot (the reason completes "... cannot be run here: ").
func imageFromResource(typ string, source concourse.Source, version concourse.Version) (string, string) {
	if !runspec.RegistryImageType(typ) {
		return "", fmt.Sprintf("it is of type %q, and only registry-image or docker-image images can", typ)
	}
	repo, _ := source["repository"].(string)
	switch {
	case repo == "":
		return "", "its source has no repository"
	case strings.Contains(repo, "(("):
		return "", fmt.Sprintf("its repository %q holds a ((var)) left for run time: give its value at convert time (-v, -y or -l)", repo)
	}
	if d := version["digest"]; d != "" {
		if strings.Contains(d, "((") {
			return "", fmt.Sprintf("its digest %q holds a ((var)) left for run time: give its value at convert time (-v, -y or -l)", d)
		}
		return repo + "@" + d, ""
	}
	tag := "latest"
	switch t := source["tag"].(type) {
	case string:
		if t != "" {
			tag = t
		}
	case float64:
		tag = strings.TrimSuffix(fmt.Sprintf("%v", t), ".0")
	}
	if strings.Contains(tag, "((") {
		return "", fmt.Sprintf("its tag %q holds a ((var)) left for run time: give its value at convert time (-v, -y or -l)", tag)
	}
	return repo + ":" + tag, ""
}

// imageFromRootfsURI turns `docker:///busybox#1.35` into busybox:1.35.
func imageFromRootfsURI(uri string) (string, bool) {
	rest, ok := strings.CutPrefix(uri, "docker:///")
	if !ok || rest == "" {
		return "", false
	}
	if name, tag, found := strings.Cut(rest, "#"); found {
		return name + ":" + tag, true
	}
	return rest, true
}

// Identity maps steps to ServiceAccounts, whose token a step's pod alone then has: a
// step runs as the ServiceAccount its tags map to (ByTag), else a task as its build's
// team's (ByTeam); any other step has no token at all. The token is projected at
// IdentityTokenPath for Audience, for ExpirationSeconds (the kubelet renews it), and the
// pod runs as the ServiceAccount, which is what a cloud's own webhook (EKS's IRSA) or
// metadata server (GKE's Workload Identity) goes by.
type Identity struct {
	// ByTag maps worker tags to ServiceAccounts: a task, get, put or check with the tag
	// runs as the tag's ServiceAccount (two of its tags mapping to two accounts: an error).
	ByTag map[string]string
	// ByTeam maps teams to ServiceAccounts: a task of the team's builds whose tags map to
	// none runs as the team's. Gets, puts and checks run a resource type's code, and have
	// a token only when their tags map to one.
	ByTeam map[string]string
	// Audience is the token's audience (default DefaultIdentityAudience).
	Audience string
	// ExpirationSeconds is the token's lifetime (default DefaultIdentityExpiration;
	// Kubernetes' least is 600).
	ExpirationSeconds int64
}

// Defaults of Identity: the audience and lifetime of the tokens EKS's IRSA projects.
const (
	DefaultIdentityAudience   = "sts.amazonaws.com"
	DefaultIdentityExpiration = 86400
)

// IdentityTokenPath is where a step with an identity finds its token; the step's
// environment names it as IdentityTokenEnv.
const (
	IdentityTokenDir  = "/var/run/secrets/concourse-tekton/identity"
	IdentityTokenPath = IdentityTokenDir + "/token"
	IdentityTokenEnv  = "CONCOURSE_IDENTITY_TOKEN_FILE"
)

// account is the ServiceAccount a step of mode with tags, of team's build, runs as ("":
// none), or an error when its tags map to two.
func (id Identity) account(team string, mode runspec.Mode, tags []string) (string, error) {
	var sa, from string
	for _, t := range tags {
		a, ok := id.ByTag[t]
		if !ok || a == sa {
			continue
		}
		if sa != "" {
			return "", fmt.Errorf("its tags %s and %s map to two service accounts, %s and %s: a step runs as one", from, t, sa, a)
		}
		sa, from = a, t
	}
	if sa == "" && mode == runspec.ModeTask {
		sa = id.ByTeam[team]
	}
	return sa, nil
}

func (id Identity) audience() string {
	if id.Audience != "" {
		return id.Audience
	}
	return DefaultIdentityAudience
}

func (id Identity) expiration() int64 {
	if id.ExpirationSeconds > 0 {
		return id.ExpirationSeconds
	}
	return DefaultIdentityExpiration
}
