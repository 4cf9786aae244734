package translate

import (
	"encoding/json"
	"sort"
	"strconv"

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
	asRoot  bool
	limits  concourse.ContainerLimits
	secrets []secretMount
}

// stepTask returns the name of the Task for a variant, defining it on first use. Names are
// content hashes, so the same Task is the same object in every pipeline.
func (c *compiler) stepTask(v taskVariant) string {
	t := stepTaskFor(c.opts.RunnerImage, v)
	c.taskDefs[t.Name] = t
	return t.Name
}

func stepTaskFor(runnerImage string, v taskVariant) *v1.Task {
	// Every Concourse container has an empty /scratch.
	mounts := []corev1.VolumeMount{{Name: "runner", MountPath: runspec.RunnerDir}, {Name: "scratch", MountPath: "/scratch"}}
	volumes := []corev1.Volume{
		{Name: "runner", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	for _, s := range v.secrets {
		name := "cred-" + runspec.ShortHash(s.secret+"\x00"+s.path)
		optional := true
		volumes = append(volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
			Secret: &corev1.SecretVolumeSource{SecretName: s.secret, Optional: &optional}}})
		mounts = append(mounts, corev1.VolumeMount{Name: name, MountPath: s.path, ReadOnly: true})
	}
	run := v1.Step{
		Name:         runspec.StepRun,
		Image:        "$(params." + runspec.ParamImage + ")",
		Command:      []string{runspec.RunnerPath},
		Args:         []string{"$(params." + runspec.ParamMode + ")", "--" + runspec.ParamSpec + "=$(params." + runspec.ParamSpec + ")"},
		VolumeMounts: mounts,
	}
	if v.privileged || v.asRoot {
		root := int64(0)
		run.SecurityContext = &corev1.SecurityContext{RunAsUser: &root}
		if v.privileged {
			run.SecurityContext.Privileged = &v.privileged
		}
	}
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
		Params: v1.ParamSpecs{
			{Name: runspec.ParamImage, Type: v1.ParamTypeString, Description: "the step's image"},
			{Name: runspec.ParamMode, Type: v1.ParamTypeString, Description: "the runner's mode"},
			{Name: runspec.ParamSpec, Type: v1.ParamTypeString, Description: "the runner's spec (JSON)"},
		},
		Results: []v1.TaskResult{
			{Name: runspec.ResultOutcome, Type: v1.ResultsTypeString, Description: "succeeded, failed, errored, aborted or never-ran"},
			{Name: runspec.ResultVersion, Type: v1.ResultsTypeString, Description: "the version a get, put or check produced (JSON)"},
			{Name: runspec.ResultMetadata, Type: v1.ResultsTypeString, Description: "the metadata a get or put produced (JSON)"},
			{Name: runspec.ResultImage, Type: v1.ResultsTypeString, Description: "the image a resolve step found for its task"},
			{Name: runspec.ResultConfig, Type: v1.ResultsTypeString, Description: "the task config a resolve step read (JSON), when it is small"},
			{Name: runspec.ResultExitStatus, Type: v1.ResultsTypeString, Description: "the exit status of the step's process"},
			{Name: runspec.ResultError, Type: v1.ResultsTypeString, Description: "why the step did not finish: interrupted, timeout exceeded or a message"},
		},
		Workspaces: []v1.WorkspaceDeclaration{{Name: runspec.Workspace, MountPath: runspec.DefaultVolume, Description: "the build's volume"}},
		Volumes:    volumes,
		Steps: []v1.Step{
			{
				Name:         runspec.StepInstall,
				Image:        runnerImage,
				Command:      []string{runspec.RunnerBinary},
				Args:         []string{"install", runspec.RunnerPath},
				VolumeMounts: []corev1.VolumeMount{{Name: "runner", MountPath: runspec.RunnerDir}},
			},
			run,
		},
	}
	buf, _ := json.Marshal(spec)
	return &v1.Task{
		TypeMeta: metav1.TypeMeta{APIVersion: "tekton.dev/v1", Kind: "Task"},
		ObjectMeta: metav1.ObjectMeta{
			Name:   "concourse-step-" + runspec.ShortHash(string(buf)),
			Labels: map[string]string{runspec.LabelManagedBy: runspec.ManagedBy},
			Annotations: map[string]string{
				runspec.LabelPrefix + "privileged": strconv.FormatBool(v.privileged),
			},
		},
		Spec: spec,
	}
}

func sortedTasks(m map[string]*v1.Task) []*v1.Task {
	out := make([]*v1.Task, 0, len(m))
	for _, t := range m {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
