package runspec

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// The names the translator writes into Tekton objects and pods, and that the backend,
// the volume manager and the runner read back: one spelling for both sides.

// Where the runner lives: RunnerBinary in the runner image, copied by the Task's first
// step to RunnerPath in RunnerDir (an emptyDir every step of the pod mounts), or, with
// the runner's image as the pod's volume, RunnerBinary's directory of it mounted as
// RunnerDir (translate.Options.RunnerImageVolume).
const (
	RunnerBinary = "/ko-app/concourse-runner"
	RunnerDir    = "/concourse-runner"
	RunnerPath   = RunnerDir + "/concourse-runner"
)

// Publishing an image artifact: ImageTool, in the runner image, pushes it to the build's
// registry (the Pipeline's param ParamImageRegistry, HOST[:PORT][/PATH]) as the repository
// <registry>/<namespace>, tagged with the publishing TaskRun's name. A publish step's Task
// takes the registry and the name of a Docker config Secret (ParamImageRegistrySecret,
// default DefaultImageRegistrySecret, optional) and mounts that Secret's config.json at
// RegistryAuthDir.
// ParamBuildName is the Pipeline's param that names the build a run is: the steps' specs
// say "$(params.build-name)" for the build's name (BUILD_NAME), so that a job's Pipeline
// is the same for every build of one version of the job.
const ParamBuildName = "build-name"

const (
	ImageTool                  = "/ko-app/concourse-image"
	ParamImageRegistry         = "image-registry"
	ParamImageRegistrySecret   = "image-registry-secret"
	DefaultImageRegistrySecret = "concourse-image-registry"
	RegistryAuthDir            = "/concourse-registry-auth"
)

// The step Task's shape: its params, its steps (and their containers, named
// "step-<step>" by Tekton), and the workspace of the build volume.
const (
	ParamImage = "image"
	ParamSpec  = "spec"

	StepInstall = "install-runner"
	StepRun     = "run"
	// StepVerdict is the step after StepRun of the build's last step when it holds the
	// verdict (Verdict.Fused), and ParamVerdictSpec that verdict's spec.
	StepVerdict      = "verdict"
	ParamVerdictSpec = "verdict-spec"
	// StepContainer is the container of StepRun: the one that runs the step's process.
	StepContainer = "step-" + StepRun
	// InstallContainer is the container of StepInstall, which copies the runner into the
	// pod before StepRun begins.
	InstallContainer = "step-" + StepInstall

	// Workspace is the Pipeline workspace (and the Task's, and the abort pod's volume)
	// that holds the build volume.
	Workspace = "build"

	// VerdictTask is the finally PipelineTask whose outcome result is the build's, unless
	// the build's last step recorded it (LabelVerdict).
	VerdictTask = "verdict"
	// LabelVerdict, on a step Task and so on its TaskRuns, marks the Task of a build's
	// last step that holds the verdict (Verdict.Fused): when the build succeeded, its
	// ResultVerdict and ResultVerdictError are the verdict's outcome and error results.
	LabelVerdict = LabelPrefix + "verdict"
	VerdictFused = "fused"
)

// The Tekton results a runner writes to Paths.Results (see the package doc).
const (
	ResultOutcome    = "outcome"
	ResultError      = "error"
	ResultExitStatus = "exit-status"
	ResultVersion    = "version"
	ResultVersions   = "versions"
	ResultMetadata   = "metadata"
	ResultImage      = "image"
	ResultConfig     = "config"
	ResultCount      = "count"
	// ResultCaches are the cache paths of a task whose caches are recorded
	// (Task.CacheRecords), as a JSON list.
	ResultCaches = "caches"
	// ResultVars is, with supplied credentials, the ((vars)) a task file read at run
	// time needs from the build's starter: its resolve step lists them (JSON, sorted
	// references, never a value), and the starter answers with the task's vars Secret
	// (TaskVarsSecret).
	ResultVars = "vars"
	// ResultPull is, with supplied credentials, the credentials of the registry of the
	// image a task file read at run time names, as the file writes them (Pull, JSON;
	// empty for none): the build's starter looks their ((vars)) up, and adds them to the
	// build's Secret of image pull credentials before it makes the task's vars Secret,
	// which the task's pod waits for before its image is pulled.
	ResultPull = "pull"
	// ResultVerdict and ResultVerdictError are a fused verdict's ResultOutcome and
	// ResultError (Verdict.Fused), beside its step's own.
	ResultVerdict      = "verdict"
	ResultVerdictError = "verdict-error"
)

// Pull is the credentials of the registry of a task file's image (ResultPull): its
// repository, resolved, and its username and password as the file writes them, whose
// ((vars)) the build's starter looks up. A password written out is never one: it would
// be in the TaskRun's status.
type Pull struct {
	Repository string `json:"repository"`
	Username   string `json:"username,omitempty"`
	Password   string `json:"password"`
}

// ParamTaskVars is the step Task's param naming a task's vars Secret, when its config is
// a file read at run time and the build's credentials are supplied.
const ParamTaskVars = "task-vars"

