//go:build e2e

package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// globalSecret is the value of ((global_secret)) in the web node's own credential
// manager (Concourse's dummy one, --dummy-creds-var; see start).
const globalSecret = "g10bal-secret"

// TestCredentials: a job's ((vars)) come from the ATC, as on workers: ((dm:secret)) and
// ((dm:db.user)) from the pipeline's var source dm (Concourse's dummy type), the plain
// ((global_secret)) from the web node's credential manager. The task sees the values; fly
// shows them ((redacted)) (as Concourse 8 always redacts them); none is in a
// Tekton object but the build's Secret, which its run owns. A var no one has errors the
// step that needs it, when it runs, in Concourse's words, after the steps before it ran;
// a var of a step that never runs (a hook of a build that succeeds) fails nothing.
func TestCredentials(t *testing.T) {
	dumpOnFailure(t)
	t.Parallel()
	const (
		secret = "s3cr3t-from-var-source"
		user   = "db-admin-user"
	)
	setPipeline(t, "creds", fmt.Sprintf(`
var_sources:
- name: dm
  type: dummy
  config:
    vars:
      secret: %[2]s
      db: {user: %[3]s}
jobs:
- name: show
  plan:
  - task: show
    config:
      platform: linux
      image_resource: %[1]s
      params: {SECRET: ((dm:secret)), USER: ((dm:db.user)), GLOBAL: ((global_secret))}
      run:
        path: sh
        args: [-c, 'echo "as is: $SECRET $USER $GLOBAL"; echo "upper case: $SECRET $USER $GLOBAL" | tr a-z A-Z']
- name: missing
  plan:
  - task: before
    config:
      platform: linux
      image_resource: %[1]s
      run: {path: echo, args: [ran before]}
  - task: missing
    config:
      platform: linux
      image_resource: %[1]s
      params: {NOPE: ((dm:nope)), TOO: ((not_anywhere))}
      run: {path: "true"}
- name: unused-hook
  plan:
  - task: fine
    config:
      platform: linux
      image_resource: %[1]s
      run: {path: echo, args: [fine]}
  on_failure:
    task: hook
    config:
      platform: linux
      image_resource: %[1]s
      params: {NOPE: ((never_defined))}
      run: {path: "true"}
`, busybox(), secret, user))

	out, code := fly(t, 5*time.Minute, "trigger-job", "-j", "creds/show", "-w")
	t.Logf("fly trigger-job -j creds/show -w: exit %d\n%s", code, out)
	if code != 0 {
		errorf(t, "exit %d, want 0", code)
	}
	// The task read the values (upper case, no longer a credential's), and fly shows
	// none of them.
	upper := strings.ToUpper(fmt.Sprintf("%s %s %s", secret, user, globalSecret))
	inOrder(t, out, "as is: ((redacted)) ((redacted)) ((redacted))", "UPPER CASE: "+upper, "succeeded")
	values := []string{secret, user, globalSecret}
	for _, v := range values {
		if strings.Contains(out, v) {
			errorf(t, "fly's output shows %q", v)
		}
	}

	ctx := context.Background()
	run := buildRun(t, "show")
	s, err := web.kube.CoreV1().Secrets(web.ns).Get(ctx, run, metav1.GetOptions{})
	if err != nil {
		fatalf(t, "the build's Secret: %v", err)
	}
	if o := s.OwnerReferences; len(o) != 1 || o[0].Kind != "PipelineRun" || o[0].Name != run {
		errorf(t, "the Secret's owners %+v, want PipelineRun %s", o, run)
	}
	if len(s.Data) != 3 {
		errorf(t, "the Secret has keys %v, want one a var", keys(s.Data))
	}
	for _, obj := range tektonObjects(t) {
		for _, v := range values {
			if strings.Contains(obj, v) {
				errorf(t, "a Tekton object holds %q: %.200s", v, obj)
			}
		}
	}

	out, code = fly(t, 5*time.Minute, "trigger-job", "-j", "creds/missing", "-w")
	t.Logf("fly trigger-job -j creds/missing -w: exit %d\n%s", code, out)
	if code != 2 {
		errorf(t, "exit %d, want 2 (errored)", code)
	}
	inOrder(t, out, "ran before", "undefined vars: dm:nope, not_anywhere", "errored")

	out, code = fly(t, 5*time.Minute, "trigger-job", "-j", "creds/unused-hook", "-w")
	t.Logf("fly trigger-job -j creds/unused-hook -w: exit %d\n%s", code, out)
	if code != 0 {
		errorf(t, "exit %d, want 0 (the hook's var is never looked up)", code)
	}
	inOrder(t, out, "fine", "succeeded")
}

// writeTaskFile is a plan step (YAML, indented as a job's plan) of a task that writes
// content into its output ci as ci/task.yml: a task file whose ((vars)) and image are in
// no plan.
func writeTaskFile(content string) string {
	return fmt.Sprintf(`
  - task: write
    config:
      platform: linux
      image_resource: %s
      outputs: [{name: ci}]
      run: {path: sh, args: [-c, 'echo %s | base64 -d > ci/task.yml']}`, busybox(), base64.StdEncoding.EncodeToString([]byte(content)))
}

