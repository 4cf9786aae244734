package recordedbuilds

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/tektoncd/pipeline/pkg/apis/pipeline"
	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"

	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// The benchmarks map and follow synthetic builds made from the recorded build
// failed-with-ensure: task steps that run one after another (copies of its task-bye),
// then its verdict.

// Namespace is the namespace of the synthetic builds.
const Namespace = "ci"

// Templates are the recorded objects the synthetic builds copy, as they ended.
type Templates struct {
	run           *v1.PipelineRun
	task, verdict v1.PipelineTask
	taskRun       *Step
	verdictRun    *Step
}

// LoadTemplates reads the templates from the recorded builds in testdata.
func LoadTemplates(tb testing.TB, testdata string) *Templates {
	tb.Helper()
	b := Load(tb, filepath.Join(testdata, "failed-with-ensure"))
	tm := &Templates{run: b.Run, task: b.Run.Status.PipelineSpec.Tasks[3], verdict: b.Run.Status.PipelineSpec.Finally[0]}
	tm.taskRun, tm.verdictRun = b.Steps[tm.task.Name], b.Steps[tm.verdict.Name]
	if tm.task.Name != "task-bye" || tm.taskRun == nil || tm.taskRun.Pod == nil || tm.verdictRun == nil || tm.verdictRun.Pod == nil {
		tb.Fatalf("the recorded build failed-with-ensure is not the one the benchmarks know")
	}
	return tm
}

// Synthetic is a build of task steps that run one after another, then the verdict.
type Synthetic struct {
	Run      *v1.PipelineRun
	Steps    []string // in the order they run; the verdict last
	TaskRuns map[string]*v1.TaskRun
	Pods     map[string]*corev1.Pod
	Logs     map[string][]byte // the task steps' logs as the API serves them
}

// Build makes a build of tasks task steps, each of which logs lines lines. Its objects
// are as they are once the build ended; its Running* methods give them as they were
// while it ran. Every task succeeds, and so does the build.
func (tm *Templates) Build(tb testing.TB, name string, tasks, lines int) *Synthetic {
	tb.Helper()
	b := &Synthetic{Run: tm.run.DeepCopy(), TaskRuns: map[string]*v1.TaskRun{}, Pods: map[string]*corev1.Pod{}, Logs: map[string][]byte{}}
	b.Run.ObjectMeta = synthMeta(tm.run.ObjectMeta, name, name, "")
	spec := &v1.PipelineSpec{Finally: []v1.PipelineTask{tm.verdict}}
	for i := 0; i < tasks; i++ {
		pt := *tm.task.DeepCopy()
		pt.Name, pt.When, pt.RunAfter = fmt.Sprintf("task-%d", i), nil, nil
		if i > 0 {
			pt.RunAfter = []string{b.Steps[i-1]}
		}
		spec.Tasks = append(spec.Tasks, pt)
		tr := b.add(pt.Name, tm.taskRun)
		setPlanID(tb, tr, fmt.Sprintf("%d", 100+i))
		b.Logs[pt.Name] = synthLog(pt.Name, lines)
	}
	verdict := b.add(tm.verdict.Name, tm.verdictRun)
	for i := range verdict.Status.Results {
		if verdict.Status.Results[i].Name == runspec.ResultOutcome {
			verdict.Status.Results[i].Value.StringVal = string(runspec.Succeeded)
		}
	}
	b.Run.Status.PipelineSpec = spec
	b.Run.Status.ChildReferences = nil
	for _, step := range b.Steps {
		b.Run.Status.ChildReferences = append(b.Run.Status.ChildReferences, v1.ChildStatusReference{
			TypeMeta:         k8sruntime.TypeMeta{APIVersion: v1.SchemeGroupVersion.String(), Kind: "TaskRun"},
			Name:             b.TaskRuns[step].Name,
			PipelineTaskName: step,
		})
	}
	b.Run.Status.Conditions = duckv1.Conditions{{Type: apis.ConditionSucceeded, Status: corev1.ConditionTrue, Reason: "Succeeded"}}
	return b
}

