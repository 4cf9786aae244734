package translate

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/tektoncd/pipeline/pkg/apis/pipeline/pod"
	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// Result is a compiled build: the Tasks its steps share, the Pipeline of its job and the
// PipelineRun of the build. Its Tasks are shared with other Results: read them, copy them
// to change them.
type Result struct {
	Tasks       []*v1.Task
	Pipeline    *v1.Pipeline
	PipelineRun *v1.PipelineRun
	// Secrets are the names of the Secrets the build may read credentials from (each is
	// optional: a missing one just means the var is looked for elsewhere).
	Secrets []string
	// Credentials are the ((vars)) the build reads from those Secrets, sorted by Var; or,
	// with Options.SuppliedCredentials, every ((var)) it reads.
	Credentials []Credential
	// CredentialSecret is, with Options.SuppliedCredentials and credentials to supply,
	// the build's Secret of them without its data: named after the PipelineRun, with its
	// labels and annotations. The starter fills in a key per credential (Credential.Key:
	// the value as JSON), creates it before the PipelineRun, and gives it to the
	// PipelineRun to own.
	CredentialSecret *corev1.Secret
	// ImagePulls are the credentials of the registries of the images its pods pull with
	// some (a registry image's source with a username or password), one per registry.
	// ImagePullSecret is then the build's Secret (kubernetes.io/dockerconfigjson) of them,
	// without its data, named after the PipelineRun with runspec.ImagePullSecretSuffix, which
	// those pods name as their imagePullSecrets: the starter resolves their ((vars)) (in
	// Credentials with the others), fills in its Docker config, creates it before the
	// PipelineRun, and gives it to the PipelineRun to own. With supplied credentials, the
	// pods of tasks whose config is a file read at run time name it too, and it is there
	// with no ImagePulls if need be: their starter adds the credentials the task's resolve
	// step gives (runspec.ResultPull) before their pods pull.
	ImagePulls      []ImagePull
	ImagePullSecret *corev1.Secret
	// RunnerImage is the step runner's image, which the backend also runs on its own
	// (to abort a build between steps).
	RunnerImage string
	// ArtifactInputs are the artifacts a one-off build's starter uploads onto its volume
	// before its PipelineRun is created, in plan order; ArtifactOutputs the names of the
	// artifacts it may download from the volume once the build has ended.
	ArtifactInputs  []ArtifactInput
	ArtifactOutputs []string
	// Warnings are what compiled but will error when the build runs (a step of a base
	// resource type no image is known for), each at its node of the plan.
	Warnings []*UnsupportedError
}

// ArtifactInput is an artifact of a one-off build that its starter uploads (fly execute's
// -i): the files go into Dir, relative to the build volume's root, and the artifact is
// registered under Name, in the build's root scope (see runspec), for its steps to find.
type ArtifactInput struct {
	PlanID     concourse.PlanID
	ArtifactID int
	Name       string
	Dir        string
}