// TestTaskFileCredentials: the ((vars)) of a task file, which only the build reads (here a
// task of the build writes it), are looked up by the web node once the file is read, as
// Concourse looks them up when the step runs: a var source's, the credential manager's,
// and the step's own `vars`. The task sees the values, fly shows them ((redacted)), and
// they are in no Tekton object: only in the task's vars Secret, which the run owns. A var
// no one has errors the task, in Concourse's words.
func TestTaskFileCredentials(t *testing.T) {
	dumpOnFailure(t)
	t.Parallel()
	const text = "t3xt-from-var-source"
	file := fmt.Sprintf(`platform: linux
image_resource: %s
params: {GLOBAL: ((global_secret))}
run:
  path: sh
  args: [-c, 'echo "file: ((dm:text)) $GLOBAL ((from_step))"; echo "upper: ((dm:text)) $GLOBAL" | tr a-z A-Z']
`, busybox())
	missing := fmt.Sprintf("platform: linux\nimage_resource: %s\nrun: {path: echo, args: [((not_anywhere))]}\n", busybox())
	setPipeline(t, "taskfile", fmt.Sprintf(`
var_sources:
- name: dm
  type: dummy
  config: {vars: {text: %s}}
jobs:
- name: file
  plan:%s
  - task: from-file
    file: ci/task.yml
    vars: {from_step: step-value}
- name: missing
  plan:%s
  - task: from-file
    file: ci/task.yml
`, text, writeTaskFile(file), writeTaskFile(missing)))

	out, code := fly(t, 5*time.Minute, "trigger-job", "-j", "taskfile/file", "-w")
	t.Logf("fly trigger-job -j taskfile/file -w: exit %d\n%s", code, out)
	if code != 0 {
		errorf(t, "exit %d, want 0", code)
	}
	inOrder(t, out, "file: ((redacted)) ((redacted)) step-value", "UPPER: "+strings.ToUpper(text+" "+globalSecret), "succeeded")
	for _, v := range []string{text, globalSecret} {
		if strings.Contains(out, v) {
			errorf(t, "fly's output shows %q", v)
		}
		for _, obj := range tektonObjects(t) {
			if strings.Contains(obj, v) {
				errorf(t, "a Tekton object holds %q: %.200s", v, obj)
			}
		}
	}
	ctx := context.Background()
	run := pipelineRun(t, "taskfile", "file")
	secrets, err := web.kube.CoreV1().Secrets(web.ns).List(ctx, metav1.ListOptions{LabelSelector: runspec.LabelTaskVarsOf + "=" + run})
	if err != nil || len(secrets.Items) != 1 {
		fatalf(t, "the task's vars Secrets: %v, %v", secrets, err)
	}
	s := secrets.Items[0]
	if o := s.OwnerReferences; len(o) != 1 || o[0].Kind != "PipelineRun" || o[0].Name != run {
		errorf(t, "the vars Secret's owners %+v, want PipelineRun %s", o, run)
	}
	if len(s.Data) != 2 {
		errorf(t, "the vars Secret has keys %v, want the file's two credentials", keys(s.Data))
	}

	out, code = fly(t, 5*time.Minute, "trigger-job", "-j", "taskfile/missing", "-w")
	t.Logf("fly trigger-job -j taskfile/missing -w: exit %d\n%s", code, out)
	if code != 2 {
		errorf(t, "exit %d, want 2 (errored)", code)
	}
	inOrder(t, out, "undefined vars: not_anywhere", "errored")
}

// buildRun is the name of the PipelineRun of build 1 of a job of pipeline creds.
func buildRun(t *testing.T, job string) string {
	t.Helper()
	return pipelineRun(t, "creds", job)
}

// pipelineRun is the name of the PipelineRun of build 1 of a job of a pipeline.
func pipelineRun(t *testing.T, pipeline, job string) string {
	t.Helper()
	sel := labels.SelectorFromSet(labels.Set{runspec.LabelPipeline: pipeline, runspec.LabelJob: job, runspec.LabelBuild: "1"}).String()
	runs, err := web.tekton.TektonV1().PipelineRuns(web.ns).List(context.Background(), metav1.ListOptions{LabelSelector: sel})
	if err != nil || len(runs.Items) != 1 {
		fatalf(t, "the run of %s/%s #1: %v, %v", pipeline, job, runs, err)
	}
	return runs.Items[0].Name
}

// tektonObjects are the namespace's Tekton objects (and their TaskRuns' pods), as JSON.
func tektonObjects(t *testing.T) []string {
	t.Helper()
	ctx := context.Background()
	tekton := web.tekton.TektonV1()
	var lists []any
	for _, list := range []func() (any, error){
		func() (any, error) { return tekton.Tasks(web.ns).List(ctx, metav1.ListOptions{}) },
		func() (any, error) { return tekton.Pipelines(web.ns).List(ctx, metav1.ListOptions{}) },
		func() (any, error) { return tekton.PipelineRuns(web.ns).List(ctx, metav1.ListOptions{}) },
		func() (any, error) { return tekton.TaskRuns(web.ns).List(ctx, metav1.ListOptions{}) },
		func() (any, error) { return web.kube.CoreV1().Pods(web.ns).List(ctx, metav1.ListOptions{}) },
		func() (any, error) { return web.kube.CoreV1().Events(web.ns).List(ctx, metav1.ListOptions{}) },
	} {
		l, err := list()
		if err != nil && !apierrors.IsNotFound(err) {
			fatal(t, err)
		}
		lists = append(lists, l)
	}
	var out []string
	for _, l := range lists {
		buf, err := json.Marshal(l)
		if err != nil {
			fatal(t, err)
		}
		out = append(out, string(buf))
	}
	return out
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
