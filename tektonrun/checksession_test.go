package tektonrun

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/event"
	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/tektonrun/buildevents"
)

func sessionCheckPlan() concourse.Plan {
	return concourse.Plan{ID: "5", Check: &concourse.CheckPlan{Name: "repo", Type: "git", Resource: "repo",
		Source: concourse.Source{"uri": "https://ci:((token))@git.example.com/r.git"}, TypeImage: concourse.TypeImage{BaseType: "git"}}}
}

var sessionMeta = BuildMeta{Team: "main", Pipeline: "app", Job: "check-repo", Build: "9", Check: true}

// TestPrepareCheck: a check build compiled for a check session creates nothing on the
// cluster; its request carries the spec, the build's context and the credentials' values,
// which no object of the cluster and no error holds.
func TestPrepareCheck(t *testing.T) {
	b := newBackend(t)
	lookup := &credsLookup{values: map[string]any{"token": "s3cr3t-t0ken"}}
	sc, err := b.PrepareCheck(context.Background(), sessionCheckPlan(), sessionMeta, lookup)
	if err != nil {
		t.Fatal(err)
	}
	var req runspec.SessionRequest
	if err := json.Unmarshal(sc.request, &req); err != nil {
		t.Fatal(err)
	}
	if req.Spec.Mode != runspec.ModeCheck || req.Spec.PlanID != "5" || req.Spec.Build.Name != "9" {
		t.Errorf("request spec %+v; want the check of plan 5 of build 9", req.Spec)
	}
	if diff := cmp.Diff(map[string]json.RawMessage{runspec.CredentialKey("token"): json.RawMessage(`"s3cr3t-t0ken"`)}, req.Credentials); diff != "" {
		t.Errorf("request credentials (-want +got):\n%s", diff)
	}
	if strings.Contains(sc.session.Pod.String(), "s3cr3t") || strings.Contains(sc.session.Pod.Annotations[runspec.AnnotationSessionSpec], "s3cr3t") {
		t.Error("the session's pod holds the credential's value")
	}
	if got := sc.NewName(); !strings.HasPrefix(got, "app-check-repo-session-") || len(got) != len("app-check-repo-session-")+8 || got == sc.NewName() {
		t.Errorf("new session pod name %q; want app-check-repo-session-<8 hex>, another each time", got)
	}
	kube := b.Client().Target().Kube
	pods, err := kube.CoreV1().Pods("ci").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	secrets, err := kube.CoreV1().Secrets("ci").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	prs, err := b.Client().Target().Tekton.TektonV1().PipelineRuns("ci").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items)+len(secrets.Items)+len(prs.Items) != 0 {
		t.Errorf("%d pods, %d Secrets, %d PipelineRuns made; want none before the check runs", len(pods.Items), len(secrets.Items), len(prs.Items))
	}
	// The log's lines and the end are redacted with the build's credentials.
	var got []string
	log := &lineWriter{emit: func(line string) error {
		e, ok := buildevents.Redact(sc.secrets, buildevents.SessionLog(sc.step, req.Spec, 0, line, 1).Event).(event.Log)
		if !ok || e.Origin.ID != "5" || e.Origin.Source != event.OriginSourceStderr {
			t.Errorf("log event %+v; want the check's stderr", e)
		}
		got = append(got, strings.TrimSpace(e.Payload))
		return nil
	}}
	if _, err := log.Write([]byte("cloning https://ci:s3cr3t-t0ken@git\npartial")); err != nil {
		t.Fatal(err)
	}
	if err := log.Flush(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"cloning https://ci:((redacted))@git", "partial"}, got); diff != "" {
		t.Errorf("log events (-want +got):\n%s", diff)
	}
}

// TestPrepareCheckRefuses: what cannot run in a check session says so with
// ErrNoSession, for the check to run as a build of its own.
func TestPrepareCheckRefuses(t *testing.T) {
	b := newBackend(t)
	lookup := &credsLookup{values: map[string]any{"token": "t"}}
	if _, err := b.PrepareCheck(context.Background(), sessionCheckPlan(), sessionMeta, nil); !errors.Is(err, ErrNoSession) {
		t.Errorf("without supplied credentials: %v; want ErrNoSession", err)
	}
	job := sessionMeta
	job.Check = false
	if _, err := b.PrepareCheck(context.Background(), sessionCheckPlan(), job, lookup); !errors.Is(err, ErrNoSession) {
		t.Errorf("a job's build: %v; want ErrNoSession", err)
	}
	two := concourse.Plan{ID: "1", Do: &concourse.DoPlan{sessionCheckPlan(), sessionCheckPlan()}}
	(*two.Do)[1].ID = "6"
	if _, err := b.PrepareCheck(context.Background(), two, sessionMeta, lookup); !errors.Is(err, ErrNoSession) {
		t.Errorf("two steps: %v; want ErrNoSession", err)
	}
}

// TestLineWriter: a long line without a newline is cut into events of maxLogLine.
func TestLineWriter(t *testing.T) {
	var got []int
	w := &lineWriter{emit: func(l string) error { got = append(got, len(l)); return nil }}
	if _, err := w.Write([]byte(strings.Repeat("x", maxLogLine+10) + "\nab\n")); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{maxLogLine, 11, 3}, got); diff != "" {
		t.Errorf("line lengths (-want +got):\n%s", diff)
	}
}
