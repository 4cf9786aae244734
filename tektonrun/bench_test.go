package tektonrun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"testing"
	"time"

	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"
	"sigs.k8s.io/yaml"

	"github.com/concourse-tekton/concourse-tekton/concourse/event"
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// The benchmarks follow synthetic builds made from the recorded build failed-with-ensure:
// task steps that run one after another (copies of its task-bye), then its verdict.

const benchNamespace = "ci"

// benchTemplates are the recorded objects the synthetic builds copy, as they ended.
type benchTemplates struct {
	run                 *v1.PipelineRun
	task, verdict       v1.PipelineTask
	taskRun, verdictRun *v1.TaskRun
	pod, verdictPod     *corev1.Pod
}

func loadTemplates(tb testing.TB) *benchTemplates {
	tb.Helper()
	var run v1.PipelineRun
	var trs struct{ Items []v1.TaskRun }
	var pods struct{ Items []corev1.Pod }
	for file, v := range map[string]any{"pipelinerun.yaml": &run, "taskruns.yaml": &trs, "pods.yaml": &pods} {
		data, err := os.ReadFile(filepath.Join("testdata", "failed-with-ensure", file))
		if err == nil {
			err = yaml.Unmarshal(data, v)
		}
		if err != nil {
			tb.Fatalf("%s: %v", file, err)
		}
	}
	tm := &benchTemplates{run: &run, task: run.Status.PipelineSpec.Tasks[3], verdict: run.Status.PipelineSpec.Finally[0]}
	for i := range trs.Items {
		tr := &trs.Items[i]
		var pod *corev1.Pod
		for j := range pods.Items {
			if pods.Items[j].Name == tr.Status.PodName {
				pod = &pods.Items[j]
			}
		}
		switch tr.Labels[labelPipelineTask] {
		case tm.task.Name:
			tm.taskRun, tm.pod = tr, pod
		case tm.verdict.Name:
			tm.verdictRun, tm.verdictPod = tr, pod
		}
	}
	if tm.task.Name != "task-bye" || tm.taskRun == nil || tm.pod == nil || tm.verdictRun == nil || tm.verdictPod == nil {
		tb.Fatalf("the recorded build failed-with-ensure is not the one the benchmarks know")
	}
	return tm
}

// synthBuild is a build of task steps that run one after another, then the verdict.
type synthBuild struct {
	run      *v1.PipelineRun
	steps    []string // in the order they run; the verdict last
	taskRuns map[string]*v1.TaskRun
	pods     map[string]*corev1.Pod
	logs     map[string][]byte // the task steps' logs as the API serves them
}

// build makes a build of tasks task steps, each of which logs lines lines. Its objects are
// as they are once the build ended; its running* methods give them as they were while it
// ran. Every task succeeds, and so does the build.
func (tm *benchTemplates) build(tb testing.TB, name string, tasks, lines int) *synthBuild {
	tb.Helper()
	b := &synthBuild{run: tm.run.DeepCopy(), taskRuns: map[string]*v1.TaskRun{}, pods: map[string]*corev1.Pod{}, logs: map[string][]byte{}}
	b.run.ObjectMeta = synthMeta(tm.run.ObjectMeta, name, name, "")
	spec := &v1.PipelineSpec{Finally: []v1.PipelineTask{tm.verdict}}
	for i := 0; i < tasks; i++ {
		pt := *tm.task.DeepCopy()
		pt.Name, pt.When, pt.RunAfter = fmt.Sprintf("task-%d", i), nil, nil
		if i > 0 {
			pt.RunAfter = []string{b.steps[i-1]}
		}
		spec.Tasks = append(spec.Tasks, pt)
		tr := b.add(pt.Name, tm.taskRun, tm.pod)
		setPlanID(tb, tr, fmt.Sprintf("%d", 100+i))
		b.logs[pt.Name] = synthLog(pt.Name, lines)
	}
	verdict := b.add(tm.verdict.Name, tm.verdictRun, tm.verdictPod)
	for i := range verdict.Status.Results {
		if verdict.Status.Results[i].Name == "outcome" {
			verdict.Status.Results[i].Value.StringVal = string(runspec.Succeeded)
		}
	}
	b.run.Status.PipelineSpec = spec
	b.run.Status.ChildReferences = nil
	for _, step := range b.steps {
		b.run.Status.ChildReferences = append(b.run.Status.ChildReferences, v1.ChildStatusReference{
			TypeMeta:         k8sruntime.TypeMeta{APIVersion: v1.SchemeGroupVersion.String(), Kind: "TaskRun"},
			Name:             b.taskRuns[step].Name,
			PipelineTaskName: step,
		})
	}
	b.run.Status.Conditions = duckv1.Conditions{{Type: apis.ConditionSucceeded, Status: corev1.ConditionTrue, Reason: "Succeeded"}}
	return b
}