func (b *Synthetic) add(step string, template *Step) *v1.TaskRun {
	tr, pod := template.TaskRun.DeepCopy(), template.Pod.DeepCopy()
	tr.ObjectMeta = synthMeta(tr.ObjectMeta, b.Run.Name+"-"+step, b.Run.Name, step)
	pod.ObjectMeta = synthMeta(pod.ObjectMeta, tr.Name+"-pod", b.Run.Name, step)
	tr.Status.PodName = pod.Name
	b.Steps = append(b.Steps, step)
	b.TaskRuns[step], b.Pods[step] = tr, pod
	return tr
}

// synthMeta is a recorded object's metadata for an object of the synthetic build run.
func synthMeta(m metav1.ObjectMeta, name, run, step string) metav1.ObjectMeta {
	m = *m.DeepCopy()
	// A UID of its own, as every object of a cluster has.
	m.Name, m.Namespace, m.UID, m.ResourceVersion, m.OwnerReferences, m.ManagedFields = name, Namespace, types.UID(Namespace+"/"+name), "", nil, nil
	if step != "" {
		m.Labels[pipeline.PipelineRunLabelKey], m.Labels[pipeline.PipelineTaskLabelKey] = run, step
	}
	return m
}

func setPlanID(tb testing.TB, tr *v1.TaskRun, id string) {
	tb.Helper()
	for i, p := range tr.Spec.Params {
		if p.Name != runspec.ParamSpec {
			continue
		}
		s, err := runspec.Decode(p.Value.StringVal)
		if err == nil {
			s.PlanID = id
			tr.Spec.Params[i].Value.StringVal, err = s.Encode()
		}
		if err != nil {
			tb.Fatal(err)
		}
	}
}

// synthLog is a step's log as the API serves it: lines lines, a millisecond apart.
func synthLog(step string, lines int) []byte {
	start := time.Date(2026, 11, 21, 2, 19, 0, 0, time.UTC)
	var b bytes.Buffer
	// A task's runner says when its process starts, before the process's first line.
	b.WriteString(start.Format(time.RFC3339Nano) + " " + runspec.StartMark)
	for i := 0; i < lines; i++ {
		b.WriteString(start.Add(time.Duration(i) * time.Millisecond).Format(time.RFC3339Nano))
		fmt.Fprintf(&b, " %s: compiling package %05d of 10000, the kind of line a build writes\n", step, i)
	}
	return b.Bytes()
}

// RunningRun is the build's PipelineRun while it runs.
func (b *Synthetic) RunningRun() *v1.PipelineRun {
	pr := b.Run.DeepCopy()
	pr.Status.CompletionTime = nil
	pr.Status.Conditions = duckv1.Conditions{{Type: apis.ConditionSucceeded, Status: corev1.ConditionUnknown, Reason: "Running"}}
	return pr
}

// RunningTaskRun is a step's TaskRun while it runs.
func (b *Synthetic) RunningTaskRun(step string) *v1.TaskRun {
	tr := b.TaskRuns[step].DeepCopy()
	tr.Status.CompletionTime, tr.Status.Results = nil, nil
	tr.Status.Conditions = duckv1.Conditions{{Type: apis.ConditionSucceeded, Status: corev1.ConditionUnknown, Reason: "Running"}}
	for i, s := range tr.Status.Steps {
		if s.Container == runspec.StepContainer {
			tr.Status.Steps[i].ContainerState = runningContainer(s.ContainerState)
		}
	}
	return tr
}

// RunningPod is a step's pod while its container runs.
func (b *Synthetic) RunningPod(step string) *corev1.Pod {
	pod := b.Pods[step].DeepCopy()
	pod.Status.Phase = corev1.PodRunning
	for i, s := range pod.Status.ContainerStatuses {
		if s.Name == runspec.StepContainer {
			pod.Status.ContainerStatuses[i].State = runningContainer(s.State)
		}
	}
	return pod
}

func runningContainer(s corev1.ContainerState) corev1.ContainerState {
	started := metav1.Now()
	if s.Terminated != nil {
		started = s.Terminated.StartedAt
	}
	return corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}
}

// WantEvents is how many events a synthetic build maps to: its status at start and end,
// and for each task step its head (3), its image's fetch, log lines and finish. The tasks
// run one after the other, in one registry image: the first shows the image's check run
// (10 events of the fetch), the others find it done (8).
func WantEvents(tasks, lines int) int {
	return 2 + tasks*(3+lines+1) + 10 + (tasks-1)*8
}