// Translate compiles one build's plan into Tekton objects. It is pure and deterministic.
func Translate(plan concourse.Plan, opts Options) (*Result, error) {
	opts = opts.withDefaults()
	if opts.Pipeline == "" || opts.Job == "" {
		return nil, fmt.Errorf("translating a plan needs the pipeline and job names")
	}
	if q, _ := json.Marshal(opts.Build); string(q) != `"`+opts.Build+`"` || strings.Contains(opts.Build, "$(") {
		return nil, fmt.Errorf("invalid build name %q: no quotes, backslashes, control characters or $(", opts.Build)
	}
	c := &compiler{
		opts:           opts,
		names:          map[string]bool{runspec.VerdictTask: true},
		taskDefs:       map[string]*v1.Task{},
		taskNames:      map[string]string{},
		acrossSubsteps: map[string][]json.RawMessage{},
		specs:          map[string]*runspec.Spec{},
		variants:       map[string]taskVariant{},
		secrets:        map[string]bool{},
		creds:          map[string]Credential{},
		secretsFor:     map[string][]secretMount{},
		images:         map[string]string{},
		pulls:          map[string]ImagePull{},
		runtimePulls:   map[string]bool{},
		failureHooks:   map[concourse.PlanID][]string{},
	}
	root := c.compile(&plan, cond{}, scope{})
	if c.err != nil {
		return nil, c.err
	}
	verdictSpec := c.spec(runspec.ModeVerdict, plan.ID, runspec.VerdictTask, scope{})
	verdictSpec.Verdict = &runspec.Verdict{Tree: withSubsteps(root.tree, c.acrossSubsteps)}
	// As root: the verdict empties the build volume of what steps of any user left there
	// (all but caches/), for the job's next build to clone.
	finally := []v1.PipelineTask{c.pipelineTask(runspec.VerdictTask, opts.RunnerImage, taskVariant{asRoot: true}, &verdictSpec, cond{})}
	finally[0].OnError = ""
	if t, inline := c.fusedVerdictTask(root.tree); t != "" {
		c.fuseVerdict(t, inline, verdictSpec, finally)
	}
	c.finish(c.tasks)
	c.finish(finally)
	pulls, pullsNamed := c.imagePulls(c.runName()+runspec.ImagePullSecretSuffix, c.tasks, finally)
	if c.err != nil {
		return nil, c.err
	}

	scope := Scope(opts.Team, opts.Pipeline, opts.InstanceVars)
	name := PipelineName(scope, opts.Job)
	labels := map[string]string{
		runspec.LabelTeam:      runspec.LabelValue(opts.Team),
		runspec.LabelPipeline:  runspec.LabelValue(opts.Pipeline),
		runspec.LabelJob:       runspec.LabelValue(opts.Job),
		runspec.LabelManagedBy: runspec.ManagedBy,
	}
	annotations := map[string]string{
		runspec.LabelTeam:     opts.Team,
		runspec.LabelPipeline: opts.Pipeline,
		runspec.LabelJob:      opts.Job,
	}
	if len(opts.InstanceVars) > 0 {
		buf, err := json.Marshal(opts.InstanceVars)
		if err != nil {
			return nil, fmt.Errorf("encoding the instance vars: %w", err)
		}
		annotations[runspec.AnnotationInstanceVars] = string(buf)
	}
	if r := opts.BuildLogRetention; r != nil && !opts.OneOff {
		buf, err := json.Marshal(r)
		if err != nil {
			return nil, fmt.Errorf("encoding the build log retention: %w", err)
		}
		annotations[runspec.AnnotationBuildLogRetention] = string(buf)
	}
	jobContext, buildContext, err := c.buildContext()
	if err != nil {
		return nil, err
	}
	// On the Pipeline, for a run that another tool starts from it (Tekton merges the
	// Pipeline's annotations into its runs'), and on the run, whose spec may be embedded,
	// with what is the build's own.
	pipelineAnnotations := withEntry(annotations, runspec.AnnotationBuildContext, jobContext)
	pipeline := &v1.Pipeline{
		TypeMeta: metav1.TypeMeta{APIVersion: "tekton.dev/v1", Kind: "Pipeline"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      labels,
			Annotations: pipelineAnnotations,
		},
		Spec: v1.PipelineSpec{
			DisplayName: fmt.Sprintf("%s/%s", opts.Pipeline, opts.Job),
			Description: fmt.Sprintf("Job %s of Concourse pipeline %s (team %s), compiled by concourse-tekton.", opts.Job, opts.Pipeline, opts.Team),
			Workspaces:  []v1.PipelineWorkspaceDeclaration{{Name: runspec.Workspace, Description: "the build's volume: artifacts, caches and the runner's state"}},
			Tasks:       c.tasks,
			Finally:     finally,
		},
	}
	// The build's name is the run's, not the job's: each run gives it.
	pipeline.Spec.Params = v1.ParamSpecs{{Name: runspec.ParamBuildName, Type: v1.ParamTypeString,
		Description: "the build's name (BUILD_NAME): each run gives its own"}}
	runParams := v1.Params{{Name: runspec.ParamBuildName, Value: *v1.NewStructuredValues(opts.Build)}}
	if c.publishes > 0 || c.shares > 0 {
		// The registry is the target's, not the pipeline's: each run gives it.
		pipeline.Spec.Params = append(pipeline.Spec.Params, v1.ParamSpec{Name: runspec.ParamImageRegistry, Type: v1.ParamTypeString, Default: v1.NewStructuredValues(""),
			Description: "the image registry (HOST[:PORT][/PATH]) that tasks running an artifact as their image pull it from; the cluster must pull from it"})
		if opts.ImageRegistry != "" {
			runParams = append(runParams, v1.Param{Name: runspec.ParamImageRegistry, Value: *v1.NewStructuredValues(opts.ImageRegistry)})
		}
	}
	if c.publishes > 0 {
		pipeline.Spec.Params = append(pipeline.Spec.Params, v1.ParamSpec{Name: runspec.ParamImageRegistrySecret, Type: v1.ParamTypeString, Default: v1.NewStructuredValues(runspec.DefaultImageRegistrySecret),
			Description: "the Secret (kubernetes.io/dockerconfigjson) with the registry's credentials, if it needs any"})
		if opts.ImageRegistrySecret != "" {
			runParams = append(runParams, v1.Param{Name: runspec.ParamImageRegistrySecret, Value: *v1.NewStructuredValues(opts.ImageRegistrySecret)})
		}
	}
	if c.shares > 0 {
		pipeline.Spec.Params = append(pipeline.Spec.Params, v1.ParamSpec{Name: runspec.ParamResourceCacheSecret, Type: v1.ParamTypeString, Default: v1.NewStructuredValues(runspec.DefaultResourceCacheSecret),
			Description: "the Secret (kubernetes.io/dockerconfigjson) with the credentials of the store of shared resource caches, if the registry wants any: the steps that share run resource types' code"})
	}

	runLabels := withEntry(labels, runspec.LabelBuild, runspec.LabelValue(opts.Build))
	size, err := resource.ParseQuantity(opts.BuildVolumeSize)
	if err != nil {
		return nil, fmt.Errorf("invalid build volume size %q: %w", opts.BuildVolumeSize, err)
	}
	claim := &corev1.PersistentVolumeClaim{
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
		},
	}
	if opts.StorageClass != "" {
		sc := opts.StorageClass
		claim.Spec.StorageClassName = &sc
	}
	claim.Labels = runLabels
	runAnnotations := withEntry(withEntry(annotations, runspec.AnnotationBuildContext, buildContext), runspec.LabelBuild, opts.Build)
	if opts.OneOff {
		runAnnotations[runspec.AnnotationOneOff] = "true"
	}
	if creds := credentials(c.creds); len(creds) > 0 {
		buf, err := json.Marshal(creds)
		if err != nil {
			return nil, err
		}
		runAnnotations[runspec.AnnotationCredentials] = string(buf)
	}
	c.privilegedInHost()
	noToken, noServiceLinks := false, false
	var hostUsers *bool
	if opts.UserNamespaces {
		hostUsers = ptr(false)
	}
	ref, embedded := &v1.PipelineRef{Name: name}, (*v1.PipelineSpec)(nil)
	if opts.OneOff {
		ref, embedded = nil, &pipeline.Spec
	}
	run := &v1.PipelineRun{
		TypeMeta: metav1.TypeMeta{APIVersion: "tekton.dev/v1", Kind: "PipelineRun"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        RunName(scope, opts.Job, opts.Build),
			Labels:      runLabels,
			Annotations: runAnnotations,
		},
		Spec: v1.PipelineRunSpec{
			PipelineRef:  ref,
			PipelineSpec: embedded,
			Params:       runParams,
			// Concourse builds have no timeout unless the pipeline sets one, and the runner
			// enforces those.
			Timeouts:   &v1.TimeoutFields{Pipeline: &metav1.Duration{}},
			Workspaces: []v1.WorkspaceBinding{{Name: runspec.Workspace, VolumeClaimTemplate: claim}},
			TaskRunTemplate: v1.PipelineTaskRunTemplate{
				ServiceAccountName: opts.ServiceAccount,
				// No token, and no Service environment variables: Concourse's containers
				// know nothing of the cluster they run on.
				PodTemplate: &pod.Template{AutomountServiceAccountToken: &noToken, EnableServiceLinks: &noServiceLinks, HostUsers: hostUsers},
			},
			TaskRunSpecs: c.runSpecs,
		},
	}
	var secret *corev1.Secret
	if opts.SuppliedCredentials && len(c.creds) > 0 {
		secret = &corev1.Secret{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Name: run.Name, Labels: runLabels, Annotations: withEntry(annotations, runspec.LabelBuild, opts.Build)},
			Type:       corev1.SecretTypeOpaque,
		}
	}
	// The run's carry the most (the Secrets' are a part of them).
	if err := annotationsFit(pipeline.Annotations, run.Annotations); err != nil {
		return nil, err
	}
	var pullSecret *corev1.Secret
	if pullsNamed {
		pullSecret = imagePullSecret(run.Name+runspec.ImagePullSecretSuffix, runLabels, withEntry(annotations, runspec.LabelBuild, opts.Build))
	}
	return &Result{
		Tasks:            sortedTasks(c.taskDefs),
		Pipeline:         pipeline,
		PipelineRun:      run,
		Secrets:          slices.Sorted(maps.Keys(c.secrets)),
		Credentials:      credentials(c.creds),
		CredentialSecret: secret,
		ImagePulls:       pulls,
		ImagePullSecret:  pullSecret,
		RunnerImage:      opts.RunnerImage,
		ArtifactInputs:   c.artifactInputs,
		ArtifactOutputs:  c.artifactOutputs,
		Warnings:         c.warnings,
	}, nil
}

