package tektonrun

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/concourse-tekton/concourse-tekton/concourse/event"
	"github.com/concourse-tekton/concourse-tekton/tektonrun/buildevents"
)

// Every credential the build uses is redacted in every step's events (the run started
// through Run records them, names only); a key no var reads is not a credential.
func TestBuildSecretsRedactEveryStep(t *testing.T) {
	token := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "token", Namespace: "ci"},
		Data: map[string][]byte{"value": []byte("s3cret-token")}}
	db := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "app.db", Namespace: "ci"},
		Data: map[string][]byte{"user": []byte("db-admin"), "password": []byte("not-read-by-the-build")}}
	b := newBackend(t, token, db)
	ctx := context.Background()
	build, err := b.Run(ctx, taskPlan(), BuildMeta{Pipeline: "app", Job: "unit", Build: "1"})
	if err != nil {
		t.Fatal(err)
	}
	pr, err := b.client.target.Tekton.TektonV1().PipelineRuns("ci").Get(ctx, build.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"s3cret-token", "db-admin"} {
		for k, a := range pr.Annotations {
			if strings.Contains(a, v) {
				t.Errorf("annotation %s holds a credential's value", k)
			}
		}
	}
	secrets, err := b.client.buildSecrets(ctx, pr)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		in   event.Event
		want event.Event
	}{
		{
			event.Log{Payload: "token s3cret-token user db-admin password not-read-by-the-build\n"},
			event.Log{Payload: "token ((redacted)) user ((redacted)) password not-read-by-the-build\n"},
		},
		{event.Error{Message: "failed with s3cret-token"}, event.Error{Message: "failed with ((redacted))"}},
		{event.FinishTask{ExitStatus: 1}, event.FinishTask{ExitStatus: 1}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, buildevents.Redact(secrets, tt.in)); diff != "" {
			t.Errorf("redactEvent (-want +got):\n%s", diff)
		}
	}
}

// A build without credentials needs no Secret, and hides nothing.
func TestBuildSecretsNone(t *testing.T) {
	b := newBackend(t)
	secrets, err := b.client.buildSecrets(context.Background(), &v1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ci"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := buildevents.Redact(secrets, event.Log{Payload: "plain"}); got != (event.Log{Payload: "plain"}) {
		t.Errorf("got %#v", got)
	}
}
