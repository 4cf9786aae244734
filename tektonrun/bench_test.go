package tektonrun

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/concourse-tekton/concourse-tekton/concourse/event"
	"github.com/concourse-tekton/concourse-tekton/tektonrun/buildevents"
	"github.com/concourse-tekton/concourse-tekton/tektonrun/internal/recordedbuilds"
)

// The benchmarks follow synthetic builds made from a recorded one
// (recordedbuilds.Synthetic).

// benchFollower follows one build with a client, checks that every event comes once and
// in order, and tells when it saw a step's last log line and its end.
type benchFollower struct {
	events   int
	seen     buildevents.Cursor
	lastLine map[string]chan struct{} // closed at the step's last log line
	ended    map[string]chan time.Time
}

func newBenchFollower(sb *recordedbuilds.Synthetic) *benchFollower {
	f := &benchFollower{lastLine: map[string]chan struct{}{}, ended: map[string]chan time.Time{}}
	for _, step := range sb.Steps {
		f.lastLine[step] = make(chan struct{})
		f.ended[step] = make(chan time.Time, 1)
	}
	return f
}

func (f *benchFollower) follow(ctx context.Context, c *Client, sb *recordedbuilds.Synthetic, lines int) (event.BuildStatus, error) {
	return c.Follow(ctx, sb.Run.Name, buildevents.Cursor{}, func(e buildevents.Event) error {
		if f.seen.Covers(e.Key) {
			return fmt.Errorf("event %s came twice", e.Key)
		}
		if err := f.seen.Advance(e.Key); err != nil {
			return err
		}
		f.events++
		switch {
		case e.Key.Part == buildevents.PartLog && e.Key.N == lines-1:
			close(f.lastLine[e.Key.Step])
		case e.Key.Part == buildevents.PartEnd && e.Key.Step != "":
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
func (d *benchDriver) start(sb *recordedbuilds.Synthetic, step string) error {
	pod := sb.Pods[step]
	d.cluster.logs.add(pod.Name, sb.Logs[step])
	if err := d.cluster.put(sb.RunningTaskRun(step)); err != nil {
		return err
	}
	return d.cluster.put(sb.RunningPod(step))
}

// exit ends a step's container: its log ends, and its pod says it ended.
func (d *benchDriver) exit(ctx context.Context, sb *recordedbuilds.Synthetic, step string) error {
	pod := sb.Pods[step]
	if d.logFirst {
		d.cluster.logs.end(pod.Name)
		time.Sleep(d.lag)
		return d.cluster.put(pod)
	}
	if err := d.cluster.put(pod); err != nil {
		return err
	}
	err := d.until(ctx, sb.Run.Name, "pod "+pod.Name+" in the cache", func() bool {
		p, err := d.client.watch.pods.Pods(pod.Namespace).Get(pod.Name)
		return err == nil && p.Status.Phase == pod.Status.Phase
	})
	d.cluster.logs.end(pod.Name)
	return err
}

// drive runs a build while a Follow follows it, and checks what Follow delivered.
func (d *benchDriver) drive(ctx context.Context, sb *recordedbuilds.Synthetic, tasks, lines int) error {
	if err := d.cluster.put(sb.RunningRun()); err != nil {
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
	for _, step := range sb.Steps {
		if err := d.start(sb, step); err != nil {
			return err
		}
		if sb.Logs[step] != nil {
			if _, err := await(ctx, f.lastLine[step], step+"'s last log line"); err != nil {
				return err
			}
		}
		if err := d.exit(ctx, sb, step); err != nil {
			return err
		}
		if err := d.cluster.put(sb.TaskRuns[step]); err != nil {
			return err
		}
	}
	// Tekton ends the run seconds after the verdict's TaskRun appeared; here it would be
	// microseconds, and the run's watch can deliver its end before the TaskRuns' watch
	// delivers the verdict: Map takes a TaskRun it does not see, of an ended run, for one
	// that never ran, and the build for errored.
	verdict := sb.TaskRuns[sb.Steps[len(sb.Steps)-1]]
	err := d.until(ctx, sb.Run.Name, "TaskRun "+verdict.Name+" in the cache", func() bool {
		_, exists, err := d.client.watch.taskRuns.GetByKey(verdict.Namespace + "/" + verdict.Name)
		return err == nil && exists
	})
	if err != nil {
		return err
	}
	if err := d.cluster.put(sb.Run); err != nil {
		return err
	}
	r, err := await(ctx, followed, "the end of Follow")
	switch {
	case err != nil:
		return err
	case r.err != nil:
		return r.err
	case r.status != event.BuildStatusSucceeded || f.events != recordedbuilds.WantEvents(tasks, lines):
		return fmt.Errorf("Follow returned %q after %d events, want succeeded after %d", r.status, f.events, recordedbuilds.WantEvents(tasks, lines))
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
	tm := recordedbuilds.LoadTemplates(b, recordedTestdata)
	cluster := newMemCluster(recordedbuilds.Namespace)
	d := &benchDriver{cluster: cluster, client: cluster.client()}
	defer d.client.Close()
	if err := cluster.watching(d.client); err != nil {
		b.Fatal(err)
	}
	var latencies []time.Duration
	b.ResetTimer()
	b.StopTimer()
	for i := 0; i < b.N; i++ {
		sb := tm.Build(b, fmt.Sprintf("latency-%d", i), 1, lines)
		step := sb.Steps[0]
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := cluster.put(sb.RunningRun()); err != nil {
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
			_, err = await(ctx, cluster.logs.get(sb.Pods[step].Name).drained, "the log read to its end")
		}
		if err != nil {
			b.Fatal(err)
		}

		b.StartTimer()
		completed := time.Now()
		if err := cluster.put(sb.TaskRuns[step]); err != nil {
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
		for _, err := range []error{cluster.remove(sb.TaskRuns[step]), cluster.remove(sb.Pods[step]), cluster.remove(sb.Run)} {
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
	tm := recordedbuilds.LoadTemplates(b, recordedTestdata)
	var elapsed time.Duration
	var requests, opens, peak, after int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		sbs := make([]*recordedbuilds.Synthetic, builds)
		for j := range sbs {
			sbs[j] = tm.Build(b, fmt.Sprintf("build-%d", j), tasks, lines)
		}
		cluster := newMemCluster(recordedbuilds.Namespace)
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
					errs <- fmt.Errorf("%s: %w", sb.Run.Name, err)
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
	b.ReportMetric(perBuild*float64(recordedbuilds.WantEvents(tasks, lines))/elapsed.Seconds(), "events/s")
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
