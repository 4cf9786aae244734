package tektonrun

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"

	"github.com/concourse-tekton/concourse-tekton/concourse/event"
	"github.com/concourse-tekton/concourse-tekton/runner/redact"
	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/tektonrun/buildevents"
)

// taskVarsRun is a build with a task whose config is a file: its PipelineRun, and the
// resolve step's TaskRun, ended as status says, with the vars result listed (nil: none).
func taskVarsRun(t *testing.T, mode runspec.Mode, name string, status corev1.ConditionStatus, listed *string) (*v1.PipelineRun, *v1.TaskRun) {
	t.Helper()
	pr := &v1.PipelineRun{
		ObjectMeta: metav1.ObjectMeta{Name: "app-unit-3", Namespace: "ci", UID: "uid-run",
			Labels: map[string]string{runspec.LabelTeam: "main", runspec.LabelPipeline: "app", runspec.LabelJob: "unit", runspec.LabelBuild: "3", "other": "x"}},
		Status: v1.PipelineRunStatus{PipelineRunStatusFields: v1.PipelineRunStatusFields{PipelineSpec: &v1.PipelineSpec{Tasks: []v1.PipelineTask{
			{Name: name}, {Name: "task-t", Params: v1.Params{{Name: runspec.ParamTaskVars, Value: *v1.NewStructuredValues("$(context.pipelineRun.name)-" + name)}}},
		}}}},
	}
	spec := runspec.Spec{Mode: mode, PlanID: "t/resolve", Name: "t", SuppliedCredentials: true}
	if mode == runspec.ModeResolve {
		spec.Resolve = &runspec.Resolve{TaskPlanID: "t", File: "ci/task.yml"}
	} else {
		spec.Task = &runspec.Task{File: "ci/task.yml"}
	}
	tr := &v1.TaskRun{
		ObjectMeta: metav1.ObjectMeta{Name: pr.Name + "-" + name, Namespace: "ci", Labels: map[string]string{labelPipelineRun: pr.Name, labelPipelineTask: name}},
		Spec:       v1.TaskRunSpec{Params: specParams(t, spec, "runner")},
		Status:     v1.TaskRunStatus{Status: duckv1.Status{Conditions: duckv1.Conditions{{Type: apis.ConditionSucceeded, Status: status}}}},
	}
	if listed != nil {
		tr.Status.Results = []v1.TaskRunResult{{Name: runspec.ResultVars, Value: *v1.NewStructuredValues(*listed)}}
	}
	return pr, tr
}

