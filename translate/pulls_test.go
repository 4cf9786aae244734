package translate_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/planner"
	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/translate"
)

const pullsPipeline = `
resource_types:
- name: private-type
  type: registry-image
  source: {repository: acme/private-resource, username: ((hub.user)), password: ((hub.token))}
- name: public-type
  type: registry-image
  source: {repository: acme/public-resource}
resources:
- name: thing
  type: private-type
  source: {}
- name: other
  type: public-type
  source: {}
- name: built
  type: registry-image
  source: {repository: ((registry))/built, username: builder, password: ((builder-password))}
jobs:
- name: test
  plan:
  - get: thing
  - get: other
  - get: built
  - task: in-built
    image: built
    config: {platform: linux, run: {path: "true"}}
  - task: private
    config:
      platform: linux
      image_resource:
        type: registry-image
        source: {repository: reg.example.com:5000/team/img, tag: "1", username: robot, password: ((reg-password))}
      run: {path: "true"}
  - task: same-registry
    config:
      platform: linux
      image_resource:
        type: registry-image
        source: {repository: reg.example.com:5000/team/img, tag: "2", username: robot, password: ((reg-password))}
      run: {path: "true"}
  - task: public
    config:
      platform: linux
      image_resource: {type: registry-image, source: {repository: busybox}}
      run: {path: "true"}
`

// The images whose registry-image source gives a username or password (a task's
// image_resource, a custom type's image, a get's artifact a task runs) are pulled with
// the build's Secret of pull credentials: the pods that run them name it, and only
// those; the credentials are listed once each, as written; their vars, and those of the
// repository, are the build's credentials, looked up as the steps' are; the Secret is
// named and labelled after the run, a Docker config with nothing in it yet. Everything
// validates.
func TestImagePulls(t *testing.T) {
	for _, supplied := range []bool{false, true} {
		_, r, err := translateJob(t, pullsPipeline, translate.Options{Build: "3", SuppliedCredentials: supplied})
		if err != nil {
			t.Fatal(err)
		}
		validate(t, r)
		want := []translate.ImagePull{
			{Repository: "((registry))/built", Username: "builder", Password: "((builder-password))"},
			{Repository: "acme/private-resource", Username: "((hub.user))", Password: "((hub.token))"},
			{Repository: "reg.example.com:5000/team/img", Username: "robot", Password: "((reg-password))"},
		}
		if diff := cmp.Diff(want, r.ImagePulls); diff != "" {
			t.Errorf("supplied %v: image pulls (-want +got):\n%s", supplied, diff)
		}
		secret := r.PipelineRun.Name + "-image-pull"
		pulling := map[string]bool{}
		for _, spec := range r.PipelineRun.Spec.TaskRunSpecs {
			if spec.PodTemplate == nil || spec.PodTemplate.ImagePullSecrets == nil {
				continue
			}
			if diff := cmp.Diff([]corev1.LocalObjectReference{{Name: secret}}, spec.PodTemplate.ImagePullSecrets); diff != "" {
				t.Errorf("supplied %v: %s's imagePullSecrets (-want +got):\n%s", supplied, spec.PipelineTaskName, diff)
			}
			pulling[spec.PipelineTaskName] = true
		}
		wantPulling := map[string]bool{"get-thing": true, "task-private": true, "task-same-registry": true, "task-in-built": true}
		if diff := cmp.Diff(wantPulling, pulling); diff != "" {
			t.Errorf("supplied %v: tasks pulling with the Secret (-want +got):\n%s", supplied, diff)
		}
		vars := map[string]bool{}
		for _, c := range r.Credentials {
			vars[c.Var] = true
		}
		for _, v := range []string{"hub.user", "hub.token", "reg-password", "registry", "builder-password"} {
			if !vars[v] {
				t.Errorf("supplied %v: ((%s)) is not among the build's credentials %v", supplied, v, r.Credentials)
			}
		}
		s := r.ImagePullSecret
		if s == nil {
			t.Fatalf("supplied %v: no ImagePullSecret", supplied)
		}
		if s.Name != secret || s.Type != corev1.SecretTypeDockerConfigJson || s.Data != nil || s.StringData != nil {
			t.Errorf("supplied %v: Secret %s (type %s, data %v %v), want %s, %s, empty", supplied, s.Name, s.Type, s.Data, s.StringData, secret, corev1.SecretTypeDockerConfigJson)
		}
		if diff := cmp.Diff(r.PipelineRun.Labels, s.Labels); diff != "" {
			t.Errorf("supplied %v: Secret labels, not the run's (-run +secret):\n%s", supplied, diff)
		}
		if s.Annotations[runspec.LabelBuild] != "3" {
			t.Errorf("supplied %v: Secret annotations %v, want the build's", supplied, s.Annotations)
		}
	}
}

