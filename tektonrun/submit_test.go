package tektonrun

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	tektonfake "github.com/tektoncd/pipeline/pkg/client/clientset/versioned/fake"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/translate"
)

func secret(name string, keys ...string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ci"}, Data: map[string][]byte{}}
	for _, k := range keys {
		s.Data[k] = []byte("x")
	}
	return s
}

// taskPlan is a one-task build whose params read two credentials.
func taskPlan() concourse.Plan {
	return concourse.Plan{ID: "1", Task: &concourse.TaskPlan{
		Name: "unit",
		Config: &concourse.TaskConfig{
			Platform:  "linux",
			RootfsURI: "docker:///busybox",
			Run:       concourse.TaskRunConfig{Path: "true"},
			Params:    concourse.TaskEnv{"TOKEN": "((token))", "USER": "((db.user))"},
		},
	}}
}

func newBackend(t *testing.T, objects ...*corev1.Secret) *Backend {
	t.Helper()
	kube := fake.NewClientset()
	for _, o := range objects {
		if _, err := kube.CoreV1().Secrets("ci").Create(context.Background(), o, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	tekton := tektonfake.NewSimpleClientset()
	// The fake apiserver gives objects no UID; owner references need one.
	tekton.PrependReactor("create", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if o, ok := a.(k8stesting.CreateAction).GetObject().(metav1.Object); ok && o.GetUID() == "" {
			o.SetUID(types.UID("uid-" + o.GetName()))
		}
		return false, nil, nil
	})
	b := NewBackend(NewTargetFromClients("ci", kube, tekton), translate.Options{})
	t.Cleanup(b.Close)
	return b
}

func TestSubmitCredentials(t *testing.T) {
	tests := []struct {
		name    string
		secrets []*corev1.Secret
		want    []string
	}{
		{
			name:    "all there, pipeline-scoped first",
			secrets: []*corev1.Secret{secret("app.token", "value"), secret("db", "user")},
		},
		{
			name:    "team-scoped",
			secrets: []*corev1.Secret{secret("token", "value"), secret("app.db", "user", "password")},
		},
		{
			name:    "a field in a value Secret",
			secrets: []*corev1.Secret{secret("token", "value"), secret("db", "value")},
		},
		{
			name: "none",
			want: []string{
				"((db.user)): no Secret app.db or db (create one, with a key `value`)",
				"((token)): no Secret app.token or token (create one, with a key `value`)",
			},
		},
		{
			name:    "the pipeline's Secret lacks the key, though the team's has it",
			secrets: []*corev1.Secret{secret("token", "value"), secret("app.db", "password"), secret("db", "user")},
			want:    []string{`((db.user)): Secret app.db has no key "user"`},
		},
		{
			name:    "empty",
			secrets: []*corev1.Secret{secret("token"), secret("db", "user")},
			want:    []string{"((token)): Secret token is empty (give it a key `value`)"},
		},
		{
			// The runner passes an empty Secret over, as it does a missing one (an
			// optional Secret volume of either is an empty directory).
			name:    "the pipeline's Secret is empty, the team's has the value",
			secrets: []*corev1.Secret{secret("app.token"), secret("token", "value"), secret("db", "user")},
		},
		{
			name:    "both empty",
			secrets: []*corev1.Secret{secret("app.token"), secret("token"), secret("db", "user")},
			want:    []string{"((token)): Secret app.token is empty (give it a key `value`)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBackend(t, tt.secrets...)
			_, err := b.Run(context.Background(), taskPlan(), BuildMeta{Pipeline: "app", Job: "unit", Build: "1"})
			var missing *MissingCredentialsError
			switch {
			case tt.want == nil && err != nil:
				t.Fatalf("Run: %v", err)
			case tt.want != nil && !errors.As(err, &missing):
				t.Fatalf("Run: %v, want missing credentials", err)
			case tt.want != nil:
				if diff := cmp.Diff(tt.want, missing.Problems); diff != "" {
					t.Errorf("problems (-want +got):\n%s", diff)
				}
				if !strings.Contains(err.Error(), "namespace ci") {
					t.Errorf("the error does not name the namespace: %v", err)
				}
				runs, _ := b.client.target.Tekton.TektonV1().PipelineRuns("ci").List(context.Background(), metav1.ListOptions{})
				if len(runs.Items) != 0 {
					t.Errorf("a build missing credentials was created")
				}
			}
		})
	}
}

func TestSubmitIsIdempotent(t *testing.T) {
	b := newBackend(t, secret("token", "value"), secret("db", "user"))
	ctx := context.Background()
	meta := BuildMeta{Pipeline: "app", Job: "unit", Build: "7"}
	first, err := b.Run(ctx, taskPlan(), meta)
	if err != nil {
		t.Fatal(err)
	}
	second, err := b.Run(ctx, taskPlan(), meta)
	if err != nil {
		t.Fatal(err)
	}
	if first.Name != second.Name || first.Name != "app-unit-7" {
		t.Errorf("names %q and %q, want app-unit-7 twice", first.Name, second.Name)
	}
	tekton := b.client.target.Tekton.TektonV1()
	runs, _ := tekton.PipelineRuns("ci").List(ctx, metav1.ListOptions{})
	pipelines, _ := tekton.Pipelines("ci").List(ctx, metav1.ListOptions{})
	if len(runs.Items) != 1 || len(pipelines.Items) != 1 {
		t.Fatalf("%d runs and %d pipelines, want 1 each", len(runs.Items), len(pipelines.Items))
	}
	run := runs.Items[0]
	for k, want := range map[string]string{runspec.LabelTeam: "main", runspec.LabelPipeline: "app", runspec.LabelJob: "unit", runspec.LabelBuild: "7", runspec.LabelManagedBy: runspec.ManagedBy} {
		if run.Labels[k] != want {
			t.Errorf("label %s = %q, want %q", k, run.Labels[k], want)
		}
	}
	if w := run.Spec.Workspaces; len(w) != 1 || w[0].PersistentVolumeClaim == nil {
		t.Errorf("the build volume is not a claim of its own: %+v", w)
	}
	next, err := b.client.NextBuild(ctx, "main", "app", "unit")
	if err != nil || next != 8 {
		t.Errorf("NextBuild = %d, %v; want 8", next, err)
	}
	other, err := b.client.NextBuild(ctx, "main", "app", "other")
	if err != nil || other != 1 {
		t.Errorf("NextBuild of another job = %d, %v; want 1", other, err)
	}
}

func TestRunNamesTheBuild(t *testing.T) {
	b := newBackend(t, secret("token", "value"), secret("db", "user"))
	ctx := context.Background()
	// A one-off build: team, pipeline and job default, the build is the next number.
	first, err := b.Run(ctx, taskPlan(), BuildMeta{})
	if err != nil {
		t.Fatal(err)
	}
	want := BuildMeta{Team: "main", Pipeline: "one-off", Job: "build", Build: "1"}
	if !cmp.Equal(first.Meta, want) || first.Existed {
		t.Errorf("first build %+v (existed %v), want %+v", first.Meta, first.Existed, want)
	}
	second, err := b.Run(ctx, taskPlan(), BuildMeta{})
	if err != nil {
		t.Fatal(err)
	}
	if second.Meta.Build != "2" || second.Name == first.Name {
		t.Errorf("second build %+v named %s, want build 2 of its own", second.Meta, second.Name)
	}
	again, err := b.Run(ctx, taskPlan(), BuildMeta{Build: "2"})
	if err != nil {
		t.Fatal(err)
	}
	if !again.Existed || again.Name != second.Name {
		t.Errorf("running build 2 again: %+v, want it attached to %s", again, second.Name)
	}
	runs, _ := b.client.target.Tekton.TektonV1().PipelineRuns("ci").List(ctx, metav1.ListOptions{})
	for _, r := range runs.Items {
		if r.Annotations[runspec.AnnotationRunnerImage] != translate.DefaultRunnerImage {
			t.Errorf("%s: runner image annotation %q, want %q", r.Name, r.Annotations[runspec.AnnotationRunnerImage], translate.DefaultRunnerImage)
		}
	}
}

// A PipelineRun found under a build's name that is another build's (made by hand, or by
// an older version whose names could collide) is never attached to.
func TestRunRefusesAnotherBuildsRun(t *testing.T) {
	b := newBackend(t, secret("token", "value"), secret("db", "user"))
	ctx := context.Background()
	first, err := b.Run(ctx, taskPlan(), BuildMeta{Pipeline: "app", Job: "unit", Build: "1"})
	if err != nil {
		t.Fatal(err)
	}
	runs := b.client.target.Tekton.TektonV1().PipelineRuns("ci")
	pr, err := runs.Get(ctx, first.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pr.Annotations[runspec.LabelJob] = "unit.test"
	if _, err := runs.Update(ctx, pr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = b.Run(ctx, taskPlan(), BuildMeta{Pipeline: "app", Job: "unit", Build: "1"})
	if err == nil || !strings.Contains(err.Error(), "is not this build") {
		t.Fatalf("Run attached to another job's build: %v", err)
	}
}

// A build that wants user namespaces is refused at once when no node supports them, and
// runs where one does.
func TestRunChecksUserNamespaces(t *testing.T) {
	ctx := context.Background()
	for _, supported := range []bool{false, true} {
		b := newBackend(t, secret("token", "value"), secret("db", "user"))
		b.defaults.UserNamespaces = true
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}
		node.Status.RuntimeHandlers = []corev1.NodeRuntimeHandler{{Features: &corev1.NodeRuntimeHandlerFeatures{UserNamespaces: &supported}}}
		if _, err := b.client.target.Kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		_, err := b.Run(ctx, taskPlan(), BuildMeta{Pipeline: "app", Job: "unit", Build: "1"})
		if supported && err != nil {
			t.Errorf("supported: %v", err)
		}
		if !supported && (err == nil || !strings.Contains(err.Error(), "user namespaces")) {
			t.Errorf("unsupported: err = %v, want a refusal", err)
		}
	}
}

// A build whose pods mount the runner's image as a volume is refused at once when no
// node can mount images (a kubelet older than 1.33, containerd older than 2.1, CRI-O
// older than 1.31), and runs where one may, or where the nodes say nothing it knows.
func TestRunChecksImageVolumes(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		nodes [][2]string // kubelet, runtime
		ok    bool
	}{
		{[][2]string{{"v1.36.3", "containerd://1.6.20~ds1"}}, false},
		{[][2]string{{"v1.36.3", "containerd://2.0.5"}}, false},
		{[][2]string{{"v1.36.3", "containerd://v1.7.0"}}, false},
		{[][2]string{{"v1.36.3", "containerd://2.1.0"}}, true},
		{[][2]string{{"v1.36.3", "containerd://2.3.7"}}, true},
		{[][2]string{{"v1.36.3", "cri-o://1.30.2"}}, false},
		{[][2]string{{"v1.36.3", "cri-o://1.31.0"}}, true},
		{[][2]string{{"v1.32.4", "containerd://2.3.7"}}, false},
		{[][2]string{{"v1.36.3", "containerd://1.7.2"}, {"v1.36.3", "containerd://2.2.0"}}, true},
		{[][2]string{{"v1.36.3", "docker://28.1.0"}}, true},
		{[][2]string{{"v1.36.3", "containerd://dev"}}, true},
		{nil, true},
	} {
		b := newBackend(t, secret("token", "value"), secret("db", "user"))
		b.defaults.RunnerImageVolume = true
		for i, n := range tt.nodes {
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n%d", i)}}
			node.Status.NodeInfo.KubeletVersion, node.Status.NodeInfo.ContainerRuntimeVersion = n[0], n[1]
			if _, err := b.client.target.Kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		_, err := b.Run(ctx, taskPlan(), BuildMeta{Pipeline: "app", Job: "unit", Build: "1"})
		if tt.ok && err != nil {
			t.Errorf("%v: %v", tt.nodes, err)
		}
		if !tt.ok && (err == nil || !strings.Contains(err.Error(), "--runner-image-volume") || !strings.Contains(err.Error(), tt.nodes[0][1])) {
			t.Errorf("%v: err = %v, want a refusal naming the runtime", tt.nodes, err)
		}
		b.defaults.RunnerImageVolume = false
		if _, err := b.Run(ctx, taskPlan(), BuildMeta{Pipeline: "app", Job: "unit", Build: "2"}); err != nil {
			t.Errorf("%v, the runner copied: %v", tt.nodes, err)
		}
	}
}