// The follower of a build with supplied credentials makes the vars Secret of a task file
// once its resolve step has listed the vars, and only then: the values its starter has
// (a var it lacks is left out, for the task to say it is undefined), labelled and owned
// as the build's, once; the values are redacted in its events and in another follower's.
func TestTaskVarsSecret(t *testing.T) {
	ctx := context.Background()
	b := newBackend(t)
	lookup := &credsLookup{values: map[string]any{"token": "t0ken-value", "vs:text": map[string]any{"a": "text-value"}}}
	secrets := &redact.Secrets{}
	s := newTaskVarsSupplier(b.client, lookup)
	kube := b.client.target.Kube.CoreV1().Secrets("ci")
	list := `["token","vs:text","unknown"]`

	for _, tt := range []struct {
		name   string
		mode   runspec.Mode
		status corev1.ConditionStatus
		listed *string
	}{
		{"running", runspec.ModeResolve, corev1.ConditionUnknown, &list},
		{"failed without a list", runspec.ModeResolve, corev1.ConditionFalse, nil},
		{"not a resolve step", runspec.ModeTask, corev1.ConditionTrue, &list},
	} {
		pr, tr := taskVarsRun(t, tt.mode, "resolve-t", tt.status, tt.listed)
		if err := s.Observe(ctx, pr, []*v1.TaskRun{tr}, secrets); err != nil {
			t.Fatal(err)
		}
		if got, _ := kube.List(ctx, metav1.ListOptions{}); len(got.Items) != 0 || len(lookup.asked) != 0 {
			t.Errorf("%s: Secrets %d, looked up %v", tt.name, len(got.Items), lookup.asked)
		}
	}

	pr, tr := taskVarsRun(t, runspec.ModeResolve, "resolve-t", corev1.ConditionTrue, &list)
	for range 2 {
		if err := s.Observe(ctx, pr, []*v1.TaskRun{tr}, secrets); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff([]string{"token", "vs:text", "unknown"}, lookup.asked); diff != "" {
		t.Errorf("looked up (-want +got):\n%s", diff)
	}
	got, err := kube.Get(ctx, runspec.TaskVarsSecret(pr.Name, "resolve-t"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{runspec.CredentialKey("token"): []byte(`"t0ken-value"`), runspec.CredentialKey("vs:text"): []byte(`{"a":"text-value"}`)}
	if diff := cmp.Diff(want, got.Data); diff != "" {
		t.Errorf("data (-want +got):\n%s", diff)
	}
	wantLabels := map[string]string{runspec.LabelTaskVarsOf: pr.Name, runspec.LabelManagedBy: runspec.ManagedBy,
		runspec.LabelTeam: "main", runspec.LabelPipeline: "app", runspec.LabelJob: "unit", runspec.LabelBuild: "3"}
	if diff := cmp.Diff(wantLabels, got.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if o := got.OwnerReferences; len(o) != 1 || o[0].Kind != "PipelineRun" || o[0].Name != pr.Name || o[0].UID != pr.UID {
		t.Errorf("owners %+v", o)
	}
	log := event.Log{Payload: "t0ken-value text-value"}
	if r := buildevents.Redact(secrets, log); r.(event.Log).Payload != "((redacted)) ((redacted))" {
		t.Errorf("this follower shows %q", r.(event.Log).Payload)
	}
	other, err := b.client.buildSecrets(ctx, pr)
	if err != nil {
		t.Fatal(err)
	}
	if r := buildevents.Redact(other, log); r.(event.Log).Payload != "((redacted)) ((redacted))" {
		t.Errorf("another follower shows %q", r.(event.Log).Payload)
	}
}

// A credential manager that fails gives the task its error, in its words, and no value.
func TestTaskVarsLookupError(t *testing.T) {
	ctx := context.Background()
	b := newBackend(t)
	lookup := &credsLookup{err: errors.New("vault: permission denied")}
	s := newTaskVarsSupplier(b.client, lookup)
	secrets := &redact.Secrets{}
	list := `["token"]`
	pr, tr := taskVarsRun(t, runspec.ModeResolve, "resolve-t", corev1.ConditionTrue, &list)
	if err := s.Observe(ctx, pr, []*v1.TaskRun{tr}, secrets); err != nil {
		t.Fatal(err)
	}
	got, err := b.client.target.Kube.CoreV1().Secrets("ci").Get(ctx, runspec.TaskVarsSecret(pr.Name, "resolve-t"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string][]byte{runspec.TaskVarsErrorKey: []byte("vault: permission denied")}, got.Data); diff != "" {
		t.Errorf("data (-want +got):\n%s", diff)
	}
	// No vars at all: the Secret is made all the same, for the pod waits for it.
	empty := `[]`
	pr, tr = taskVarsRun(t, runspec.ModeResolve, "resolve-u", corev1.ConditionTrue, &empty)
	if err := s.Observe(ctx, pr, []*v1.TaskRun{tr}, secrets); err != nil {
		t.Fatal(err)
	}
	if got, err := b.client.target.Kube.CoreV1().Secrets("ci").Get(ctx, runspec.TaskVarsSecret(pr.Name, "resolve-u"), metav1.GetOptions{}); err != nil || len(got.Data) != 0 {
		t.Errorf("no vars: %v, %v", got, err)
	}
}

// The follower adds the credentials of a task file's image, which its resolve step gave
// as the file writes them, to the build's Secret of image pull credentials, looked up in
// the supplied credentials, before it makes the task's vars Secret (the task's pod pulls
// once it has that). A registry the Secret has already keeps its credentials; a Secret
// not there is made, owned by the run; the values are redacted; a credential manager's
// error is the task's, and adds nothing.
func TestTaskVarsImagePull(t *testing.T) {
	ctx := context.Background()
	pull := `{"repository":"r.example:5000/app","username":"((user))","password":"((registry-password))"}`
	list := `["registry-password","user"]`
	values := map[string]any{"user": "robot-user", "registry-password": "s3cret-pass"}
	withPull := func(tr *v1.TaskRun) *v1.TaskRun {
		tr.Status.Results = append(tr.Status.Results, v1.TaskRunResult{Name: runspec.ResultPull, Value: *v1.NewStructuredValues(pull)})
		return tr
	}
	auth := func(user, pass string) dockerAuth {
		return dockerAuth{Username: user, Password: pass, Auth: base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))}
	}
	pullSecret := func(t *testing.T, b *Backend, name string) map[string]dockerAuth {
		t.Helper()
		s, err := b.client.target.Kube.CoreV1().Secrets("ci").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if s.Type != corev1.SecretTypeDockerConfigJson {
			t.Errorf("type %s", s.Type)
		}
		if o := s.OwnerReferences; len(o) != 1 || o[0].UID != "uid-run" {
			t.Errorf("owners %+v", o)
		}
		auths, err := dockerAuths(s)
		if err != nil {
			t.Fatal(err)
		}
		return auths
	}

	t.Run("added before the vars Secret", func(t *testing.T) {
		pr, tr := taskVarsRun(t, runspec.ModeResolve, "resolve-t", corev1.ConditionTrue, &list)
		existing := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: pr.Name + runspec.ImagePullSecretSuffix,
			OwnerReferences: []metav1.OwnerReference{{Kind: "PipelineRun", Name: pr.Name, UID: pr.UID}}}, Type: corev1.SecretTypeDockerConfigJson}
		if err := setDockerAuths(existing, map[string]dockerAuth{"other.example/x": auth("a", "b")}); err != nil {
			t.Fatal(err)
		}
		b := newBackend(t, existing)
		kube := b.client.target.Kube.(*fake.Clientset)
		kube.ClearActions()
		secrets := &redact.Secrets{}
		s := newTaskVarsSupplier(b.client, &credsLookup{values: values})
		if err := s.Observe(ctx, pr, []*v1.TaskRun{withPull(tr)}, secrets); err != nil {
			t.Fatal(err)
		}
		want := map[string]dockerAuth{"other.example/x": auth("a", "b"), "r.example:5000/app": auth("robot-user", "s3cret-pass")}
		if diff := cmp.Diff(want, pullSecret(t, b, existing.Name)); diff != "" {
			t.Errorf("the Secret of image pull credentials (-want +got):\n%s", diff)
		}
		var writes []string
		for _, a := range kube.Actions() {
			switch a := a.(type) {
			case k8stesting.CreateAction:
				writes = append(writes, "create "+a.GetObject().(*corev1.Secret).Name)
			case k8stesting.PatchAction:
				writes = append(writes, "patch "+a.GetName())
			}
		}
		if diff := cmp.Diff([]string{"patch " + existing.Name, "create " + runspec.TaskVarsSecret(pr.Name, "resolve-t")}, writes); diff != "" {
			t.Errorf("writes (-want +got):\n%s", diff)
		}
		if r := buildevents.Redact(secrets, event.Log{Payload: "robot-user s3cret-pass"}); r.(event.Log).Payload != "((redacted)) ((redacted))" {
			t.Errorf("the follower shows %q", r.(event.Log).Payload)
		}
	})

	t.Run("made, first credentials kept", func(t *testing.T) {
		pr, tr := taskVarsRun(t, runspec.ModeResolve, "resolve-t", corev1.ConditionTrue, &list)
		b := newBackend(t)
		s := newTaskVarsSupplier(b.client, &credsLookup{values: values})
		if err := s.Observe(ctx, pr, []*v1.TaskRun{withPull(tr)}, &redact.Secrets{}); err != nil {
			t.Fatal(err)
		}
		other, tr2 := taskVarsRun(t, runspec.ModeResolve, "resolve-u", corev1.ConditionTrue, &list)
		s.creds = &credsLookup{values: map[string]any{"user": "second", "registry-password": "second-pass"}}
		if err := s.Observe(ctx, other, []*v1.TaskRun{withPull(tr2)}, &redact.Secrets{}); err != nil {
			t.Fatal(err)
		}
		want := map[string]dockerAuth{"r.example:5000/app": auth("robot-user", "s3cret-pass")}
		if diff := cmp.Diff(want, pullSecret(t, b, pr.Name+runspec.ImagePullSecretSuffix)); diff != "" {
			t.Errorf("the Secret of image pull credentials (-want +got):\n%s", diff)
		}
	})

	t.Run("a credential manager's error", func(t *testing.T) {
		pr, tr := taskVarsRun(t, runspec.ModeResolve, "resolve-t", corev1.ConditionTrue, &list)
		b := newBackend(t)
		s := newTaskVarsSupplier(b.client, &credsLookup{err: errors.New("vault: permission denied")})
		if err := s.Observe(ctx, pr, []*v1.TaskRun{withPull(tr)}, &redact.Secrets{}); err != nil {
			t.Fatal(err)
		}
		got, err := b.client.target.Kube.CoreV1().Secrets("ci").Get(ctx, runspec.TaskVarsSecret(pr.Name, "resolve-t"), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if e := string(got.Data[runspec.TaskVarsErrorKey]); !strings.Contains(e, "vault: permission denied") {
			t.Errorf("the task's error %q", e)
		}
		if _, err := b.client.target.Kube.CoreV1().Secrets("ci").Get(ctx, pr.Name+runspec.ImagePullSecretSuffix, metav1.GetOptions{}); err == nil {
			t.Error("a Secret of image pull credentials was made")
		}
	})
}