// A repository's credentials are keyed by the repository, Docker Hub's by its host
// alone, as the kubelet matches them to the images it pulls.
func TestPullRegistry(t *testing.T) {
	for repo, want := range map[string]string{
		"busybox":                         translate.DockerHubRegistry,
		"acme/tools":                      translate.DockerHubRegistry,
		"docker.io/acme/tools":            translate.DockerHubRegistry,
		"index.docker.io/library/busybox": translate.DockerHubRegistry,
		"ghcr.io/acme/tools":              "ghcr.io/acme/tools",
		"localhost/tools":                 "localhost/tools",
		"10.0.0.1:5000/tools":             "10.0.0.1:5000/tools",
	} {
		if got := translate.PullRegistry(repo); got != want {
			t.Errorf("PullRegistry(%q) = %q, want %q", repo, got, want)
		}
	}
}

// A build none of whose images has credentials has no Secret of them, and its pods pull
// as the service account's do.
func TestNoImagePulls(t *testing.T) {
	_, r, err := translateJob(t, suppliedPipeline, translate.Options{Build: "1"})
	if err != nil {
		t.Fatal(err)
	}
	if r.ImagePulls != nil || r.ImagePullSecret != nil {
		t.Errorf("image pulls %v, Secret %v, want none", r.ImagePulls, r.ImagePullSecret)
	}
	for _, spec := range r.PipelineRun.Spec.TaskRunSpecs {
		if spec.PodTemplate != nil && spec.PodTemplate.ImagePullSecrets != nil {
			t.Errorf("%s pulls with %v", spec.PipelineTaskName, spec.PodTemplate.ImagePullSecrets)
		}
	}
}

// A one-off build (fly execute) of a task whose image wants credentials pulls it with
// the build's Secret as a job's build does: its PipelineRun, which holds the Pipeline's
// spec, names the Secret for the task's pod.
func TestImagePullsOneOff(t *testing.T) {
	cfg, err := concourse.ParseTaskConfig([]byte(`platform: linux
image_resource: {type: registry-image, source: {repository: ghcr.io/acme/private, username: robot, password: ((token))}}
run: {path: "true"}
`))
	if err != nil {
		t.Fatal(err)
	}
	r, err := translate.Translate(planner.PlanOneOff(cfg, planner.OneOff{}), translate.Options{Pipeline: "one-off", Job: "build", Build: "2", OneOff: true})
	if err != nil {
		t.Fatal(err)
	}
	validate(t, r)
	if diff := cmp.Diff([]translate.ImagePull{{Repository: "ghcr.io/acme/private", Username: "robot", Password: "((token))"}}, r.ImagePulls); diff != "" {
		t.Errorf("image pulls (-want +got):\n%s", diff)
	}
	named := 0
	for _, spec := range r.PipelineRun.Spec.TaskRunSpecs {
		if spec.PodTemplate != nil && len(spec.PodTemplate.ImagePullSecrets) == 1 && spec.PodTemplate.ImagePullSecrets[0].Name == r.PipelineRun.Name+runspec.ImagePullSecretSuffix {
			named++
		}
	}
	if named != 1 || r.ImagePullSecret == nil {
		t.Errorf("%d pods name the Secret %v, want the task's", named, r.ImagePullSecret)
	}
}
