package translate

import (
	"encoding/json"
	"path"
	"sort"
	"strconv"
	"strings"

	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// taskVariant is what makes one step's Task differ from another's: everything else is a
// param, so steps share a handful of Task definitions.
type taskVariant struct {
	privileged bool
	// asRoot runs the step's container as root, so that the runner can switch to the
	// task's run.user.
	asRoot bool
	// runAs is the task's run.user when it is a number other than 0: the step's container
	// runs as that user from the start (Pod Security "restricted"), and the runner,
	// already the user, switches to no one.
	runAs   int64
	limits  concourse.ContainerLimits
	secrets []secretMount
	// credentials are the keys of the build's Secret the step reads (supplied
	// credentials), sorted. The Secret's name is the Task's param paramCredentials, so
	// that builds share the Task.
	credentials []string
	// count declares the result `count`: an across step's resolver publishes it.
	count bool
	// publish takes the build's image registry and mounts its Docker config: a publish
	// step's Task.
	publish bool
	// sharedCaches shares the step's resource caches with the team's other jobs: the
	// Task takes the build's image registry (and mounts its Docker config) and mounts
	// the team's index of the store (runspec.ResourceCacheIndex), its param; its runner
	// reports what it found or saved there (runspec.ResultResourceCache).
	sharedCaches bool
	// varsResult declares the results `vars` and `pull`: the resolve step of a task file, with
	// supplied credentials, lists the vars the file needs.
	varsResult bool
	// taskVars, for the task of such a file, is its vars Secret (runspec.TaskVarsSecret),
	// the PipelineTask's param; the Task mounts the Secret its param names, and the pod
	// waits until it exists.
	taskVars string
	// verdict runs the build's verdict after the step (runspec.Verdict.Fused), in the
	// runner's image, as root (it empties the build volume), from the spec of the param
	// runspec.ParamVerdictSpec.
	verdict bool
	// verdictInline, with verdict, has the step's own runner record the verdict once the
	// step succeeded, in the step's container (--verdict-spec), where a step of its own
	// would be a fourth container: a get, put or check that is the build's only step.
	verdictInline bool
	// imageVolume: the runner comes from its image mounted as a volume, not copied in
	// (Options.RunnerImageVolume).
	imageVolume bool
	// identityAudience, when not empty, projects the token of the pod's ServiceAccount
	// for that audience, for identityExpiration seconds, into the step (Identity).
	identityAudience   string
	identityExpiration int64
}

// registrySecret is the param naming the Secret of the registry's credentials that the
// step mounts, if it talks to the build's registry: a publish step pushes the build's
// images with ParamImageRegistrySecret's; a step sharing resource caches, which runs a
// resource type's code, has only those of the store (ParamResourceCacheSecret).
func (v taskVariant) registrySecret() string {
	switch {
	case v.publish:
		return runspec.ParamImageRegistrySecret
	case v.sharedCaches:
		return runspec.ParamResourceCacheSecret
	}
	return ""
}

// paramCredentials is the step Task's param naming the build's Secret, when it reads
// supplied credentials.
const paramCredentials = "credentials"

// stepTask returns the name of the Task for a variant, defining it on first use. Names are
// content hashes, so the same Task is the same object in every pipeline.
func (c *compiler) stepTask(v taskVariant) string {
	v.imageVolume = c.opts.RunnerImageVolume
	// The key is made in the compiler's buffer, and a string of it only for a variant
	// the job has not had: most of a job's steps share a few variants.
	c.keyBuf = v.appendKey(c.keyBuf[:0])
	if name, ok := c.taskNames[string(c.keyBuf)]; ok {
		return name
	}
	t := stepTaskOfKey(c.opts.RunnerImage, v, c.keyBuf)
	c.taskDefs[t.Name] = t
	c.taskNames[string(c.keyBuf)] = t.Name
	return t.Name
}

// appendKey appends the variant's key to b. The key tells variants apart: two variants
// with the same key have the same Task.
func (v taskVariant) appendKey(b []byte) []byte {
	for _, f := range []bool{v.privileged, v.asRoot, v.count, v.publish, v.varsResult, v.taskVars != "", v.verdict, v.verdictInline, v.sharedCaches, v.imageVolume} {
		b = strconv.AppendBool(b, f)
		b = append(b, ' ')
	}
	b = strconv.AppendInt(b, v.runAs, 10)
	if v.limits.CPU != nil {
		b = strconv.AppendUint(append(b, " cpu="...), uint64(*v.limits.CPU), 10)
	}
	if v.limits.Memory != nil {
		b = strconv.AppendUint(append(b, " memory="...), uint64(*v.limits.Memory), 10)
	}
	for _, s := range v.secrets {
		b = append(append(append(append(append(b, 0), s.secret...), 0), s.path...), 0)
		for i, k := range s.keys {
			if i > 0 {
				b = append(b, 1)
			}
			b = append(b, k...)
		}
	}
	b = append(b, 2)
	for i, k := range v.credentials {
		if i > 0 {
			b = append(b, 1)
		}
		b = append(b, k...)
	}
	if v.identityAudience != "" {
		b = strconv.AppendInt(append(append(append(b, 3), v.identityAudience...), 0), v.identityExpiration, 10)
	}
	return b
}

// stepTaskFor is the step Task of the variant v for runnerImage. Made once per process
// (stepTasks): the caller must not modify it.
func stepTaskFor(runnerImage string, v taskVariant) *v1.Task {
	return stepTaskOfKey(runnerImage, v, v.appendKey(nil))
}

// stepTaskOfKey is stepTaskFor, given the variant's key (appendKey).
func stepTaskOfKey(runnerImage string, v taskVariant, variantKey []byte) *v1.Task {
	key := runnerImage + "\x03" + string(variantKey)
	if t, ok := stepTasks.get(key); ok {
		return t
	}
	t := makeStepTask(runnerImage, v)
	stepTasks.put(key, t)
	stepTaskDocs.put(t, nil)
	return t
}

// makeStepTask makes the step Task of the variant v for runnerImage.
func makeStepTask(runnerImage string, v taskVariant) *v1.Task {
	// Every Concourse container has an empty /scratch.
	mounts := []corev1.VolumeMount{{Name: "runner", MountPath: runspec.RunnerDir}, {Name: "scratch", MountPath: "/scratch"}}
	runner := corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
	if v.imageVolume {
		// The image's directory of the runner is RunnerDir: RunnerPath is the runner
		// itself, as when it is copied there.
		runner = corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: runnerImage}}
		mounts[0].SubPath, mounts[0].ReadOnly = runnerImageDir, true
	}
	volumes := []corev1.Volume{
		{Name: "runner", VolumeSource: runner},
		{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	if v.runAs != 0 {
		// The task's user makes its working directory under /tmp/build, which the image
		// may not let it write.
		mounts = append(mounts, corev1.VolumeMount{Name: "tmp-build", MountPath: "/tmp/build"})
		volumes = append(volumes, corev1.Volume{Name: "tmp-build", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	}
	for _, s := range v.secrets {
		name := "cred-" + runspec.ShortHash(s.secret+"\x00"+s.path)
		optional := true
		src := &corev1.SecretVolumeSource{SecretName: s.secret, Optional: &optional}
		// Only the keys the step's vars use; a var without a field reads the whole Secret.
		for _, k := range s.keys {
			src.Items = append(src.Items, corev1.KeyToPath{Key: k, Path: k})
		}
		volumes = append(volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: src}})
		mounts = append(mounts, corev1.VolumeMount{Name: name, MountPath: s.path, ReadOnly: true})
	}
	var env []corev1.EnvVar
	if v.identityAudience != "" {
		// The token of the pod's ServiceAccount (Identity), for this step alone.
		volumes = append(volumes, corev1.Volume{Name: "identity", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{
				Audience: v.identityAudience, ExpirationSeconds: ptr(v.identityExpiration), Path: "token",
			}}},
		}}})
		mounts = append(mounts, corev1.VolumeMount{Name: "identity", MountPath: IdentityTokenDir, ReadOnly: true})
		env = append(env, corev1.EnvVar{Name: IdentityTokenEnv, Value: IdentityTokenPath})
	}
	params := v1.ParamSpecs{
		{Name: runspec.ParamImage, Type: v1.ParamTypeString, Description: "the step's image"},
		{Name: runspec.ParamSpec, Type: v1.ParamTypeString, Description: "the runner's spec (JSON)"},
	}
	if len(v.credentials) > 0 {
		params = append(params, v1.ParamSpec{Name: paramCredentials, Type: v1.ParamTypeString, Description: "the build's Secret of credentials"})
		// Only the keys of the step's own vars, each a file where the runner looks for it.
		// Optional: were the Secret gone, the runner would say which var is undefined,
		// where a required volume would keep the pod from starting.
		optional := true
		src := &corev1.SecretVolumeSource{SecretName: "$(params." + paramCredentials + ")", Optional: &optional}
		for _, k := range v.credentials {
			src.Items = append(src.Items, corev1.KeyToPath{Key: k, Path: k})
		}
		volumes = append(volumes, corev1.Volume{Name: "credentials", VolumeSource: corev1.VolumeSource{Secret: src}})
		mounts = append(mounts, corev1.VolumeMount{Name: "credentials", MountPath: runspec.DefaultCreds, ReadOnly: true})
	}
	if v.taskVars != "" {
		params = append(params, v1.ParamSpec{Name: runspec.ParamTaskVars, Type: v1.ParamTypeString, Description: "the Secret of the vars the task's file needs"})
		// Required: the pod waits until the build's starter has made it.
		volumes = append(volumes, corev1.Volume{Name: "task-vars", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: "$(params." + runspec.ParamTaskVars + ")"}}})
		mounts = append(mounts, corev1.VolumeMount{Name: "task-vars", MountPath: runspec.DefaultTaskVars, ReadOnly: true})
	}
	var publishArgs []string
	if registrySecret := v.registrySecret(); registrySecret != "" {
		params = append(params,
			v1.ParamSpec{Name: runspec.ParamImageRegistry, Type: v1.ParamTypeString, Description: "the build's image registry, HOST[:PORT][/PATH]; empty when it has none"},
			v1.ParamSpec{Name: registrySecret, Type: v1.ParamTypeString, Description: "the registry's Docker config Secret (optional)"})
		optional := true
		volumes = append(volumes, corev1.Volume{Name: "registry-auth", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: "$(params." + registrySecret + ")", Optional: &optional,
			Items: []corev1.KeyToPath{{Key: corev1.DockerConfigJsonKey, Path: "config.json"}},
		}}})
		mounts = append(mounts, corev1.VolumeMount{Name: "registry-auth", MountPath: runspec.RegistryAuthDir, ReadOnly: true})
		publishArgs = []string{"--image-registry=$(params." + runspec.ParamImageRegistry + ")", "--image-namespace=$(context.taskRun.namespace)"}
	}
	if v.publish {
		// The repository is the build's namespace, the tag the publishing TaskRun's name.
		publishArgs = append(publishArgs, "--image-tag=$(context.taskRun.name)")
	}
	if v.sharedCaches {
		params = append(params, v1.ParamSpec{Name: runspec.ParamResourceCacheIndex, Type: v1.ParamTypeString, Description: "the ConfigMap indexing the team's shared resource caches"})
		// Optional: no index yet is an empty one.
		optional := true
		volumes = append(volumes, corev1.Volume{Name: "resource-cache-index", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "$(params." + runspec.ParamResourceCacheIndex + ")"}, Optional: &optional,
		}}})
		mounts = append(mounts, corev1.VolumeMount{Name: "resource-cache-index", MountPath: runspec.ResourceCacheIndexDir, ReadOnly: true})
	}
	run := v1.Step{
		Name:    runspec.StepRun,
		Image:   "$(params." + runspec.ParamImage + ")",
		Command: []string{runspec.RunnerPath},
		Args: append([]string{string(runspec.ModeStep), "--" + runspec.ParamSpec + "=$(params." + runspec.ParamSpec + ")",
			"--image=$(params." + runspec.ParamImage + ")"}, publishArgs...),
		Env:          append(buildContextEnv(), env...),
		VolumeMounts: mounts,
	}
	run.SecurityContext = stepSecurity(v)
	if v.limits.CPU != nil || v.limits.Memory != nil {
		run.ComputeResources = corev1.ResourceRequirements{Limits: corev1.ResourceList{}}
		if v.limits.CPU != nil {
			// Concourse's CPU limit is in shares, 1024 to a CPU.
			milli := int64(*v.limits.CPU) * 1000 / 1024
			if milli < 1 {
				milli = 1
			}
			run.ComputeResources.Limits[corev1.ResourceCPU] = *resource.NewMilliQuantity(milli, resource.DecimalSI)
		}
		if v.limits.Memory != nil {
			run.ComputeResources.Limits[corev1.ResourceMemory] = *resource.NewQuantity(int64(*v.limits.Memory), resource.BinarySI)
		}
	}
	spec := v1.TaskSpec{
		Description: "One Concourse step, run by the concourse-tekton step runner.",
		Params:      params,
		Results: []v1.TaskResult{
			{Name: runspec.ResultOutcome, Type: v1.ResultsTypeString, Description: "succeeded, failed, errored, aborted or never-ran"},
			{Name: runspec.ResultVersion, Type: v1.ResultsTypeString, Description: "the version a get, put or check produced (JSON)"},
			{Name: runspec.ResultVersions, Type: v1.ResultsTypeString, Description: "the versions a check found, oldest first (JSON), the newest that fit"},
			{Name: runspec.ResultMetadata, Type: v1.ResultsTypeString, Description: "the metadata a get or put produced (JSON)"},
			{Name: runspec.ResultImage, Type: v1.ResultsTypeString, Description: "the image a resolve step found for its task"},
			{Name: runspec.ResultConfig, Type: v1.ResultsTypeString, Description: "the task config a resolve step read (JSON), when it is small"},
			{Name: runspec.ResultExitStatus, Type: v1.ResultsTypeString, Description: "the exit status of the step's process"},
			{Name: runspec.ResultCaches, Type: v1.ResultsTypeString, Description: "the cache paths of a task whose caches are recorded (JSON)"},
			{Name: runspec.ResultError, Type: v1.ResultsTypeString, Description: "why the step did not finish: interrupted, timeout exceeded or a message"},
		},
		Workspaces: []v1.WorkspaceDeclaration{{Name: runspec.Workspace, MountPath: runspec.DefaultVolume, Description: "the build's volume"}},
		Volumes:    volumes,
		Steps:      []v1.Step{run},
	}
	if !v.imageVolume {
		spec.Steps = []v1.Step{
			{
				Name:         runspec.StepInstall,
				Image:        runnerImage,
				Command:      []string{runspec.RunnerBinary},
				Args:         []string{"install", runspec.RunnerPath},
				VolumeMounts: []corev1.VolumeMount{{Name: "runner", MountPath: runspec.RunnerDir}},
				// Copying a file into an emptyDir needs nothing: Pod Security "restricted".
				SecurityContext: &corev1.SecurityContext{
					RunAsUser:                ptr(int64(installUser)),
					RunAsNonRoot:             ptr(true),
					AllowPrivilegeEscalation: ptr(false),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
					SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
				},
			},
			run,
		}
	}
	if v.sharedCaches {
		spec.Results = append(spec.Results, v1.TaskResult{Name: runspec.ResultResourceCache, Type: v1.ResultsTypeString, Description: "the shared resource caches the step found or saved, for the team's index (JSON)"})
	}
	if v.count {
		spec.Results = append(spec.Results, v1.TaskResult{Name: runspec.ResultCount, Type: v1.ResultsTypeString, Description: "how many combinations of values an across step has"})
	}
	if v.varsResult {
		spec.Results = append(spec.Results, v1.TaskResult{Name: runspec.ResultVars, Type: v1.ResultsTypeString, Description: "the vars of the task file that the build's starter supplies (JSON)"},
			v1.TaskResult{Name: runspec.ResultPull, Type: v1.ResultsTypeString, Description: "the credentials of the registry of the task file's image, as the file writes them, for the build's starter to look up (JSON)"})
	}
	labels := map[string]string{runspec.LabelManagedBy: runspec.ManagedBy}
	if v.verdict {
		spec.Params = append(spec.Params, v1.ParamSpec{Name: runspec.ParamVerdictSpec, Type: v1.ParamTypeString, Description: "the spec of the build's verdict (JSON), which this step, the build's last, records when the build succeeded"})
		spec.Results = append(spec.Results,
			v1.TaskResult{Name: runspec.ResultVerdict, Type: v1.ResultsTypeString, Description: "the build's outcome, when it succeeded and this step recorded it"},
			v1.TaskResult{Name: runspec.ResultVerdictError, Type: v1.ResultsTypeString, Description: "why the verdict could not empty the build volume"})
		if v.verdictInline {
			// Recorded by the step's own runner, once the step succeeded.
			last := &spec.Steps[len(spec.Steps)-1]
			last.Args = append(last.Args, "--"+runspec.ParamVerdictSpec+"=$(params."+runspec.ParamVerdictSpec+")")
		} else {
			// After the step's own, which it runs only when that succeeded.
			spec.Steps = append(spec.Steps, v1.Step{
				Name:            runspec.StepVerdict,
				Image:           runnerImage,
				Command:         []string{runspec.RunnerBinary},
				Args:            []string{string(runspec.ModeVerdict), "--" + runspec.ParamSpec + "=$(params." + runspec.ParamVerdictSpec + ")"},
				Env:             buildContextEnv(),
				VolumeMounts:    []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}},
				SecurityContext: stepSecurity(taskVariant{asRoot: true}),
			})
		}
		labels[runspec.LabelVerdict] = runspec.VerdictFused
	}
	buf, _ := json.Marshal(spec)
	name := "concourse-step-" + runspec.ShortHash(buf)
	return &v1.Task{
		TypeMeta: metav1.TypeMeta{APIVersion: "tekton.dev/v1", Kind: "Task"},
		ObjectMeta: metav1.ObjectMeta{
			Name:   name,
			Labels: labels,
			Annotations: map[string]string{
				annotationPrivileged: strconv.FormatBool(v.privileged),
			},
		},
		Spec: spec,
	}
}

