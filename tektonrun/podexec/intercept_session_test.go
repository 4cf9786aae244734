package podexec

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	tektonfake "github.com/tektoncd/pipeline/pkg/client/clientset/versioned/fake"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// stepSpec is the runner spec of a step named name of the given mode, as a TaskRun's
// param carries it.
func stepSpec(t *testing.T, mode runspec.Mode, name string) string {
	t.Helper()
	s := runspec.Spec{Mode: mode, PlanID: "p-" + name, Name: name}
	switch mode {
	case runspec.ModeTask:
		s.Task = &runspec.Task{File: "repo/task.yml"}
	case runspec.ModeResolve:
		s.Resolve = &runspec.Resolve{TaskPlanID: "p-test", File: "repo/task.yml"}
	default:
		t.Fatalf("no spec for mode %s", mode)
	}
	raw, err := s.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// interceptCluster is a client of namespace "ci" of a fake cluster that grants
// pods/exec, holding build b-1's steps:
//
//   - b-1-test, a task whose pod runs, the runner installed;
//   - b-1-resolve, a resolve step (not interceptable) whose pod is there;
//   - b-1-gone, a task whose pod is gone;
//   - b-1-pending, a task with no pod yet;
//   - other, a TaskRun with a pod that is not labelled as ours.
func interceptCluster(t *testing.T) *Pods {
	t.Helper()
	target := &Pods{Namespace: "ci", Kube: kubefake.NewClientset(), Tekton: tektonfake.NewSimpleClientset()}
	ctx := context.Background()
	taskRun := func(name string, mode runspec.Mode, step, pod string, ours bool) {
		labels := map[string]string{labelPipelineRun: "b-1", runspec.LabelBuild: "1"}
		if ours {
			labels[runspec.LabelManagedBy] = runspec.ManagedBy
		}
		tr := &v1.TaskRun{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ci", Labels: labels, Annotations: map[string]string{
				runspec.LabelTeam: "main", runspec.LabelPipeline: "app", runspec.LabelJob: "unit", runspec.LabelBuild: "1",
			}},
			Spec:   v1.TaskRunSpec{Params: v1.Params{{Name: runspec.ParamSpec, Value: *v1.NewStructuredValues(stepSpec(t, mode, step))}}},
			Status: v1.TaskRunStatus{TaskRunStatusFields: v1.TaskRunStatusFields{PodName: pod}},
		}
		if _, err := target.Tekton.TektonV1().TaskRuns("ci").Create(ctx, tr, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pod := func(name string) {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ci", Labels: map[string]string{labelPipelineRun: "b-1", runspec.LabelBuild: "1"}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{
				{Name: "step-" + runspec.StepInstall, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}},
				{Name: runspec.StepContainer, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
			}},
		}
		if _, err := target.Kube.CoreV1().Pods("ci").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	taskRun("other", runspec.ModeTask, "test", "other-pod", false)
	pod("other-pod")
	taskRun("b-1-test", runspec.ModeTask, "test", "b-1-test-pod", true)
	pod("b-1-test-pod")
	taskRun("b-1-resolve", runspec.ModeResolve, "resolve", "b-1-resolve-pod", true)
	pod("b-1-resolve-pod")
	taskRun("b-1-gone", runspec.ModeTask, "gone", "b-1-gone-pod", true)
	taskRun("b-1-pending", runspec.ModeTask, "pending", "", true)
	return target
}

// TestContainerOf checks that a TaskRun of ours with a pod is its step's container, and
// that every TaskRun that is not an interceptable step with a pod is not found.
func TestContainerOf(t *testing.T) {
	c := interceptCluster(t)
	got, err := c.ContainerOf(context.Background(), "b-1-test")
	if err != nil {
		t.Fatal(err)
	}
	want := Container{
		Run: "b-1", Team: "main", Pipeline: "app", Job: "unit", Build: "1",
		Step: "test", Type: "task", PlanID: "p-test", TaskRun: "b-1-test", Pod: "b-1-test-pod", Running: true,
		spec: stepSpec(t, runspec.ModeTask, "test"),
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(Container{})); diff != "" {
		t.Errorf("ContainerOf (-want +got):\n%s", diff)
	}

	for _, name := range []string{"missing", "other", "b-1-pending", "b-1-gone", "b-1-resolve"} {
		t.Run(name, func(t *testing.T) {
			ctr, err := c.ContainerOf(context.Background(), name)
			if !apierrors.IsNotFound(err) {
				t.Errorf("ContainerOf = %+v, %v; want an error IsNotFound recognizes", ctr, err)
			}
		})
	}
}

// TestContainerHandles checks that the handles are our TaskRuns whose pods are there,
// sorted, whatever their kind.
func TestContainerHandles(t *testing.T) {
	got, err := interceptCluster(t).ContainerHandles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"b-1-resolve", "b-1-test"}, got); diff != "" {
		t.Errorf("ContainerHandles (-want +got):\n%s", diff)
	}
}

// exitStatus is the error of a command that exited with a status, as an exec's is.
type exitStatus int

func (e exitStatus) Error() string {
	return "command terminated with exit code " + strconv.Itoa(int(e))
}