// annotationsFit refuses a build whose objects' annotations the API server would refuse
// (Kubernetes' own check of their size: 256 KiB in all): they carry the team's, the
// pipeline's and the job's names twice, and the instance vars, which no limit of their own
// bounds. Their keys are runspec's, which the API server takes (the tests validate every
// object the translator emits): only the size is checked for each build, not the keys
// again, by regular expressions.
func annotationsFit(annotations ...map[string]string) error {
	for _, a := range annotations {
		if apivalidation.ValidateAnnotationsSize(a) != nil {
			size := 0
			for k, v := range a {
				size += len(k) + len(v)
			}
			return fmt.Errorf("the build's objects would have %d KiB of annotations, over Kubernetes' limit of %d KiB for an object's: shorten the team's, the pipeline's or the job's name, or the instance vars",
				(size+1023)>>10, apivalidation.TotalAnnotationSizeLimitB>>10)
		}
	}
	return nil
}

// privilegedInHost gives the privileged steps the host's user namespace back when the
// build's pods have their own (UserNamespaces): a privileged container cannot run in one.
func (c *compiler) privilegedInHost() {
	if !c.opts.UserNamespaces {
		return
	}
	for _, pt := range c.tasks {
		if pt.TaskRef == nil || c.taskDefs[pt.TaskRef.Name].Annotations[annotationPrivileged] != "true" {
			continue
		}
		c.podTemplate(pt.Name).HostUsers = ptr(true)
	}
}

func withEntry(m map[string]string, k, v string) map[string]string {
	out := make(map[string]string, len(m)+1)
	for key, val := range m {
		out[key] = val
	}
	out[k] = v
	return out
}

func credentials(m map[string]Credential) []Credential {
	var out []Credential
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, m[k])
	}
	return out
}