// runnerImageDir is the directory of the runner's image that holds the runner, mounted
// as RunnerDir when the image is a volume.
var runnerImageDir = strings.TrimPrefix(path.Dir(runspec.RunnerBinary), "/")

// stepTasks are the step Tasks made in this process, by runner image and variant key: a
// variant's Task is always the same, and need not be made (nor its spec's JSON hashed for
// its name) again for every job of every pipeline.
var stepTasks = &processMemo[string, *v1.Task]{max: 4096}

// PrivilegedSteps names the StepKind of privileged steps.
const PrivilegedSteps = "privileged steps (privileged: true)"

// StepKinds are the kinds of step pods a build runs, by what their containers may do,
// each with its step Task (for checking them against a namespace's Pod Security level).
func StepKinds(runnerImage string) []StepKind {
	return []StepKind{
		{Name: PrivilegedSteps, Task: stepTaskFor(runnerImage, taskVariant{privileged: true})},
		{Name: "steps whose runner switches to run.user (root, then the user)", Task: stepTaskFor(runnerImage, taskVariant{asRoot: true})},
		{Name: "other steps (the image's user)", Task: stepTaskFor(runnerImage, taskVariant{})},
		{Name: "tasks whose run.user is a number other than 0", Task: stepTaskFor(runnerImage, taskVariant{runAs: 1000})},
	}
}