func (b *synthBuild) add(step string, tr *v1.TaskRun, pod *corev1.Pod) *v1.TaskRun {
	tr, pod = tr.DeepCopy(), pod.DeepCopy()
	tr.ObjectMeta = synthMeta(tr.ObjectMeta, b.run.Name+"-"+step, b.run.Name, step)
	pod.ObjectMeta = synthMeta(pod.ObjectMeta, tr.Name+"-pod", b.run.Name, step)
	tr.Status.PodName = pod.Name
	b.steps = append(b.steps, step)
	b.taskRuns[step], b.pods[step] = tr, pod
	return tr
}

// synthMeta is a recorded object's metadata for an object of the synthetic build run.
func synthMeta(m metav1.ObjectMeta, name, run, step string) metav1.ObjectMeta {
	m = *m.DeepCopy()
	// A UID of its own, as every object of a cluster has.
	m.Name, m.Namespace, m.UID, m.ResourceVersion, m.OwnerReferences, m.ManagedFields = name, benchNamespace, types.UID(benchNamespace+"/"+name), "", nil, nil
	if step != "" {
		m.Labels[labelPipelineRun], m.Labels[labelPipelineTask] = run, step
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

// followerLines reads a log the way the log follower does.
func followerLines(data []byte) ([]LogLine, error) {
	f := &logFollower{wake: func() {}}
	err := f.read(bytes.NewReader(data), true)
	lines, _ := f.snapshot()
	return lines, err
}

// runningRun is the build's PipelineRun while it runs.
func (b *synthBuild) runningRun() *v1.PipelineRun {
	pr := b.run.DeepCopy()
	pr.Status.CompletionTime = nil
	pr.Status.Conditions = duckv1.Conditions{{Type: apis.ConditionSucceeded, Status: corev1.ConditionUnknown, Reason: "Running"}}
	return pr
}

// runningTaskRun is a step's TaskRun while it runs.
func (b *synthBuild) runningTaskRun(step string) *v1.TaskRun {
	tr := b.taskRuns[step].DeepCopy()
	tr.Status.CompletionTime, tr.Status.Results = nil, nil
	tr.Status.Conditions = duckv1.Conditions{{Type: apis.ConditionSucceeded, Status: corev1.ConditionUnknown, Reason: "Running"}}
	for i, s := range tr.Status.Steps {
		if s.Container == runspec.StepContainer {
			tr.Status.Steps[i].ContainerState = runningContainer(s.ContainerState)
		}
	}
	return tr
}

// runningPod is a step's pod while its container runs.
func (b *synthBuild) runningPod(step string) *corev1.Pod {
	pod := b.pods[step].DeepCopy()
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

// wantEvents is how many events a synthetic build maps to: its status at start and end,
// and for each task step its head (3), its image's fetch, log lines and finish. The tasks
// run one after the other, in one registry image: the first shows the image's check run
// (10 events of the fetch), the others find it done (8).
func wantEvents(tasks, lines int) int {
	return 2 + tasks*(3+lines+1) + 10 + (tasks-1)*8
}

// checkFinal checks a whole build's events: how many, that the last one (its final
// status) is succeeded, and that final says so.
func checkFinal(count int, last Event, final bool, tasks, lines int) error {
	if !final || count != wantEvents(tasks, lines) {
		return fmt.Errorf("%d events (final %t), want %d and final", count, final, wantEvents(tasks, lines))
	}
	if s, ok := last.Event.(event.Status); !ok || s.Status != event.BuildStatusSucceeded {
		return fmt.Errorf("the last event is %#v, want status succeeded", last.Event)
	}
	return nil
}

const (
	mapTasks = 20
	mapLines = 10000
	mapChunk = 100
)

// mapBuild is the build BenchmarkMapBuild and BenchmarkMapIncremental map: 20 task steps
// of 10,000 log lines each, ended, and its logs' size.
func mapBuild(b *testing.B) (*synthBuild, map[string][]LogLine, int64) {
	b.Helper()
	sb := loadTemplates(b).build(b, "bench-1", mapTasks, mapLines)
	logs := map[string][]LogLine{}
	var size int64
	for step, data := range sb.logs {
		lines, err := followerLines(data)
		if err != nil || len(lines) != mapLines+1 {
			b.Fatalf("%s: %d lines, %v", step, len(lines), err)
		}
		logs[step] = lines
		size += int64(len(data))
	}
	return sb, logs, size
}

// BenchmarkMapBaselineReadLogs is the floor the mapping benchmarks compare with: reading
// the same logs (20 steps × 10,000 lines) the way the log follower does, which Follow
// pays for every line before it maps it.
func BenchmarkMapBaselineReadLogs(b *testing.B) {
	sb, _, size := mapBuild(b)
	b.SetBytes(size)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for step, data := range sb.logs {
			lines, err := followerLines(data)
			if err != nil || len(lines) != mapLines+1 {
				b.Fatalf("%s: %d lines, %v", step, len(lines), err)
			}
		}
	}
	b.ReportMetric(float64(b.N*mapTasks*mapLines)/b.Elapsed().Seconds(), "lines/s")
}

// BenchmarkMapBuild maps a whole ended build of 20 steps × 10,000 log lines at once.
func BenchmarkMapBuild(b *testing.B) {
	sb, logs, size := mapBuild(b)
	obs := Observation{Run: sb.run, Steps: map[string]*StepObservation{}}
	for _, step := range sb.steps {
		obs.Steps[step] = &StepObservation{TaskRun: sb.taskRuns[step], Pod: sb.pods[step], Log: logs[step], LogDone: true}
	}
	b.SetBytes(size)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		events, final := Map(obs, nil)
		var last Event
		if len(events) > 0 {
			last = events[len(events)-1]
		}
		if err := checkFinal(len(events), last, final, mapTasks, mapLines); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*wantEvents(mapTasks, mapLines))/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkMapIncremental maps the same build the way Follow does while it runs: the steps
// run one after another, each one's log grows 100 lines at a time, every observation is
// mapped after the cursor of the events already delivered, and the cursor advances.
func BenchmarkMapIncremental(b *testing.B) {
	sb, logs, size := mapBuild(b)
	running := map[string]*v1.TaskRun{}
	for _, step := range sb.steps {
		running[step] = sb.runningTaskRun(step)
	}
	runningPR := sb.runningRun()
	b.SetBytes(size)
	b.ResetTimer()
	calls := 0
	for i := 0; i < b.N; i++ {
		obs := Observation{Run: runningPR, Steps: map[string]*StepObservation{}}
		var after Cursor
		var count int
		var last Event
		var final bool
		deliver := func() {
			var events []Event
			events, final = Map(obs, &after)
			calls++
			for _, e := range events {
				if err := after.Advance(e.Key); err != nil {
					b.Fatal(err)
				}
				count++
				last = e
			}
		}
		for _, step := range sb.steps {
			so := &StepObservation{TaskRun: running[step], Pod: sb.pods[step]}
			obs.Steps[step] = so
			for n := mapChunk; n <= len(logs[step]); n += mapChunk {
				so.Log = logs[step][:n]
				deliver()
			}
			so.Log, so.TaskRun, so.LogDone = logs[step], sb.taskRuns[step], true
			deliver()
		}
		obs.Run = sb.run
		deliver()
		if err := checkFinal(count, last, final, mapTasks, mapLines); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*wantEvents(mapTasks, mapLines))/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(calls), "ns/map")
}

// benchFollower follows one build with a client, checks that every event comes once and
// in order, and tells when it saw a step's last log line and its end.
type benchFollower struct {
	events   int
	seen     Cursor
	lastLine map[string]chan struct{} // closed at the step's last log line
	ended    map[string]chan time.Time
}

func newBenchFollower(sb *synthBuild) *benchFollower {
	f := &benchFollower{lastLine: map[string]chan struct{}{}, ended: map[string]chan time.Time{}}
	for _, step := range sb.steps {
		f.lastLine[step] = make(chan struct{})
		f.ended[step] = make(chan time.Time, 1)
	}
	return f
}

func (f *benchFollower) follow(ctx context.Context, c *Client, sb *synthBuild, lines int) (event.BuildStatus, error) {
	return c.Follow(ctx, sb.run.Name, Cursor{}, func(e Event) error {
		if f.seen.Covers(e.Key) {
			return fmt.Errorf("event %s came twice", e.Key)
		}
		if err := f.seen.Advance(e.Key); err != nil {
			return err
		}
		f.events++
		switch {
		case e.Key.Part == PartLog && e.Key.N == lines-1:
			close(f.lastLine[e.Key.Step])
		case e.Key.Part == PartEnd && e.Key.Step != "":
			if fin, ok := e.Event.(event.FinishTask); !ok || fin.ExitStatus != 0 {
				return fmt.Errorf("step %s ended with %#v, want finish-task with exit status 0", e.Key.Step, e.Event)
			}
			f.ended[e.Key.Step] <- time.Now()
		}
		return nil
	})
}

// benchDriver plays Tekton and the kubelet: it writes a build's objects to the fake
// cluster as they change while the build runs.
type benchDriver struct {
	cluster *memCluster
	client  *Client
	// logFirst: a container's log ends lag before its pod's status says it ended (the
	// kubelet reports an exit up to a second later). Else the status reaches the
	// client's cache before the log ends.
	logFirst bool
	lag      time.Duration
}

// start puts a step's objects as they are while it runs, and serves its log.
func (d *benchDriver) start(sb *synthBuild, step string) error {
	pod := sb.pods[step]
	d.cluster.logs.add(pod.Name, sb.logs[step])
	if err := d.cluster.put(sb.runningTaskRun(step)); err != nil {
		return err
	}
	return d.cluster.put(sb.runningPod(step))
}

// exit ends a step's container: its log ends, and its pod says it ended.
func (d *benchDriver) exit(ctx context.Context, sb *synthBuild, step string) error {
	pod := sb.pods[step]
	if d.logFirst {
		d.cluster.logs.end(pod.Name)
		time.Sleep(d.lag)
		return d.cluster.put(pod)
	}
	if err := d.cluster.put(pod); err != nil {
		return err
	}
	err := d.until(ctx, sb.run.Name, "pod "+pod.Name+" in the cache", func() bool {
		p, err := d.client.watch.pods.Pods(pod.Namespace).Get(pod.Name)
		return err == nil && p.Status.Phase == pod.Status.Phase
	})
	d.cluster.logs.end(pod.Name)
	return err
}

// drive runs a build while a Follow follows it, and checks what Follow delivered.
func (d *benchDriver) drive(ctx context.Context, sb *synthBuild, tasks, lines int) error {
	if err := d.cluster.put(sb.runningRun()); err != nil {
		return err
	}
	f := newBenchFollower(sb)
	type result struct {
		status event.BuildStatus
		err    error
	}
	followed := make(chan result, 1)
	go func() {
		s, err := f.follow(ctx, d.client, sb, lines)
		followed <- result{s, err}
	}()
	for _, step := range sb.steps {
		if err := d.start(sb, step); err != nil {
			return err
		}
		if sb.logs[step] != nil {
			if _, err := await(ctx, f.lastLine[step], step+"'s last log line"); err != nil {
				return err
			}
		}
		if err := d.exit(ctx, sb, step); err != nil {
			return err
		}
		if err := d.cluster.put(sb.taskRuns[step]); err != nil {
			return err
		}
	}
	// Tekton ends the run seconds after the verdict's TaskRun appeared; here it would be
	// microseconds, and the run's watch can deliver its end before the TaskRuns' watch
	// delivers the verdict: Map takes a TaskRun it does not see, of an ended run, for one
	// that never ran, and the build for errored.
	verdict := sb.taskRuns[sb.steps[len(sb.steps)-1]]
	err := d.until(ctx, sb.run.Name, "TaskRun "+verdict.Name+" in the cache", func() bool {
		_, exists, err := d.client.watch.taskRuns.GetByKey(verdict.Namespace + "/" + verdict.Name)
		return err == nil && exists
	})
	if err != nil {
		return err
	}
	if err := d.cluster.put(sb.run); err != nil {
		return err
	}
	r, err := await(ctx, followed, "the end of Follow")
	switch {
	case err != nil:
		return err
	case r.err != nil:
		return r.err
	case r.status != event.BuildStatusSucceeded || f.events != wantEvents(tasks, lines):
		return fmt.Errorf("Follow returned %q after %d events, want succeeded after %d", r.status, f.events, wantEvents(tasks, lines))
	}
	return nil
}

// until waits until ok, checking it whenever the client's watches see the build change.
func (d *benchDriver) until(ctx context.Context, run, what string, ok func() bool) error {
	wake, unsubscribe := d.client.watch.subscribe(run)
	defer unsubscribe()
	for !ok() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-wake:
		}
	}
	return nil
}

