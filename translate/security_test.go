package translate_test

import (
	"fmt"
	"path"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"

	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/translate"
)

const securityPipeline = `
jobs:
- name: test
  plan:
  - task: as-image-user
    config: {platform: linux, rootfs_uri: 'docker:///busybox', run: {path: sh, args: [-c, 'echo ((creds.password)) ((creds.user))']}}
  - task: as-nonroot
    config: {platform: linux, rootfs_uri: 'docker:///busybox', run: {path: id, user: nobody}}
  - task: as-uid
    config: {platform: linux, rootfs_uri: 'docker:///busybox', run: {path: id, user: "1000"}}
  - task: as-uid-0
    config: {platform: linux, rootfs_uri: 'docker:///busybox', run: {path: id, user: "0"}}
  - task: as-uid-privileged
    privileged: true
    config: {platform: linux, rootfs_uri: 'docker:///busybox', run: {path: id, user: "1000"}}
  - task: privileged
    privileged: true
    config: {platform: linux, rootfs_uri: 'docker:///busybox', run: {path: sh, args: [-c, 'echo ((whole))']}}
`

func compileSecurity(t *testing.T, opts translate.Options) (*translate.Result, map[string]*v1.Task) {
	t.Helper()
	_, r, err := translateJob(t, securityPipeline, opts)
	if err != nil {
		t.Fatal(err)
	}
	validate(t, r)
	byStep := map[string]*v1.Task{}
	defs := map[string]*v1.Task{}
	for _, task := range r.Tasks {
		defs[task.Name] = task
	}
	for _, pt := range r.Pipeline.Spec.Tasks {
		byStep[pt.Name] = defs[pt.TaskRef.Name]
	}
	return r, byStep
}

// Every step but the privileged ones passes Pod Security "baseline" (validate checks it
// for every test), a task whose run.user is a number other than 0 "restricted" (with
// Tekton's init container as Tekton makes it with set-security-context), the runner's
// install step "restricted", and only a privileged step may be privileged.
func TestPodSecurity(t *testing.T) {
	r, tasks := compileSecurity(t, translate.Options{})
	if len(tasks) != 6 {
		t.Fatalf("%d steps, want 6", len(tasks))
	}
	privilegedSteps := map[string]bool{"task-privileged": true, "task-as-uid-privileged": true}
	rootSteps := map[string]bool{"task-as-nonroot": true, "task-as-uid-0": true}
	for name, task := range tasks {
		errs := podSecurity(task, psaapi.LevelRestricted)
		if restricted := len(errs) == 0; restricted != (name == "task-as-uid") {
			t.Errorf("%s: passes restricted: %v (%v)", name, restricted, errs)
		}
	}
	// Without Tekton's security context on its init container, no pod passes restricted.
	spec := translate.PodSpec(tasks["task-as-uid"], false)
	if got := psaEvaluator.EvaluatePod(psaapi.LevelVersion{Level: psaapi.LevelRestricted, Version: psaapi.LatestVersion()}, &metav1.ObjectMeta{}, &spec); allowed(got) {
		t.Errorf("a pod whose Tekton init container has no security context passes restricted")
	}
	// The uid's pod gives the build volume to the user's group, checking only its root.
	var fsGroups []string
	for _, s := range r.PipelineRun.Spec.TaskRunSpecs {
		if sc := s.PodTemplate.SecurityContext; sc != nil && sc.FSGroup != nil {
			fsGroups = append(fsGroups, fmt.Sprintf("%s %d %s", s.PipelineTaskName, *sc.FSGroup, *sc.FSGroupChangePolicy))
		}
	}
	if diff := cmp.Diff([]string{"task-as-uid 1000 OnRootMismatch"}, fsGroups); diff != "" {
		t.Errorf("fsGroups (-want +got):\n%s", diff)
	}
	if user := tasks["task-as-uid"].Spec.Steps[1].SecurityContext.RunAsUser; user == nil || *user != 1000 {
		t.Errorf("task-as-uid runs as %v, want 1000", user)
	}
	for name, task := range tasks {
		install, run := task.Spec.Steps[0], task.Spec.Steps[1]
		if errs := podSecurity(&v1.Task{Spec: v1.TaskSpec{Steps: []v1.Step{install}}}, psaapi.LevelRestricted); len(errs) > 0 {
			t.Errorf("%s: the install step fails restricted: %v", name, errs)
		}
		privileged := run.SecurityContext.Privileged != nil && *run.SecurityContext.Privileged
		if privileged != privilegedSteps[name] {
			t.Errorf("%s: privileged = %v", name, privileged)
		}
		if privilegedSteps[name] {
			if errs := podSecurity(task, psaapi.LevelBaseline); len(errs) == 0 {
				t.Errorf("%s: a privileged step passes baseline", name)
			}
			continue
		}
		sc := run.SecurityContext
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Errorf("%s: privilege escalation allowed", name)
		}
		if sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("%s: seccomp profile %v", name, sc.SeccompProfile)
		}
		if diff := cmp.Diff([]corev1.Capability{"ALL"}, sc.Capabilities.Drop); diff != "" {
			t.Errorf("%s: capabilities dropped (-want +got):\n%s", name, diff)
		}
		root := sc.RunAsUser != nil && *sc.RunAsUser == 0
		if root != rootSteps[name] {
			t.Errorf("%s: runs as root: %v (only a step whose runner switches to run.user should)", name, root)
		}
	}
}

