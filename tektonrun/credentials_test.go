package tektonrun

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	tektonfake "github.com/tektoncd/pipeline/pkg/client/clientset/versioned/fake"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/event"
	"github.com/concourse-tekton/concourse-tekton/concourse/vars"
	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/tektonrun/buildevents"
	"github.com/concourse-tekton/concourse-tekton/translate"
)

// credsLookup is a credential manager of the test: values by reference, as written
// between the parentheses (fields walked already, as Concourse's are); an error for
// every var when err is set. It records what it was asked.
type credsLookup struct {
	values map[string]any
	err    error

	mu    sync.Mutex
	asked []string
}

var _ vars.Variables = (*credsLookup)(nil)

func (l *credsLookup) Get(ref vars.Reference) (any, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.asked = append(l.asked, ref.String())
	if l.err != nil {
		return nil, false, l.err
	}
	v, ok := l.values[ref.String()]
	return v, ok, nil
}

// credsPlan is a one-task build reading a credential of the credential manager, a field of
// one, and one of a var source, and a local var, which is no credential.
func credsPlan() concourse.Plan {
	p := taskPlan()
	p.Task.Config.Params = concourse.TaskEnv{"TOKEN": "((token))", "USER": "((db.user))", "API": "((dm:api))", "LOCAL": "((.:local))"}
	return p
}

// allValues are credsPlan's values, one of them a map (from YAML) and one a number.
func allValues() map[string]any {
	return map[string]any{
		"token":   "t0ken-value",
		"db.user": "db-admin",
		"dm:api":  map[any]any{"key": "api-key-value", "port": 8443},
	}
}

var credsMeta = BuildMeta{Pipeline: "app", Job: "unit", Build: "1"}

// supplied starts credsPlan with credentials from lookup.
func supplied(t *testing.T, b *Backend, lookup *credsLookup) (*Build, error) {
	t.Helper()
	return b.Run(context.Background(), credsPlan(), credsMeta, WithCredentials(lookup))
}

