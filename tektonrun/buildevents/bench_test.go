package buildevents

import (
	"fmt"
	"testing"

	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"

	"github.com/concourse-tekton/concourse-tekton/concourse/event"
	"github.com/concourse-tekton/concourse-tekton/tektonrun/internal/recordedbuilds"
)

// The benchmarks map synthetic builds made from a recorded one (recordedbuilds.Synthetic).

// checkFinal checks a whole build's events: how many, that the last one (its final
// status) is succeeded, and that final says so.
func checkFinal(count int, last Event, final bool, tasks, lines int) error {
	if !final || count != recordedbuilds.WantEvents(tasks, lines) {
		return fmt.Errorf("%d events (final %t), want %d and final", count, final, recordedbuilds.WantEvents(tasks, lines))
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
func mapBuild(b *testing.B) (*recordedbuilds.Synthetic, map[string][]LogLine, int64) {
	b.Helper()
	sb := recordedbuilds.LoadTemplates(b, "testdata").Build(b, "bench-1", mapTasks, mapLines)
	logs := map[string][]LogLine{}
	var size int64
	for step, data := range sb.Logs {
		lines, err := readLog(data)
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
		for step, data := range sb.Logs {
			lines, err := readLog(data)
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
	obs := Observation{Run: sb.Run, Steps: map[string]*StepObservation{}}
	for _, step := range sb.Steps {
		obs.Steps[step] = &StepObservation{TaskRun: sb.TaskRuns[step], Pod: sb.Pods[step], Log: logs[step], LogDone: true}
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
	b.ReportMetric(float64(b.N*recordedbuilds.WantEvents(mapTasks, mapLines))/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkMapIncremental maps the same build the way Follow does while it runs: the steps
// run one after another, each one's log grows 100 lines at a time, every observation is
// mapped after the cursor of the events already delivered, and the cursor advances.
func BenchmarkMapIncremental(b *testing.B) {
	sb, logs, size := mapBuild(b)
	running := map[string]*v1.TaskRun{}
	for _, step := range sb.Steps {
		running[step] = sb.RunningTaskRun(step)
	}
	runningPR := sb.RunningRun()
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
		for _, step := range sb.Steps {
			so := &StepObservation{TaskRun: running[step], Pod: sb.Pods[step]}
			obs.Steps[step] = so
			for n := mapChunk; n <= len(logs[step]); n += mapChunk {
				so.Log = logs[step][:n]
				deliver()
			}
			so.Log, so.TaskRun, so.LogDone = logs[step], sb.TaskRuns[step], true
			deliver()
		}
		obs.Run = sb.Run
		deliver()
		if err := checkFinal(count, last, final, mapTasks, mapLines); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*recordedbuilds.WantEvents(mapTasks, mapLines))/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(calls), "ns/map")
}