// StepKind is a kind of step pod: see StepKinds.
type StepKind struct {
	Name string
	Task *v1.Task
}

// PodSpec is what of a step Task's pod Pod Security admission looks at: its steps'
// containers ("step-<name>", as Tekton names them) with their security contexts, its
// volumes, and Tekton's own init container, which asks for nothing "baseline" forbids
// and passes "restricted" only when Tekton sets its security context (tektonSecurity:
// the feature flag set-security-context).
func PodSpec(task *v1.Task, tektonSecurity bool) corev1.PodSpec {
	spec := corev1.PodSpec{Volumes: task.Spec.Volumes}
	prepare := corev1.Container{Name: "prepare", Image: "tekton/entrypoint"}
	if tektonSecurity {
		// Tekton's pod.LinuxSecurityContext, which it gives its init containers.
		prepare.SecurityContext = &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr(false),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			RunAsNonRoot:             ptr(true),
			SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		}
	}
	spec.InitContainers = append(spec.InitContainers, prepare)
	for _, s := range task.Spec.Steps {
		spec.Containers = append(spec.Containers, corev1.Container{Name: "step-" + s.Name, Image: s.Image, SecurityContext: s.SecurityContext})
	}
	return spec
}

// annotationPrivileged on a step Task says whether its step is privileged.
const annotationPrivileged = runspec.LabelPrefix + "privileged"