func await[T any](ctx context.Context, ch <-chan T, what string) (T, error) {
	var zero T
	select {
	case v := <-ch:
		return v, nil
	case <-ctx.Done():
		return zero, fmt.Errorf("waiting for %s: %w", what, ctx.Err())
	}
}

// BenchmarkFollowLatency measures, through Client.Follow and its informers, how long it
// takes from a TaskRun's completion to its step's end event. Each iteration follows a new
// build of one task step (100 log lines), lets it run until its log was delivered and its
// container ended, then times the TaskRun's update to ended until emit gets the finish.
func BenchmarkFollowLatency(b *testing.B) {
	const lines = 100
	tm := loadTemplates(b)
	cluster := newMemCluster(benchNamespace)
	d := &benchDriver{cluster: cluster, client: cluster.client()}
	defer d.client.Close()
	if err := cluster.watching(d.client); err != nil {
		b.Fatal(err)
	}
	var latencies []time.Duration
	b.ResetTimer()
	b.StopTimer()
	for i := 0; i < b.N; i++ {
		sb := tm.build(b, fmt.Sprintf("latency-%d", i), 1, lines)
		step := sb.steps[0]
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := cluster.put(sb.runningRun()); err != nil {
			b.Fatal(err)
		}
		if err := d.start(sb, step); err != nil {
			b.Fatal(err)
		}
		f := newBenchFollower(sb)
		done := make(chan error, 1)
		go func() {
			_, err := f.follow(ctx, d.client, sb, lines)
			done <- err
		}()
		_, err := await(ctx, f.lastLine[step], "the last log line")
		if err == nil {
			err = d.exit(ctx, sb, step)
		}
		if err == nil {
			_, err = await(ctx, cluster.logs.get(sb.pods[step].Name).drained, "the log read to its end")
		}
		if err != nil {
			b.Fatal(err)
		}

		b.StartTimer()
		completed := time.Now()
		if err := cluster.put(sb.taskRuns[step]); err != nil {
			b.Fatal(err)
		}
		at, err := await(ctx, f.ended[step], "the step's end event")
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		latencies = append(latencies, at.Sub(completed))

		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			b.Fatalf("Follow: %v, want it cancelled", err)
		}
		for _, err := range []error{cluster.remove(sb.taskRuns[step]), cluster.remove(sb.pods[step]), cluster.remove(sb.run)} {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	b.ReportMetric(float64(latencies[len(latencies)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(latencies[len(latencies)*99/100].Nanoseconds()), "p99-ns")
}

// BenchmarkFollow200Builds follows 200 builds at once with one Client, one Follow each,
// while the benchmark plays Tekton: each build runs 3 task steps of 100 log lines one
// after another, each step's container ending once its last line was delivered, then its
// verdict. A container's end reaches the client's cache before its log stream ends.
//
// It reports how many requests the client made: its watches are per kind on the
// namespace (3 lists and 3 watches in all, however many builds; checked), and it looks
// once for each ended build's archive, so its requests grow with the builds and the log
// streams it reads, not with polling; and the heap: at its peak, and what
// the cluster's objects take once every build was followed (the informers' caches and the
// fake API server's store, one copy each).
func BenchmarkFollow200Builds(b *testing.B) {
	followBuilds(b, 200, false, 0)
}

// BenchmarkFollowLogEndsFirst follows 20 builds as BenchmarkFollow200Builds does, but a
// container's log stream ends 10ms before its pod's status says it ended, as it can on a
// node: the kubelet reports an exit up to a second later. Its log-opens/stream is what a
// log follower does meanwhile.
func BenchmarkFollowLogEndsFirst(b *testing.B) {
	followBuilds(b, 20, true, 10*time.Millisecond)
}

func followBuilds(b *testing.B, builds int, logFirst bool, lag time.Duration) {
	const tasks, lines = 3, 100
	tm := loadTemplates(b)
	var elapsed time.Duration
	var requests, opens, peak, after int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		sbs := make([]*synthBuild, builds)
		for j := range sbs {
			sbs[j] = tm.build(b, fmt.Sprintf("build-%d", j), tasks, lines)
		}
		cluster := newMemCluster(benchNamespace)
		d := &benchDriver{cluster: cluster, client: cluster.client(), logFirst: logFirst, lag: lag}
		if err := cluster.watching(d.client); err != nil {
			b.Fatal(err)
		}
		base := liveHeap()
		stopSampling := sampleHeap()
		b.StartTimer()

		began := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		errs := make(chan error, builds)
		var wg sync.WaitGroup
		for _, sb := range sbs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := d.drive(ctx, sb, tasks, lines); err != nil {
					errs <- fmt.Errorf("%s: %w", sb.run.Name, err)
					cancel()
				}
			}()
		}
		wg.Wait()
		cancel()
		elapsed += time.Since(began)

		b.StopTimer()
		peak = max(peak, stopSampling()-base)
		after = liveHeap() - base
		close(errs)
		var failed []error
		for err := range errs {
			// The first failure cancels the others' contexts: it is the one to show.
			if !errors.Is(err, context.Canceled) {
				failed = append([]error{err}, failed...)
			} else {
				failed = append(failed, err)
			}
		}
		if len(failed) > 0 {
			b.Fatal(failed[0])
		}
		reads := cluster.reads()
		// Besides: one look for each ended build's events archive (Client.Archive), which
		// none has here.
		want := map[string]int{"get configmaps": builds}
		for _, resource := range []string{"pipelineruns", "taskruns", "pods"} {
			want["list "+resource], want["watch "+resource] = 1, 1
		}
		if !maps.Equal(reads, want) {
			b.Fatalf("the client made these requests: %v; want a list and a watch of each kind, and a look for each build's archive", reads)
		}
		for _, n := range want {
			requests += int64(n)
		}
		opens += cluster.logs.opens.Load()
		d.client.Close()
		b.StartTimer()
	}
	perBuild := float64(b.N * builds)
	b.ReportMetric(float64(requests)/float64(b.N), "api-requests/op")
	b.ReportMetric(float64(opens)/(perBuild*(tasks+1)), "log-opens/stream")
	b.ReportMetric(float64(requests+opens)/perBuild, "requests/build")
	b.ReportMetric(float64(requests+opens)/elapsed.Seconds(), "requests/s")
	b.ReportMetric(perBuild*float64(wantEvents(tasks, lines))/elapsed.Seconds(), "events/s")
	b.ReportMetric(float64(peak)/float64(builds), "peak-heap-B/build")
	b.ReportMetric(float64(after)/float64(builds), "live-heap-B/build")
}

// liveHeap is the bytes the heap's live objects take.
func liveHeap() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// sampleHeap samples the heap's allocated bytes every 10ms until the function it returns
// is called, which returns the highest sample.
func sampleHeap() func() int64 {
	stop, peak := make(chan struct{}), make(chan int64)
	go func() {
		var ms runtime.MemStats
		var high int64
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			runtime.ReadMemStats(&ms)
			high = max(high, int64(ms.HeapAlloc))
			select {
			case <-stop:
				peak <- high
				return
			case <-tick.C:
			}
		}
	}()
	return func() int64 {
		close(stop)
		return <-peak
	}
}
