package tektonrun

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/translate"
)

// pullPlan is a build of two tasks whose images are pulled with credentials, one of a
// private registry (a static username, a var for the password), one of Docker Hub (the
// fields of a var), and a task whose image has none.
func pullPlan() concourse.Plan {
	task := func(id, name string, source concourse.Source) concourse.Plan {
		return concourse.Plan{ID: concourse.PlanID(id), Task: &concourse.TaskPlan{Name: name, Config: &concourse.TaskConfig{
			Platform:      "linux",
			ImageResource: &concourse.ImageResource{Type: "registry-image", Source: source},
			Run:           concourse.TaskRunConfig{Path: "true"},
		}}}
	}
	steps := concourse.DoPlan{
		task("1", "private", concourse.Source{"repository": "reg.example.com:5000/team/img", "username": "robot", "password": "((reg-password))"}),
		task("2", "hub", concourse.Source{"repository": "acme/tools", "username": "((hub.user))", "password": "((hub.token))"}),
		task("3", "public", concourse.Source{"repository": "busybox"}),
	}
	return concourse.Plan{ID: "4", Do: &steps}
}

// pullValues are pullPlan's credentials: the password, and the map whose fields Docker
// Hub's are.
const (
	regPassword = "reg-pass-value"
	hubUser     = "hub-user-value"
	hubToken    = "hub-token-value"
)

// wantDockerConfig is the Docker config of pullPlan's credentials, both found.
func wantDockerConfig(t *testing.T) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(`{"auths":{
		"https://index.docker.io/v1/":{"username":"`+hubUser+`","password":"`+hubToken+`","auth":"aHViLXVzZXItdmFsdWU6aHViLXRva2VuLXZhbHVl"},
		"reg.example.com:5000/team/img":{"username":"robot","password":"`+regPassword+`","auth":"cm9ib3Q6cmVnLXBhc3MtdmFsdWU="}}}`), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// checkPullSecret checks the build's Secret of image pull credentials: a Docker config
// of want, named after the run, which owns it; the pods of the tasks whose images have
// credentials name it, then the service account's own, and the other pods none; no
// other object holds a value.
func checkPullSecret(t *testing.T, b *Backend, build *Build, want map[string]any, saSecrets ...corev1.LocalObjectReference) {
	t.Helper()
	ctx := context.Background()
	pr, err := b.client.target.Tekton.TektonV1().PipelineRuns("ci").Get(ctx, build.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	name := pr.Name + runspec.ImagePullSecretSuffix
	s, err := b.client.target.Kube.CoreV1().Secrets("ci").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Type != corev1.SecretTypeDockerConfigJson {
		t.Errorf("Secret %s of type %s", s.Name, s.Type)
	}
	var got map[string]any
	if err := json.Unmarshal(s.Data[corev1.DockerConfigJsonKey], &got); err != nil {
		t.Fatalf("the Secret's Docker config: %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the Docker config (-want +got):\n%s", diff)
	}
	if o := s.OwnerReferences; len(o) != 1 || o[0].Kind != "PipelineRun" || o[0].Name != pr.Name || o[0].UID != pr.UID {
		t.Errorf("the Secret's owners %+v, want PipelineRun %s", o, pr.Name)
	}
	pulls := map[string][]corev1.LocalObjectReference{}
	for _, spec := range pr.Spec.TaskRunSpecs {
		if spec.PodTemplate != nil && spec.PodTemplate.ImagePullSecrets != nil {
			pulls[spec.PipelineTaskName] = spec.PodTemplate.ImagePullSecrets
		}
	}
	wantRefs := append([]corev1.LocalObjectReference{{Name: name}}, saSecrets...)
	if diff := cmp.Diff(map[string][]corev1.LocalObjectReference{"task-private": wantRefs, "task-hub": wantRefs}, pulls); diff != "" {
		t.Errorf("the pods' imagePullSecrets (-want +got):\n%s", diff)
	}
	for _, obj := range clusterObjects(t, b) {
		if sec, ok := obj.(corev1.Secret); ok && (sec.Name == name || !strings.HasPrefix(sec.Name, pr.Name)) {
			continue
		}
		buf, _ := json.Marshal(obj)
		for _, v := range []string{regPassword, hubUser, hubToken} {
			if strings.Contains(string(buf), v) {
				t.Errorf("%s holds a credential's value", strings.SplitN(string(buf), `"spec"`, 2)[0])
			}
		}
	}
}

// A build run with the namespace's Secrets: the credentials of its images are read from
// them, as its steps read theirs, into its Secret of image pull credentials; the pods that
// pull with it keep the service account's imagePullSecrets.
func TestImagePullSecretFromNamespace(t *testing.T) {
	b := newBackend(t,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "app.reg-password"}, Data: map[string][]byte{"value": []byte(regPassword)}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "hub"}, Data: map[string][]byte{"user": []byte(hubUser), "token": []byte(hubToken)}},
	)
	mirror := corev1.LocalObjectReference{Name: "mirror-pull"}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}, ImagePullSecrets: []corev1.LocalObjectReference{mirror}}
	if _, err := b.client.target.Kube.CoreV1().ServiceAccounts("ci").Create(context.Background(), sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	build, err := b.Run(context.Background(), pullPlan(), credsMeta)
	if err != nil {
		t.Fatal(err)
	}
	if w := pullWarnings(build); len(w) != 0 {
		t.Errorf("warnings %q", w)
	}
	checkPullSecret(t, b, build, wantDockerConfig(t), mirror)
}

