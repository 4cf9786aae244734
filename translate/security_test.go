package translate_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	psaapi "k8s.io/pod-security-admission/api"

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

// Every step but the privileged one passes Pod Security "baseline" (validate checks it for
// every test), the runner's install step "restricted", and only a privileged step may be
// privileged.
func TestPodSecurity(t *testing.T) {
	_, tasks := compileSecurity(t, translate.Options{})
	if len(tasks) != 3 {
		t.Fatalf("%d steps, want 3", len(tasks))
	}
	for name, task := range tasks {
		install, run := task.Spec.Steps[0], task.Spec.Steps[1]
		if errs := podSecurity(&v1.Task{Spec: v1.TaskSpec{Steps: []v1.Step{install}}}, psaapi.LevelRestricted); len(errs) > 0 {
			t.Errorf("%s: the install step fails restricted: %v", name, errs)
		}
		privileged := run.SecurityContext.Privileged != nil && *run.SecurityContext.Privileged
		if privileged != (name == "task-privileged") {
			t.Errorf("%s: privileged = %v", name, privileged)
		}
		if name == "task-privileged" {
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
		if root != (name == "task-as-nonroot") {
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
	if diff := cmp.Diff([]string{"task-privileged"}, inHost); diff != "" {
		t.Errorf("the steps in the host's user namespace (-want +got):\n%s", diff)
	}
	r, _ = compileSecurity(t, translate.Options{})
	if r.PipelineRun.Spec.TaskRunTemplate.PodTemplate.HostUsers != nil || len(r.PipelineRun.Spec.TaskRunSpecs) != 0 {
		t.Errorf("without UserNamespaces the pods say hostUsers: %v, %v", r.PipelineRun.Spec.TaskRunTemplate.PodTemplate.HostUsers, r.PipelineRun.Spec.TaskRunSpecs)
	}
}