// TaskVarsSecret is the name of the Secret with the values of the ((vars)) that the task
// file read by the resolve step resolveTask (its PipelineTask) of the build run needs,
// each under its CredentialKey as JSON, as in the build's own Secret. Its starter makes
// it once the resolve step has listed them (ResultVars); the task's pod waits for it.
func TaskVarsSecret(run, resolveTask string) string {
	return run + "-" + resolveTask
}

// TaskVarsErrorKey in a task's vars Secret, in place of the vars, is why they could not
// be looked up (a credential manager's error): the task errors with it. Never a key of a
// var (CredentialKey never starts with a dot).
const TaskVarsErrorKey = ".error"

// LabelTaskVarsOf on a task's vars Secret is the name of the build's PipelineRun.
const LabelTaskVarsOf = LabelPrefix + "task-vars-of"

// AnnotationCredentials on a build's PipelineRun lists, as JSON, the ((vars)) its steps
// read from Secrets: each var's candidate Secrets and key, never a value. The backend
// reads those Secrets to redact their values in every step's events, as Concourse
// redacts every credential of a build in all of its output.
const AnnotationCredentials = "concourse-ci.org/credentials"

// AnnotationInstanceVars on the objects of an instanced pipeline's build holds its
// instance vars as JSON (keys sorted): with the team, pipeline and job, what tells its
// job apart from the job of another instance.
const AnnotationInstanceVars = "concourse-ci.org/instance-vars"

// AnnotationOneOff ("true") on a one-off build's PipelineRun and build volume: the build
// belongs to no job, and its volume, kept whole for its outputs to be downloaded, is
// never a job's cache source.
const AnnotationOneOff = "concourse-ci.org/one-off"

// AnnotationBuildContext on a build's PipelineRun is what every step of the build knows
// of it but its name, as the JSON of a Build (team, pipeline, instance vars, job, the
// ATC's URL and IDs, the build's creator): once for the whole build, where each step's
// spec would repeat it. The job's Pipeline has the job's part (all but the build's own ID
// and creator), the same for each of its builds. Tekton passes a PipelineRun's
// annotations, and its Pipeline's, on to the step pods, whose runner reads it from
// EnvBuildContext.
const AnnotationBuildContext = "concourse-ci.org/build-context"

// EnvBuildContext is the runner's environment variable that the step Task sets from the
// pod's AnnotationBuildContext (the downward API); the step's own processes never see it.
const EnvBuildContext = "CONCOURSE_TEKTON_BUILD_CONTEXT"

// AnnotationBuildLogRetention on a job's Pipeline and its builds' PipelineRuns is the
// job's build_log_retention as JSON (builds, days, minimum_succeeded_builds); gc applies
// the newest build's. Without it the job keeps its builds as the target's defaults say.
const AnnotationBuildLogRetention = "concourse-ci.org/build-log-retention"

// AnnotationRunnerImage on a build's PipelineRun is the runner image its steps install
// the runner from, which the pods made beside its steps (abort, intercept) run too.
const AnnotationRunnerImage = LabelPrefix + "runner-image"

// ImagePullSecretSuffix ends the name of a build's Secret of image pull credentials,
// after its PipelineRun's name.
const ImagePullSecretSuffix = "-image-pull"

// The labels of the pods made beside a build's steps, which gc sweeps once they are done.
const (
	// LabelIntercept marks the pods made again from a finished step's for an intercept
	// session.
	LabelIntercept = LabelPrefix + "intercept"
	// LabelTransfer marks the pods that move a one-off build's artifacts.
	LabelTransfer = LabelPrefix + "transfer"
)

// The labels on every object of a build. A label value is cut and made label-safe
// (LabelValue); the exact Concourse name is in an annotation of the same key.
const (
	LabelPrefix    = "concourse-ci.org/"
	LabelTeam      = LabelPrefix + "team"
	LabelPipeline  = LabelPrefix + "pipeline"
	LabelJob       = LabelPrefix + "job"
	LabelBuild     = LabelPrefix + "build"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedBy      = "concourse-tekton"
)

// LabelValue makes a label value of a Concourse name (team, pipeline, job, build): at most
// 63 characters of [A-Za-z0-9._-], starting and ending with an alphanumeric. A value that
// had to be cut keeps a hash of the whole, so it stays unique.
func LabelValue(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	out := strings.Trim(b.String(), "._-")
	if len(out) > 63 {
		out = strings.Trim(out[:52], "._-") + "-" + ShortHash(s)
	}
	return out
}

// ShortHash is the first 10 hex digits of the SHA-256 of s: the suffix that keeps a name
// unique when it had to be cut or changed.
func ShortHash[T string | []byte](s T) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:5])
}

// RegistryImageType tells whether resources of a type name an image in a registry, which
// a node pulls as it is (the source's repository and tag, a get's digest): registry-image
// and docker-image.
func RegistryImageType(typ string) bool {
	return typ == "registry-image" || typ == "docker-image"
}