// ((creds.password)) and ((creds.user)) mount those two keys of the Secret, nothing else;
// ((whole)) mounts the whole Secret.
func TestSecretMountsOnlyTheKeysUsed(t *testing.T) {
	_, tasks := compileSecurity(t, translate.Options{})
	keys := func(task *v1.Task) map[string][]string {
		out := map[string][]string{}
		for _, v := range task.Spec.Volumes {
			if v.Secret == nil {
				continue
			}
			var ks []string
			for _, it := range v.Secret.Items {
				ks = append(ks, it.Key)
			}
			out[v.Secret.SecretName] = ks
		}
		return out
	}
	want := map[string][]string{"p.creds": {"password", "user"}, "creds": {"password", "user"}}
	if diff := cmp.Diff(want, keys(tasks["task-as-image-user"])); diff != "" {
		t.Errorf("the keys mounted (-want +got):\n%s", diff)
	}
	want = map[string][]string{"p.whole": nil, "whole": nil}
	if diff := cmp.Diff(want, keys(tasks["task-privileged"])); diff != "" {
		t.Errorf("the keys mounted (-want +got):\n%s", diff)
	}
}

// With UserNamespaces every pod has a user namespace of its own, but a privileged step's,
// which cannot.
func TestUserNamespaces(t *testing.T) {
	r, _ := compileSecurity(t, translate.Options{UserNamespaces: true})
	tpl := r.PipelineRun.Spec.TaskRunTemplate.PodTemplate
	if tpl.HostUsers == nil || *tpl.HostUsers {
		t.Errorf("hostUsers = %v, want false", tpl.HostUsers)
	}
	var inHost []string
	for _, s := range r.PipelineRun.Spec.TaskRunSpecs {
		if s.PodTemplate != nil && s.PodTemplate.HostUsers != nil && *s.PodTemplate.HostUsers {
			inHost = append(inHost, s.PipelineTaskName)
		}
	}
	if diff := cmp.Diff([]string{"task-as-uid-privileged", "task-privileged"}, inHost); diff != "" {
		t.Errorf("the steps in the host's user namespace (-want +got):\n%s", diff)
	}
	r, _ = compileSecurity(t, translate.Options{})
	hostUsersSet := slices.ContainsFunc(r.PipelineRun.Spec.TaskRunSpecs, func(s v1.PipelineTaskRunSpec) bool { return s.PodTemplate.HostUsers != nil })
	if r.PipelineRun.Spec.TaskRunTemplate.PodTemplate.HostUsers != nil || hostUsersSet {
		t.Errorf("without UserNamespaces the pods say hostUsers: %v, %v", r.PipelineRun.Spec.TaskRunTemplate.PodTemplate.HostUsers, r.PipelineRun.Spec.TaskRunSpecs)
	}
}

func allowed(results []policy.CheckResult) bool {
	for _, r := range results {
		if !r.Allowed {
			return false
		}
	}
	return true
}