// installUser is the uid the install step copies the runner as (the distroless "nonroot").
const installUser = 65532

// rootCapabilities are what a root step keeps: the capabilities Concourse's unprivileged
// containers have (Garden's defaults, Docker's too), less NET_RAW, which Pod Security
// "baseline" does not allow. With them a root task can chown, install packages (apt drops
// to its own user, dpkg sets file capabilities), bind low ports and signal its children,
// and the runner can give a run.user's task its volumes and switch to that user.
var rootCapabilities = []corev1.Capability{
	"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
	"NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT",
}

// stepSecurity is the security context of a step's own container. A privileged step is
// privileged, as the pipeline says. Every other one passes Pod Security "baseline" with
// room to spare: no privilege escalation (setuid binaries do not raise privileges), the
// runtime's default seccomp profile, and no capability beyond rootCapabilities. A step
// whose runner switches to the task's run.user starts as root; others run as their
// image's user.
func stepSecurity(v taskVariant) *corev1.SecurityContext {
	if v.privileged {
		return &corev1.SecurityContext{Privileged: ptr(true), RunAsUser: ptr(int64(0))}
	}
	sc := &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: rootCapabilities},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	switch {
	case v.runAs != 0:
		// Nothing a task's own user could do with a capability or a setuid binary.
		sc.Capabilities.Add = nil
		sc.RunAsUser, sc.RunAsNonRoot = ptr(v.runAs), ptr(true)
	case v.asRoot:
		sc.RunAsUser = ptr(int64(0))
	}
	return sc
}

// runAsUser is the uid a task's run.user names when it is a number other than 0 (a name
// is known only in the image's /etc/passwd: the runner looks it up as root).
func runAsUser(user string) int64 {
	uid, err := strconv.ParseInt(user, 10, 32)
	if err != nil || uid <= 0 {
		return 0
	}
	return uid
}

func ptr[T any](v T) *T { return &v }

func sortedTasks(m map[string]*v1.Task) []*v1.Task {
	out := make([]*v1.Task, 0, len(m))
	for _, t := range m {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// buildContextEnv gives the runner its build's context, runspec.AnnotationBuildContext,
// which Tekton copies from the PipelineRun to its pods.
func buildContextEnv() []corev1.EnvVar {
	return []corev1.EnvVar{{Name: runspec.EnvBuildContext, ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['" + runspec.AnnotationBuildContext + "']"},
	}}}
}
