package translate_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/translate"
)

const suppliedPipeline = `
var_sources:
- name: dm
  type: dummy
  config: {vars: {secret: not-in-the-plan}}
jobs:
- name: test
  plan:
  - load_var: local
    file: vars/v.txt
  - task: creds
    config:
      platform: linux
      rootfs_uri: 'docker:///busybox'
      params: {TOKEN: ((token)), USER: ((dm:db.user)), LOCAL: ((.:local))}
      run: {path: sh, args: [-c, 'echo ((dm:secret))']}
  - task: none
    config: {platform: linux, rootfs_uri: 'docker:///busybox', run: {path: "true"}}
  - task: again
    privileged: true
    config: {platform: linux, rootfs_uri: 'docker:///busybox', params: {T: ((token))}, run: {path: "true"}}
`

// With supplied credentials, every ((var)) of the build but the local ones is listed for
// the starter, whatever its var source; the build's Secret is named and labelled after
// the PipelineRun and holds nothing yet; each step mounts the keys of its own vars, and
// only those, from the Secret its PipelineRun names; nothing else of the namespace's.
func TestSuppliedCredentials(t *testing.T) {
	_, r, err := translateJob(t, suppliedPipeline, translate.Options{SuppliedCredentials: true, Build: "4"})
	if err != nil {
		t.Fatal(err)
	}
	validate(t, r)
	run := r.PipelineRun.Name
	key := runspec.CredentialKey
	wantCreds := []translate.Credential{
		{Var: "dm:db.user", Secrets: []string{run}, Key: key("dm:db.user"), Supplied: true},
		{Var: "dm:secret", Secrets: []string{run}, Key: key("dm:secret"), Supplied: true},
		{Var: "token", Secrets: []string{run}, Key: key("token"), Supplied: true},
	}
	if diff := cmp.Diff(wantCreds, r.Credentials); diff != "" {
		t.Errorf("credentials (-want +got):\n%s", diff)
	}
	if len(r.Secrets) != 0 {
		t.Errorf("namespace Secrets %v, want none", r.Secrets)
	}

	s := r.CredentialSecret
	if s == nil {
		t.Fatal("no CredentialSecret")
	}
	if s.Name != run || s.Data != nil || s.StringData != nil || s.Type != corev1.SecretTypeOpaque {
		t.Errorf("Secret %s (type %s, data %v %v), want %s, Opaque, empty", s.Name, s.Type, s.Data, s.StringData, run)
	}
	if diff := cmp.Diff(r.PipelineRun.Labels, s.Labels); diff != "" {
		t.Errorf("Secret labels, not the run's (-run +secret):\n%s", diff)
	}
	for _, k := range []string{runspec.LabelTeam, runspec.LabelPipeline, runspec.LabelJob, runspec.LabelBuild} {
		if s.Annotations[k] != r.PipelineRun.Annotations[k] {
			t.Errorf("Secret annotation %s = %q, the run's %q", k, s.Annotations[k], r.PipelineRun.Annotations[k])
		}
	}

	tasks := map[string]*v1.Task{}
	for _, task := range r.Tasks {
		tasks[task.Name] = task
	}
	wantKeys := map[string][]string{
		"load-var-local": nil,
		"task-creds":     {key("dm:db.user"), key("dm:secret"), key("token")},
		"task-none":      nil,
		"task-again":     {key("token")},
	}
	seen := 0
	for _, pt := range r.Pipeline.Spec.Tasks {
		want, ok := wantKeys[pt.Name]
		if !ok {
			continue
		}
		seen++
		task := tasks[pt.TaskRef.Name]
		var got []string
		for _, vol := range task.Spec.Volumes {
			if vol.Secret == nil {
				continue
			}
			if vol.Secret.SecretName != "$(params.credentials)" {
				t.Errorf("%s mounts Secret %q", pt.Name, vol.Secret.SecretName)
			}
			for _, item := range vol.Secret.Items {
				if item.Path != item.Key {
					t.Errorf("%s: key %s at %s, want it at its own name", pt.Name, item.Key, item.Path)
				}
				got = append(got, item.Key)
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: keys mounted (-want +got):\n%s", pt.Name, diff)
		}
		var param string
		for _, p := range pt.Params {
			if p.Name == "credentials" {
				param = p.Value.StringVal
			}
		}
		if want := map[bool]string{true: "$(context.pipelineRun.name)"}[len(want) > 0]; param != want {
			t.Errorf("%s: credentials param %q, want %q", pt.Name, param, want)
		}
		if len(want) > 0 {
			mounted := false
			for _, m := range task.Spec.Steps[1].VolumeMounts {
				mounted = mounted || m.MountPath == runspec.DefaultCreds && m.ReadOnly
			}
			if !mounted {
				t.Errorf("%s: the Secret is not mounted read-only at %s", pt.Name, runspec.DefaultCreds)
			}
		}
		spec := stepSpec(t, pt)
		if !spec.SuppliedCredentials || spec.VarSources != nil {
			t.Errorf("%s: spec says supplied_credentials %v, var_sources %v", pt.Name, spec.SuppliedCredentials, spec.VarSources)
		}
	}

	if seen != len(wantKeys) {
		t.Errorf("%d of the steps %v found", seen, wantKeys)
	}

	// Another build of the job shares its Tasks and Pipeline: only the run and its
	// Secret are the build's.
	_, next, err := translateJob(t, suppliedPipeline, translate.Options{SuppliedCredentials: true, Build: "5"})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := translate.MarshalYAML([]any{r.Tasks, r.Pipeline})
	b, _ := translate.MarshalYAML([]any{next.Tasks, next.Pipeline})
	if string(a) != string(b) {
		t.Errorf("two builds of the job differ in their Tasks or Pipeline")
	}
	if next.CredentialSecret.Name != next.PipelineRun.Name || next.CredentialSecret.Name == s.Name {
		t.Errorf("build 5's Secret is %s, its run %s", next.CredentialSecret.Name, next.PipelineRun.Name)
	}
	_, same, _ := translateJob(t, suppliedPipeline, translate.Options{SuppliedCredentials: true, Build: "4"})
	x, _ := translate.MarshalYAML(append(r.Objects(), r.CredentialSecret))
	y, _ := translate.MarshalYAML(append(same.Objects(), same.CredentialSecret))
	if string(x) != string(y) {
		t.Errorf("the same input gave different bytes")
	}
}

// The Secret is named as the PipelineRun is, for any team and instance; a build without
// credentials has none; without SuppliedCredentials, the namespace's Secrets are read as
// before.
func TestSuppliedCredentialsSecret(t *testing.T) {
	_, r, err := translateJob(t, suppliedPipeline, translate.Options{SuppliedCredentials: true, Team: "ops", InstanceVars: map[string]any{"branch": "main"}})
	if err != nil {
		t.Fatal(err)
	}
	if r.CredentialSecret.Name != r.PipelineRun.Name {
		t.Errorf("Secret %s, run %s", r.CredentialSecret.Name, r.PipelineRun.Name)
	}
	for _, c := range r.Credentials {
		if c.Secrets[0] != r.PipelineRun.Name {
			t.Errorf("((%s)) is read from %v, not the run's Secret %s", c.Var, c.Secrets, r.PipelineRun.Name)
		}
	}

	none := "jobs:\n- name: test\n  plan:\n  - task: t\n    config: {platform: linux, rootfs_uri: 'docker:///busybox', run: {path: x}}\n"
	_, r, err = translateJob(t, none, translate.Options{SuppliedCredentials: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.CredentialSecret != nil || r.Credentials != nil {
		t.Errorf("a build without vars: Secret %v, credentials %v", r.CredentialSecret, r.Credentials)
	}

	_, r, err = translateJob(t, suppliedPipeline, translate.Options{VarSources: []string{"dm"}})
	if err != nil {
		t.Fatal(err)
	}
	if r.CredentialSecret != nil {
		t.Errorf("a build reading the namespace's Secrets has a Secret of its own")
	}
	for _, c := range r.Credentials {
		if c.Supplied || strings.Contains(strings.Join(c.Secrets, ","), r.PipelineRun.Name) {
			t.Errorf("((%s)): %+v", c.Var, c)
		}
	}
}

// stepSpec decodes a PipelineTask's runner spec.
func stepSpec(t *testing.T, pt v1.PipelineTask) runspec.Spec {
	t.Helper()
	for _, p := range pt.Params {
		if p.Name == runspec.ParamSpec {
			spec, err := runspec.Decode(p.Value.StringVal)
			if err != nil {
				t.Fatal(err)
			}
			return spec
		}
	}
	t.Fatalf("%s has no spec", pt.Name)
	return runspec.Spec{}
}

// seenSpec is the spec of pt as its runner sees it: the build's context, which the run's
// annotation holds, completes its build.
func seenSpec(t *testing.T, r *translate.Result, pt v1.PipelineTask) runspec.Spec {
	t.Helper()
	spec := stepSpec(t, pt)
	if err := spec.Build.Complete(r.PipelineRun.Annotations[runspec.AnnotationBuildContext]); err != nil {
		t.Fatal(err)
	}
	return spec
}

// With supplied credentials, a task whose config is a file read at run time gets the vars
// the file needs from its starter once its resolve step has listed them: the resolve step's
// Task declares the result `vars`, and the task's pod mounts, required, the Secret named
// after the run and the resolve step, so that it waits for it. Without supplied
// credentials, neither.
func TestSuppliedCredentialsTaskFile(t *testing.T) {
	const pipeline = `
resources:
- name: repo
  type: mock
jobs:
- name: test
  plan:
  - get: repo
  - task: from-file
    file: repo/task.yml
    vars: {image: busybox}
  - task: inline
    config: {platform: linux, rootfs_uri: 'docker:///busybox', run: {path: "true"}}
`
	for _, supplied := range []bool{true, false} {
		_, r, err := translateJob(t, pipeline, translate.Options{SuppliedCredentials: supplied, Build: "1"})
		if err != nil {
			t.Fatal(err)
		}
		validate(t, r)
		tasks := map[string]*v1.Task{}
		for _, task := range r.Tasks {
			tasks[task.Name] = task
		}
		params := map[string]map[string]string{}
		for _, pt := range r.Pipeline.Spec.Tasks {
			params[pt.Name] = map[string]string{}
			for _, p := range pt.Params {
				params[pt.Name][p.Name] = p.Value.StringVal
			}
			task := tasks[pt.TaskRef.Name]
			declares, declaresPull := false, false
			for _, res := range task.Spec.Results {
				declares = declares || res.Name == runspec.ResultVars
				declaresPull = declaresPull || res.Name == runspec.ResultPull
			}
			if declaresPull != declares {
				t.Errorf("supplied %v: %s declares vars %v, pull %v", supplied, pt.Name, declares, declaresPull)
			}
			var volume *corev1.Volume
			for i, vol := range task.Spec.Volumes {
				if vol.Secret != nil && vol.Secret.SecretName == "$(params."+runspec.ParamTaskVars+")" {
					volume = &task.Spec.Volumes[i]
				}
			}
			mounted := false
			for _, m := range task.Spec.Steps[1].VolumeMounts {
				mounted = mounted || volume != nil && m.Name == volume.Name && m.MountPath == runspec.DefaultTaskVars && m.ReadOnly
			}
			param, hasParam := params[pt.Name][runspec.ParamTaskVars]
			wantParam := ""
			switch {
			case pt.Name == "resolve-from-file":
				if declares != supplied || volume != nil {
					t.Errorf("supplied %v: %s declares vars %v, mounts %v", supplied, pt.Name, declares, volume)
				}
			case pt.Name == "task-from-file" && supplied:
				wantParam = runspec.TaskVarsSecret("$(context.pipelineRun.name)", "resolve-from-file")
				if volume == nil || volume.Secret.Optional != nil && *volume.Secret.Optional || !mounted || declares {
					t.Errorf("%s: the vars Secret is not mounted, required, at %s: %+v", pt.Name, runspec.DefaultTaskVars, volume)
				}
			default:
				if declares || volume != nil {
					t.Errorf("supplied %v: %s declares vars %v, mounts %v", supplied, pt.Name, declares, volume)
				}
			}
			if param != wantParam || hasParam != (wantParam != "") {
				t.Errorf("supplied %v: %s: task-vars param %q, want %q", supplied, pt.Name, param, wantParam)
			}
		}
		if _, ok := params["resolve-from-file"]; !ok {
			t.Fatalf("no resolve-from-file in %v", params)
		}
		// The task of the file pulls its image with the build's Secret of image pull
		// credentials, which its starter fills in as its resolve step says; no other
		// does, and the Secret is there, with no credentials known yet, only then.
		pulling := map[string]bool{}
		for _, rs := range r.PipelineRun.Spec.TaskRunSpecs {
			if rs.PodTemplate != nil && len(rs.PodTemplate.ImagePullSecrets) > 0 {
				want := r.PipelineRun.Name + runspec.ImagePullSecretSuffix
				if got := rs.PodTemplate.ImagePullSecrets; len(got) != 1 || got[0].Name != want {
					t.Errorf("%s pulls with %v, want %s", rs.PipelineTaskName, got, want)
				}
				pulling[rs.PipelineTaskName] = true
			}
		}
		if supplied != pulling["task-from-file"] || len(pulling) != map[bool]int{true: 1, false: 0}[supplied] {
			t.Errorf("supplied %v: the pods that pull with the build's Secret: %v", supplied, pulling)
		}
		if (r.ImagePullSecret != nil) != supplied || len(r.ImagePulls) != 0 {
			t.Errorf("supplied %v: the Secret of image pull credentials %v, pulls %v", supplied, r.ImagePullSecret, r.ImagePulls)
		}
	}
}