// A build whose credentials its starter supplies (the ATC's credential manager): the
// image pull credentials are looked up there, and a registry whose are not found is left
// out of the Secret, for only its steps to fail. A service account that cannot be read
// is said in a warning.
func TestImagePullSecretSupplied(t *testing.T) {
	b := newBackend(t)
	fakeOf(b.client.target.Kube).PrependReactor("get", "serviceaccounts", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("serviceaccounts"), "default", errors.New("no"))
	})
	lookup := &credsLookup{values: map[string]any{"reg-password": regPassword, "hub.user": hubUser, "hub.token": hubToken}}
	build, err := b.Run(context.Background(), pullPlan(), credsMeta, WithCredentials(lookup))
	if err != nil {
		t.Fatal(err)
	}
	if w := pullWarnings(build); len(w) != 1 || !strings.Contains(w[0], "service account default could not be read") {
		t.Errorf("warnings %q, want the service account's", w)
	}
	checkPullSecret(t, b, build, wantDockerConfig(t))

	b = newBackend(t)
	lookup = &credsLookup{values: map[string]any{"reg-password": regPassword, "hub.user": hubUser}}
	build, err = b.Run(context.Background(), pullPlan(), credsMeta, WithCredentials(lookup))
	if err != nil {
		t.Fatal(err)
	}
	if w := pullWarnings(build); len(w) != 0 {
		t.Errorf("warnings %q", w)
	}
	want := wantDockerConfig(t)
	delete(want["auths"].(map[string]any), translate.DockerHubRegistry)
	checkPullSecret(t, b, build, want)
}

// A credential that is not a string fails the build before anything is created, saying
// so without the value.
func TestImagePullSecretNotString(t *testing.T) {
	b := newBackend(t)
	lookup := &credsLookup{values: map[string]any{"reg-password": map[string]any{"secret": regPassword}, "hub.user": hubUser, "hub.token": hubToken}}
	_, err := b.Run(context.Background(), pullPlan(), credsMeta, WithCredentials(lookup))
	if err == nil || !strings.Contains(err.Error(), "the password of the credentials of image repository reg.example.com:5000/team/img") || strings.Contains(err.Error(), regPassword) {
		t.Fatalf("err = %v, want the registry's password named, not its value", err)
	}
	if objs := clusterObjects(t, b); len(objs) != 0 {
		t.Errorf("%d objects created", len(objs))
	}
}

// pullWarnings are a build's warnings about its image pulls.
func pullWarnings(b *Build) []string {
	var out []string
	for _, w := range b.Warnings {
		if strings.Contains(w, "image pull") {
			out = append(out, w)
		}
	}
	return out
}

// When the run cannot be created, both the build's Secrets go.
func TestImagePullSecretCleanUp(t *testing.T) {
	b := newBackend(t)
	fakeOf(b.client.target.Tekton).PrependReactor("create", "pipelineruns", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("refused")
	})
	lookup := &credsLookup{values: map[string]any{"reg-password": regPassword, "hub.user": hubUser, "hub.token": hubToken}}
	if _, err := b.Run(context.Background(), pullPlan(), credsMeta, WithCredentials(lookup)); err == nil {
		t.Fatal("the build started")
	}
	secrets, err := b.client.target.Kube.CoreV1().Secrets("ci").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(secrets.Items) != 0 {
		t.Errorf("%d Secrets left", len(secrets.Items))
	}
}

// A repository's ((vars)) are resolved before its registry keys the credentials; where
// two credentials give one registry, the first's are kept; one whose repository's var
// is not found is left out.
func TestImagePullSecretRepositoryVars(t *testing.T) {
	pulls := []translate.ImagePull{
		{Repository: "((registry))/built", Username: "builder", Password: "first"},
		{Repository: "((registry))/built", Username: "builder", Password: "second"},
		{Repository: "((nowhere))/built", Username: "builder", Password: "third"},
	}
	s, err := imagePullSecret(&corev1.Secret{}, pulls, &credsLookup{values: map[string]any{"registry": "reg.example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"auths":{"reg.example.com/built":{"username":"builder","password":"first","auth":"YnVpbGRlcjpmaXJzdA=="}}}`
	if got := string(s.Data[corev1.DockerConfigJsonKey]); got != want {
		t.Errorf("the Docker config %s, want %s", got, want)
	}
}