// The build's Secret holds exactly the values resolved, each reference's as JSON, is
// named and labelled after the run, which owns it; no value is in any other object; the
// namespace's Secrets are not read; the values are redacted in the build's events.
func TestSuppliedCredentials(t *testing.T) {
	b := newBackend(t)
	lookup := &credsLookup{values: allValues()}
	build, err := supplied(t, b, lookup)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if diff := cmp.Diff([]string{"db.user", "dm:api", "token"}, lookup.asked); diff != "" {
		t.Errorf("vars looked up (-want +got):\n%s", diff)
	}
	pr, err := b.client.target.Tekton.TektonV1().PipelineRuns("ci").Get(ctx, build.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	secrets, err := b.client.target.Kube.CoreV1().Secrets("ci").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(secrets.Items) != 1 {
		t.Fatalf("%d Secrets, want the build's", len(secrets.Items))
	}
	s := secrets.Items[0]
	want := map[string][]byte{
		runspec.CredentialKey("token"):   []byte(`"t0ken-value"`),
		runspec.CredentialKey("db.user"): []byte(`"db-admin"`),
		runspec.CredentialKey("dm:api"):  []byte(`{"key":"api-key-value","port":8443}`),
	}
	if diff := cmp.Diff(want, s.Data); diff != "" {
		t.Errorf("the Secret's data (-want +got):\n%s", diff)
	}
	if s.Name != pr.Name || s.Type != corev1.SecretTypeOpaque {
		t.Errorf("Secret %s of type %s, want %s, Opaque", s.Name, s.Type, pr.Name)
	}
	if diff := cmp.Diff(pr.Labels, s.Labels); diff != "" {
		t.Errorf("the Secret's labels, not the run's (-run +secret):\n%s", diff)
	}
	if o := s.OwnerReferences; len(o) != 1 || o[0].Kind != "PipelineRun" || o[0].Name != pr.Name || o[0].UID != pr.UID || pr.UID == "" {
		t.Errorf("the Secret's owners %+v, want PipelineRun %s (%s)", o, pr.Name, pr.UID)
	}

	for _, obj := range clusterObjects(t, b) {
		buf, _ := json.Marshal(obj)
		for _, v := range []string{"t0ken-value", "db-admin", "api-key-value", "8443"} {
			if strings.Contains(string(buf), v) {
				t.Errorf("%s holds a credential's value", strings.SplitN(string(buf), `"spec"`, 2)[0])
			}
		}
	}

	hidden, err := b.client.buildSecrets(ctx, pr)
	if err != nil {
		t.Fatal(err)
	}
	got := buildevents.Redact(hidden, event.Log{Payload: "t0ken-value db-admin api-key-value 8443"})
	if diff := cmp.Diff(event.Log{Payload: "((redacted)) ((redacted)) ((redacted)) 8443"}, got); diff != "" {
		t.Errorf("redacted (-want +got):\n%s", diff)
	}

	// Attaching to the build (the ATC restarted) looks nothing up and changes nothing.
	again, err := supplied(t, b, &credsLookup{})
	if err != nil || !again.Existed {
		t.Fatalf("attaching: %+v, %v", again, err)
	}
	after, err := b.client.target.Kube.CoreV1().Secrets("ci").Get(ctx, s.Name, metav1.GetOptions{})
	if err != nil || !cmp.Equal(after.Data, s.Data) {
		t.Errorf("the Secret after attaching: %v, %v", after, err)
	}
}

// A var the credential manager does not have fails nothing at the start: the build runs,
// its Secret without that var, and the step that needs it errors when it runs, as
// Concourse looks a step's vars up. An error of the credential manager fails the build
// before anything is created, in Concourse's words.
func TestSuppliedCredentialsMissing(t *testing.T) {
	values := allValues()
	delete(values, "db.user")
	delete(values, "dm:api")
	b := newBackend(t)
	build, err := supplied(t, b, &credsLookup{values: values})
	if err != nil {
		t.Fatalf("a build with undefined vars: %v", err)
	}
	s, err := b.client.target.Kube.CoreV1().Secrets("ci").Get(context.Background(), build.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{runspec.CredentialKey("token")}, slices.Sorted(maps.Keys(s.Data))); diff != "" {
		t.Errorf("the Secret's keys (-want +got):\n%s", diff)
	}

	b = newBackend(t)
	_, err = supplied(t, b, &credsLookup{err: vars.MissingFieldError{Name: "db.user", Field: "user"}})
	if want := "missing field 'user' in var: db.user"; err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
	if objs := clusterObjects(t, b); len(objs) != 0 {
		t.Errorf("%d objects created", len(objs))
	}
}

// When the run cannot be created, or cannot be given its Secret, the Secret (and the run)
// are deleted: no value is left behind without an owner.
func TestSuppliedCredentialsCleanUp(t *testing.T) {
	tests := []struct {
		name    string
		fake    func(b *Backend) *k8stesting.Fake
		verb    string
		kind    string
		wantErr string
	}{
		{"the run is refused", func(b *Backend) *k8stesting.Fake { return fakeOf(b.client.target.Tekton) }, "create", "pipelineruns", "creating PipelineRun"},
		{"the Secret cannot be owned", func(b *Backend) *k8stesting.Fake { return fakeOf(b.client.target.Kube) }, "patch", "secrets", "giving Secret"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBackend(t)
			tt.fake(b).PrependReactor(tt.verb, tt.kind, func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, errors.New("refused")
			})
			_, err := supplied(t, b, &credsLookup{values: allValues()})
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			ctx := context.Background()
			secrets, _ := b.client.target.Kube.CoreV1().Secrets("ci").List(ctx, metav1.ListOptions{})
			runs, _ := b.client.target.Tekton.TektonV1().PipelineRuns("ci").List(ctx, metav1.ListOptions{})
			if len(secrets.Items) != 0 || len(runs.Items) != 0 {
				t.Errorf("%d Secrets and %d runs left", len(secrets.Items), len(runs.Items))
			}
		})
	}
}

