package translate

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// CheckSession is a check build compiled to run in the container of a check session
// (runspec/session.go) rather than as a PipelineRun of its own: the pod of the session,
// whose runner serves its checks (runspec/sessionwire.go), and the request of the check.
// The pod's container is the check step's own, as its Task makes it (image, user,
// security, node selection, the runner's install, /scratch); the build's volume, results
// and credentials become directories of each check's own in the pod, the credentials
// in memory, handed over on stdin rather than mounted from a Secret.
type CheckSession struct {
	// Pod is the session's pod, without a name (its starter names it) or a namespace.
	Pod *corev1.Pod
	// Hash is what the pod is made of (its label runspec.LabelCheckSession): a check
	// whose session pod has another is run in a new one.
	Hash string
	// Request is the check's request, without its credentials: its starter adds the
	// values of Credentials, each under its Key.
	Request     runspec.SessionRequest
	Credentials []Credential
	// Image is the check's image, which the runner is told (its --image).
	Image string
}

// SessionHold is how long a check session's pod lives at most: its runner holds that
// long, and the pod's active deadline ends it a little later. Concourse's check
// sessions last an hour at most, and their owner deletes them when they end; this
// bounds a pod whose owner went away.
const SessionHold = 2 * time.Hour

// sessionGrace is how long a check session's pod is given to stop: a check under way
// is interrupted, its script given proc's grace of 10 s.
const sessionGrace = 15

// CheckSession returns the check session of a compiled check build (Options.Check with
// supplied credentials), or why the build cannot run in one: a build of more than one
// step, one that pulls its image with credentials of its own, one that mounts Secrets
// of the namespace.
func (r *Result) CheckSession() (*CheckSession, error) {
	if r.Pipeline == nil || r.PipelineRun == nil {
		return nil, fmt.Errorf("no Pipeline compiled")
	}
	if len(r.Pipeline.Spec.Tasks) != 1 {
		return nil, fmt.Errorf("it is %d steps, not one check", len(r.Pipeline.Spec.Tasks))
	}
	if r.ImagePullSecret != nil {
		return nil, fmt.Errorf("its image is pulled with credentials of the build's")
	}
	for _, c := range r.Credentials {
		if !c.Supplied {
			return nil, fmt.Errorf("its credentials are read from the namespace's Secrets")
		}
	}
	pt := r.Pipeline.Spec.Tasks[0]
	if pt.TaskRef == nil {
		return nil, fmt.Errorf("its step has no Task")
	}
	var task *v1.Task
	for _, t := range r.Tasks {
		if t.Name == pt.TaskRef.Name {
			task = t
		}
	}
	if task == nil {
		return nil, fmt.Errorf("its step's Task %s was not compiled", pt.TaskRef.Name)
	}
	params := map[string]string{}
	for _, p := range r.PipelineRun.Spec.Params {
		params[p.Name] = p.Value.StringVal
	}
	// The step's image and spec; its other params (its Secret, its verdict) the session
	// has no use for.
	taskParams := map[string]string{}
	for _, p := range pt.Params {
		if p.Name != runspec.ParamImage && p.Name != runspec.ParamSpec {
			continue
		}
		v, err := substituteParams(p.Value.StringVal, params)
		if err != nil {
			return nil, err
		}
		taskParams[p.Name] = v
	}
	spec, err := runspec.Decode(taskParams[runspec.ParamSpec])
	if err != nil {
		return nil, err
	}
	if spec.Mode != runspec.ModeCheck || spec.Error != "" {
		return nil, fmt.Errorf("its step is a %s step", spec.Mode)
	}
	image := taskParams[runspec.ParamImage]
	if image == "" || strings.Contains(image, "$(") {
		return nil, fmt.Errorf("its image %q is known only when it runs", image)
	}
	var install, run *v1.Step
	for i := range task.Spec.Steps {
		switch s := &task.Spec.Steps[i]; s.Name {
		case runspec.StepInstall:
			install = s
		case runspec.StepRun:
			run = s
		}
	}
	if run == nil {
		return nil, fmt.Errorf("its Task %s has no %s step", task.Name, runspec.StepRun)
	}
	volumes, mounts, err := sessionVolumes(task.Spec.Volumes, run.VolumeMounts)
	if err != nil {
		return nil, err
	}
	memory := corev1.StorageMediumMemory
	volumes = append(volumes,
		corev1.Volume{Name: "checks", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		corev1.Volume{Name: "check-creds", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: memory}}})
	mounts = append(mounts,
		corev1.VolumeMount{Name: "checks", MountPath: runspec.SessionRoot},
		corev1.VolumeMount{Name: "check-creds", MountPath: runspec.SessionCreds})
	noToken, noLinks := false, false
	deadline := int64((SessionHold + 10*time.Minute) / time.Second)
	grace := int64(sessionGrace)
	podSpec := corev1.PodSpec{
		RestartPolicy:                 corev1.RestartPolicyNever,
		AutomountServiceAccountToken:  &noToken,
		EnableServiceLinks:            &noLinks,
		ActiveDeadlineSeconds:         &deadline,
		TerminationGracePeriodSeconds: &grace,
		ServiceAccountName:            r.PipelineRun.Spec.TaskRunTemplate.ServiceAccountName,
		Volumes:                       volumes,
		Containers: []corev1.Container{{
			Name:            runspec.SessionContainer,
			Image:           image,
			Command:         []string{runspec.RunnerPath},
			Args:            []string{string(runspec.ModeServe), "--timeout=" + SessionHold.String(), "--image=" + image},
			Ports:           []corev1.ContainerPort{{Name: runspec.SessionPortName, ContainerPort: runspec.SessionPort, Protocol: corev1.ProtocolTCP}},
			VolumeMounts:    mounts,
			SecurityContext: run.SecurityContext.DeepCopy(),
			Resources:       *run.ComputeResources.DeepCopy(),
		}},
	}
	for _, e := range run.Env {
		if e.Name == IdentityTokenEnv {
			// Where the step's token is (Identity), for its checks too.
			podSpec.Containers[0].Env = append(podSpec.Containers[0].Env, e)
		}
	}
	if install != nil {
		podSpec.InitContainers = []corev1.Container{{
			Name:            install.Name,
			Image:           install.Image,
			Command:         install.Command,
			Args:            install.Args,
			VolumeMounts:    install.VolumeMounts,
			SecurityContext: install.SecurityContext.DeepCopy(),
		}}
	}
	// The run's pod template, then the step's own (node selection, user namespaces).
	if tpl := r.PipelineRun.Spec.TaskRunTemplate.PodTemplate; tpl != nil {
		applyPodTemplate(&podSpec, tpl.NodeSelector, tpl.HostUsers, tpl.ImagePullSecrets)
	}
	for _, s := range r.PipelineRun.Spec.TaskRunSpecs {
		if s.PipelineTaskName == pt.Name && s.PodTemplate != nil {
			applyPodTemplate(&podSpec, s.PodTemplate.NodeSelector, s.PodTemplate.HostUsers, s.PodTemplate.ImagePullSecrets)
		}
		if s.PipelineTaskName == pt.Name && s.ServiceAccountName != "" {
			podSpec.ServiceAccountName = s.ServiceAccountName
		}
	}
	if len(podSpec.ImagePullSecrets) > 0 {
		return nil, fmt.Errorf("its image is pulled with credentials of the build's")
	}
	enc, err := json.Marshal(podSpec)
	if err != nil {
		return nil, fmt.Errorf("encoding the check session's pod: %w", err)
	}
	hash := runspec.ShortHash(string(enc))
	labels := map[string]string{runspec.LabelManagedBy: runspec.ManagedBy, runspec.LabelCheckSession: hash}
	specJSON, err := spec.Encode()
	if err != nil {
		return nil, err
	}
	annotations := map[string]string{runspec.AnnotationSessionSpec: specJSON}
	for _, k := range []string{runspec.LabelTeam, runspec.LabelPipeline, runspec.LabelJob} {
		if v, ok := r.PipelineRun.Labels[k]; ok {
			labels[k] = v
		}
		if v, ok := r.PipelineRun.Annotations[k]; ok {
			annotations[k] = v
		}
	}
	return &CheckSession{
		Pod: &corev1.Pod{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations},
			Spec:       podSpec,
		},
		Hash:        hash,
		Request:     runspec.SessionRequest{Spec: spec, Context: json.RawMessage(r.PipelineRun.Annotations[runspec.AnnotationBuildContext])},
		Credentials: r.Credentials,
		Image:       image,
	}, nil
}