func (e exitStatus) ExitStatus() int { return int(e) }

// execCall is a command a fake ran in a pod's container.
type execCall struct {
	Namespace, Pod, Container string
	Command                   []string
}

// fakeExecer answers every exec with out and err, and records it.
type fakeExecer struct {
	out   string
	err   error
	calls []execCall
}

func (e *fakeExecer) Exec(_ context.Context, namespace, pod, container string, command []string) (string, error) {
	e.calls = append(e.calls, execCall{namespace, pod, container, command})
	return e.out, e.err
}

// fakeStreamer runs stream for every session and records it. A session's goroutine
// writes calls before its Wait returns: read them after Wait.
type fakeStreamer struct {
	stream func(ctx context.Context) error
	calls  []execCall
}

func (s *fakeStreamer) Stream(ctx context.Context, namespace, pod, container string, command []string, _ remotecommand.StreamOptions) error {
	s.calls = append(s.calls, execCall{namespace, pod, container, command})
	return s.stream(ctx)
}

var (
	_ Execer   = (*fakeExecer)(nil)
	_ Streamer = (*fakeStreamer)(nil)
)

// interceptClient is a client of interceptCluster's that execs and streams with the
// fakes, and its running step b-1-test.
func interceptClient(t *testing.T, exec *fakeExecer, stream *fakeStreamer) (*Pods, Container) {
	t.Helper()
	c := interceptCluster(t)
	c.Exec, c.Stream = exec, stream
	ctr, err := c.ContainerOf(context.Background(), "b-1-test")
	if err != nil {
		t.Fatal(err)
	}
	return c, ctr
}

// TestStartInterceptNotFound checks that a command the runner's lookup does not find
// (exit 127) is an *ExecutableNotFoundError with the runner's message (a standard one
// when the runner's is not a line of text), and that no session is started.
func TestStartInterceptNotFound(t *testing.T) {
	for _, tc := range []struct {
		name, out, want string
	}{
		{"runner's", "no such file: /bin/x\n", "no such file: /bin/x"},
		{"empty", "", "executable file not found in $PATH: bash"},
		{"garbled", strings.Repeat("\x00", 41), "executable file not found in $PATH: bash"},
		{"lines", "one\ntwo\n", "executable file not found in $PATH: bash"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exec := &fakeExecer{out: tc.out, err: exitStatus(127)}
			stream := &fakeStreamer{stream: func(context.Context) error { return nil }}
			c, ctr := interceptClient(t, exec, stream)
			s, err := c.StartIntercept(context.Background(), ctr, InterceptOptions{Command: []string{"bash"}})
			var notFound *ExecutableNotFoundError
			if !errors.As(err, &notFound) {
				t.Fatalf("StartIntercept = %v, %v; want an *ExecutableNotFoundError", s, err)
			}
			want := &ExecutableNotFoundError{Command: "bash", Message: tc.want}
			if diff := cmp.Diff(want, notFound); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if len(stream.calls) != 0 {
				t.Errorf("a session was streamed: %+v", stream.calls)
			}
		})
	}
}

// TestStartInterceptSession checks the running step's session: the runner looks the
// command up first, then runs it with the options' environment and directory, and the
// session ends with the command's exit status.
func TestStartInterceptSession(t *testing.T) {
	exec := &fakeExecer{}
	stream := &fakeStreamer{stream: func(context.Context) error { return exitStatus(3) }}
	c, ctr := interceptClient(t, exec, stream)
	s, err := c.StartIntercept(context.Background(), ctr, InterceptOptions{Command: []string{"bash"}, Env: []string{"TERM=x"}, Dir: "/d"})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Wait()
	var exit *ExitError
	if !errors.As(err, &exit) || exit.Status != 3 {
		t.Errorf("Wait = %v, want exit status 3", err)
	}

	session := []string{runspec.RunnerPath, "intercept", "--spec=" + ctr.spec, "--env=TERM=x", "--dir=/d"}
	lookup := append(append([]string{}, session...), "--lookup", "--", "bash")
	if diff := cmp.Diff([]execCall{{"ci", "b-1-test-pod", runspec.StepContainer, lookup}}, exec.calls); diff != "" {
		t.Errorf("lookup (-want +got):\n%s", diff)
	}
	run := append(append([]string{}, session...), "--", "bash")
	if diff := cmp.Diff([]execCall{{"ci", "b-1-test-pod", runspec.StepContainer, run}}, stream.calls); diff != "" {
		t.Errorf("session (-want +got):\n%s", diff)
	}
}

// TestSessionStop checks that Stop cancels the context of the session's stream, and
// that Wait then returns.
func TestSessionStop(t *testing.T) {
	started := make(chan struct{})
	stream := &fakeStreamer{stream: func(ctx context.Context) error {
		close(started)
		<-ctx.Done()
		return ctx.Err()
	}}
	c, ctr := interceptClient(t, &fakeExecer{}, stream)
	s, err := c.StartIntercept(context.Background(), ctr, InterceptOptions{})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	s.Stop()
	if err := s.Wait(); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait = %v, want the stream's context canceled", err)
	}
}