// TestSharedCacheSecrets: with a registry, a job's get shares its resource caches and
// the task that runs an artifact is published; the get's pod, which runs the resource
// type's code, mounts the store's Secret (resource-cache-secret) and never the one the
// build pushes its images with (image-registry-secret), which only the publish step's
// mounts. The team's index is the get's param; a one-off build shares nothing.
func TestSharedCacheSecrets(t *testing.T) {
	const pipeline = `
resources:
- name: repo
  type: git
  source: {uri: https://example.com/repo.git}
jobs:
- name: test
  plan:
  - get: repo
  - task: build
    config:
      platform: linux
      rootfs_uri: docker:///busybox
      outputs: [{name: img}]
      run: {path: "true"}
  - task: use
    image: img
    config: {platform: linux, run: {path: "true"}}
`
	_, r, err := translateJob(t, pipeline, translate.Options{ImageRegistry: "registry.example.com", Team: "blue"})
	if err != nil {
		t.Fatal(err)
	}
	validate(t, r)
	defs := map[string]*v1.Task{}
	for _, task := range r.Tasks {
		defs[task.Name] = task
	}
	secretsOf := func(task *v1.Task) (names []string) {
		for _, v := range task.Spec.Volumes {
			if v.Secret != nil {
				names = append(names, v.Secret.SecretName)
			}
		}
		return names
	}
	seen := map[string]bool{}
	for _, pt := range r.Pipeline.Spec.Tasks {
		task := defs[pt.TaskRef.Name]
		var index string
		for _, p := range pt.Params {
			if p.Name == "resource-cache-index" {
				index = p.Value.StringVal
			}
		}
		switch {
		case pt.Name == "get-repo":
			seen["get"] = true
			if got := secretsOf(task); !slices.Equal(got, []string{"$(params.resource-cache-secret)"}) {
				t.Errorf("the get mounts the Secrets %v, want the store's alone", got)
			}
			if index != runspec.ResourceCacheIndex("blue") {
				t.Errorf("the get's index: %q", index)
			}
		case slices.Contains(secretsOf(task), "$(params.image-registry-secret)"):
			seen["publish"] = true
			if index != "" || slices.Contains(secretsOf(task), "$(params.resource-cache-secret)") {
				t.Errorf("%s mounts the image registry's credentials and shares caches", pt.Name)
			}
		case index != "":
			t.Errorf("%s shares resource caches: %v", pt.Name, pt.Params)
		}
	}
	if !seen["get"] || !seen["publish"] {
		t.Errorf("steps seen: %v; want the get and a publish step", seen)
	}

	_, r, err = translateJob(t, pipeline, translate.Options{ImageRegistry: "registry.example.com", OneOff: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, pt := range append(r.PipelineRun.Spec.PipelineSpec.Tasks, r.PipelineRun.Spec.PipelineSpec.Finally...) {
		for _, p := range pt.Params {
			if p.Name == "resource-cache-index" {
				t.Errorf("a one-off build's %s shares resource caches", pt.Name)
			}
		}
	}
}

// With RunnerImageVolume the runner's image is each step pod's volume, its runner's
// directory mounted read-only where the runner would have been copied: no step copies
// it, the step runs RunnerPath all the same, and the Tasks are other Tasks than those
// that copy it. Image volumes are among the volumes Pod Security "restricted" admits.
func TestRunnerImageVolume(t *testing.T) {
	const runner = "registry.example/runner:v1"
	r, tasks := compileSecurity(t, translate.Options{RunnerImage: runner, RunnerImageVolume: true})
	_, copied := compileSecurity(t, translate.Options{RunnerImage: runner})
	for name, task := range tasks {
		var steps []string
		for _, s := range task.Spec.Steps {
			steps = append(steps, s.Name)
		}
		if steps[0] != runspec.StepRun || slices.Contains(steps, runspec.StepInstall) {
			t.Errorf("%s: steps %v, want %s first and no %s", name, steps, runspec.StepRun, runspec.StepInstall)
		}
		run := task.Spec.Steps[0]
		if diff := cmp.Diff([]string{runspec.RunnerPath}, run.Command); diff != "" {
			t.Errorf("%s: command (-want +got):\n%s", name, diff)
		}
		i := slices.IndexFunc(task.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == "runner" })
		if i < 0 || task.Spec.Volumes[i].Image == nil || task.Spec.Volumes[i].Image.Reference != runner {
			t.Errorf("%s: no image volume of %s: %v", name, runner, task.Spec.Volumes)
		}
		want := corev1.VolumeMount{Name: "runner", MountPath: runspec.RunnerDir, SubPath: "ko-app", ReadOnly: true}
		if diff := cmp.Diff(want, run.VolumeMounts[0]); diff != "" {
			t.Errorf("%s: the runner's mount (-want +got):\n%s", name, diff)
		}
		if path.Join("/", want.SubPath, path.Base(runspec.RunnerPath)) != runspec.RunnerBinary {
			t.Errorf("the image's %s is not where the step runs %s", path.Join(want.SubPath, path.Base(runspec.RunnerPath)), runspec.RunnerBinary)
		}
		if task.Name == copied[name].Name {
			t.Errorf("%s: the Task %s is the one that copies the runner", name, task.Name)
		}
		if errs := podSecurity(task, psaapi.LevelRestricted); name == "task-as-uid" && len(errs) > 0 {
			t.Errorf("%s fails restricted: %v", name, errs)
		}
	}
	if len(tasks) != 6 || len(r.Tasks) == 0 {
		t.Fatalf("%d steps and %d Tasks, want 6 steps", len(tasks), len(r.Tasks))
	}
}