// sessionVolumes are the volumes and mounts of a check's step Task that its session's
// pod keeps: the runner's, /scratch, /tmp/build. The build's Secret of credentials is
// left out (its values come on stdin); any other volume (a Secret of the namespace's, a
// registry's credentials) keeps the check out of a session.
func sessionVolumes(volumes []corev1.Volume, mounts []corev1.VolumeMount) ([]corev1.Volume, []corev1.VolumeMount, error) {
	var keptVolumes []corev1.Volume
	kept := map[string]bool{}
	for _, v := range volumes {
		switch v.Name {
		case "runner", "scratch", "tmp-build", "identity":
			keptVolumes = append(keptVolumes, *v.DeepCopy())
			kept[v.Name] = true
		case "credentials":
		default:
			return nil, nil, fmt.Errorf("its step mounts the volume %s", v.Name)
		}
	}
	var keptMounts []corev1.VolumeMount
	for _, m := range mounts {
		if kept[m.Name] {
			keptMounts = append(keptMounts, m)
		}
	}
	return keptVolumes, keptMounts, nil
}

// applyPodTemplate sets what a Tekton pod template says of a session's pod.
func applyPodTemplate(spec *corev1.PodSpec, nodeSelector map[string]string, hostUsers *bool, pulls []corev1.LocalObjectReference) {
	if len(nodeSelector) > 0 {
		spec.NodeSelector = map[string]string{}
		for k, v := range nodeSelector {
			spec.NodeSelector[k] = v
		}
	}
	if hostUsers != nil {
		spec.HostUsers = ptr(*hostUsers)
	}
	if len(pulls) > 0 {
		spec.ImagePullSecrets = append([]corev1.LocalObjectReference(nil), pulls...)
	}
}

// substituteParams replaces the $(params.NAME) of s with the run's params, as Tekton
// does, each value JSON-escaped (s is JSON, or a plain string without quotes). A
// reference to anything else is known only when the step runs: an error.
func substituteParams(s string, params map[string]string) (string, error) {
	var b strings.Builder
	for {
		i := strings.Index(s, "$(")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		rest := s[i+2:]
		end := strings.IndexByte(rest, ')')
		name, ok := strings.CutPrefix(rest[:max(end, 0)], "params.")
		value, found := params[name]
		if end < 0 || !ok || !found {
			return "", fmt.Errorf("its step refers to %q, known only when it runs", s[i:i+2+max(end+1, 0)])
		}
		q := strconv.Quote(value)
		enc, err := json.Marshal(value)
		if err != nil || string(enc) != q {
			// A name a JSON string cannot hold as it is (Translate refuses those).
			return "", fmt.Errorf("the param %s is not a plain string", name)
		}
		b.WriteString(q[1 : len(q)-1])
		s = rest[end+1:]
	}
}