// A Secret of the build left by an earlier attempt to start it is replaced, values and
// owner; a Secret of that name that is not the build's is left alone, and the build
// refused.
func TestSuppliedCredentialsExistingSecret(t *testing.T) {
	stale := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "app-unit-1", Namespace: "ci",
			Annotations:     map[string]string{runspec.LabelTeam: "main", runspec.LabelPipeline: "app", runspec.LabelJob: "unit", runspec.LabelBuild: "1"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "tekton.dev/v1", Kind: "PipelineRun", Name: "app-unit-1", UID: "gone"}}},
		Data: map[string][]byte{"old": []byte(`"old-value"`)},
	}
	b := newBackend(t, stale)
	build, err := supplied(t, b, &credsLookup{values: allValues()})
	if err != nil {
		t.Fatal(err)
	}
	s, err := b.client.target.Kube.CoreV1().Secrets("ci").Get(context.Background(), build.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, old := s.Data["old"]; old || len(s.Data) != 3 {
		t.Errorf("the Secret's keys: %v", s.Data)
	}
	if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].UID == "gone" {
		t.Errorf("the Secret's owners: %+v", s.OwnerReferences)
	}

	foreign := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "app-unit-1", Namespace: "ci"}, Data: map[string][]byte{"value": []byte("theirs")}}
	b = newBackend(t, foreign)
	_, err = supplied(t, b, &credsLookup{values: allValues()})
	if err == nil || !strings.Contains(err.Error(), "Secret app-unit-1 is not this build") {
		t.Fatalf("err = %v, want a refusal", err)
	}
	s, _ = b.client.target.Kube.CoreV1().Secrets("ci").Get(context.Background(), "app-unit-1", metav1.GetOptions{})
	runs, _ := b.client.target.Tekton.TektonV1().PipelineRuns("ci").List(context.Background(), metav1.ListOptions{})
	if string(s.Data["value"]) != "theirs" || len(runs.Items) != 0 {
		t.Errorf("the other Secret was changed (%v), or a run created (%d)", s.Data, len(runs.Items))
	}
}

// A build compiled for supplied credentials is not started without them.
func TestSubmitWantsTheSuppliedCredentials(t *testing.T) {
	b := newBackend(t)
	opts := translate.Options{Pipeline: "app", Job: "unit", SuppliedCredentials: true}
	r, err := translate.Translate(credsPlan(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.client.Submit(context.Background(), r, nil); err == nil || !strings.Contains(err.Error(), "none were given") {
		t.Errorf("err = %v", err)
	}
}

// fakeOf is a fake clientset's Fake, for its reactors.
func fakeOf(c any) *k8stesting.Fake {
	switch f := c.(type) {
	case *tektonfake.Clientset:
		return &f.Fake
	case *fake.Clientset:
		return &f.Fake
	}
	panic("not a fake clientset")
}

// clusterObjects are the objects of the fake cluster's namespace that a build creates.
func clusterObjects(t *testing.T, b *Backend) []any {
	t.Helper()
	ctx := context.Background()
	tekton := b.client.target.Tekton.TektonV1()
	var out []any
	tasks, err1 := tekton.Tasks("ci").List(ctx, metav1.ListOptions{})
	pipelines, err2 := tekton.Pipelines("ci").List(ctx, metav1.ListOptions{})
	runs, err3 := tekton.PipelineRuns("ci").List(ctx, metav1.ListOptions{})
	claims, err4 := b.client.target.Kube.CoreV1().PersistentVolumeClaims("ci").List(ctx, metav1.ListOptions{})
	secrets, err5 := b.client.target.Kube.CoreV1().Secrets("ci").List(ctx, metav1.ListOptions{})
	if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
		t.Fatal(err)
	}
	for _, o := range tasks.Items {
		out = append(out, o)
	}
	for _, o := range pipelines.Items {
		out = append(out, o)
	}
	for _, o := range runs.Items {
		out = append(out, o)
	}
	for _, o := range claims.Items {
		out = append(out, o)
	}
	for _, o := range secrets.Items {
		// Only its names: its data is the values.
		out = append(out, o.ObjectMeta)
	}
	return out
}
