//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/event"
	"github.com/concourse-tekton/concourse-tekton/tektonrun"
	"github.com/concourse-tekton/concourse-tekton/tektonrun/buildevents"
	"github.com/concourse-tekton/concourse-tekton/translate"
)

// busyboxTask is a task config running script in busybox.
func busyboxTask(script string) *concourse.TaskConfig {
	return &concourse.TaskConfig{
		Platform: "linux",
		ImageResource: &concourse.ImageResource{
			Type:   "registry-image",
			Source: concourse.Source{"repository": strings.Split(busyboxImage, ":")[0], "tag": strings.Split(busyboxImage, ":")[1]},
		},
		Run: concourse.TaskRunConfig{Path: "sh", Args: []string{"-c", script}},
	}
}

// backend is a Backend on the test cluster's namespace ns, as the ATC would use it.
func backend(t *testing.T, ns string) *tektonrun.Backend {
	t.Helper()
	target, err := tektonrun.NewTarget(tektonrun.TargetOptions{Kubeconfig: kubeconfigPath(), Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	b := tektonrun.NewBackend(target, translate.Options{
		RunnerImage:    runnerImage,
		ResourceImages: map[string]string{"mock": mockImage},
	})
	t.Cleanup(b.Close)
	return b
}

// TestOrchestrator drives the Go API the ATC uses: each of the RFC's four operations as a
// one-step build, and their results.
func TestOrchestrator(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	b := backend(t, ns)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	wait := func(build *tektonrun.Build, err error) *tektonrun.StepResult {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		res, err := build.Wait(ctx)
		if err != nil {
			t.Fatalf("%s: %v", build.Name, err)
		}
		return res
	}

	res := wait(b.RunTask(ctx, tektonrun.BuildMeta{Build: "task-1"}, "1", concourse.TaskPlan{Name: "hello", Config: busyboxTask("echo hello from a task; exit 3")}))
	if res.Status != event.BuildStatusFailed || res.ExitStatus != 3 || res.Stdout != "hello from a task\n" {
		t.Errorf("RunTask: %+v", res)
	}

	source := concourse.Source{"initial_version": "v1"}
	res = wait(b.CheckResource(ctx, tektonrun.BuildMeta{Build: "check-1"}, "1", concourse.CheckPlan{Name: "thing", Type: "mock", Source: source}))
	if res.Status != event.BuildStatusSucceeded || res.Version["version"] != "v1" {
		t.Errorf("CheckResource: %+v", res)
	}

	res = wait(b.PutResource(ctx, tektonrun.BuildMeta{Build: "put-1"}, "1", concourse.PutPlan{Name: "thing", Type: "mock", Resource: "thing", Source: source, Params: concourse.Params{"version": "v2"}, Inputs: &concourse.InputsConfig{All: true}}))
	if res.Status != event.BuildStatusSucceeded || res.Version["version"] != "v2" {
		t.Errorf("PutResource: %+v", res)
	}

	version := concourse.Version{"version": "v7"}
	res = wait(b.GetResource(ctx, tektonrun.BuildMeta{Build: "get-1"}, "1", concourse.GetPlan{Name: "thing", Type: "mock", Resource: "thing", Source: source, Version: &version}))
	if res.Status != event.BuildStatusSucceeded || res.Version["version"] != "v7" || res.ExitStatus != 0 {
		t.Errorf("GetResource: %+v", res)
	}

	// RunPlan takes the ATC's JSON; a second call with the same build attaches.
	plan := []byte(`{"id":"a","do":[{"id":"b","task":{"name":"one","config":` + mustMarshal(t, busyboxTask("echo one")) + `}},{"id":"c","task":{"name":"two","config":` + mustMarshal(t, busyboxTask("echo two")) + `}}]}`)
	first, err := b.RunPlan(ctx, plan, tektonrun.BuildMeta{Pipeline: "p", Job: "j", Build: "1"})
	if err != nil {
		t.Fatal(err)
	}
	again, err := b.RunPlan(ctx, plan, tektonrun.BuildMeta{Pipeline: "p", Job: "j", Build: "1"})
	if err != nil || again.Name != first.Name {
		t.Fatalf("RunPlan again: %v, %v", again, err)
	}
	// Half the events in one follower, the rest in another from the first's cursor: the
	// two together are the whole build, once.
	var cursor buildevents.Cursor
	var seen []string
	half, stop := context.WithCancel(ctx)
	_, err = first.Events(half, buildevents.Cursor{}, func(e buildevents.Event) error {
		seen = append(seen, e.Key.String())
		if err := cursor.Advance(e.Key); err != nil {
			return err
		}
		if _, ok := e.Event.(event.FinishTask); ok {
			stop() // after the first task
		}
		return nil
	})
	if err == nil {
		t.Fatalf("the first follower saw the whole build: %v", seen)
	}
	resumed, err := buildevents.ParseCursor(cursor.String())
	if err != nil {
		t.Fatal(err)
	}
	status, err := b.Attach(first.Name).Events(ctx, resumed, func(e buildevents.Event) error {
		seen = append(seen, e.Key.String())
		return nil
	})
	if err != nil || status != event.BuildStatusSucceeded {
		t.Fatalf("resumed: %s, %v", status, err)
	}
	var whole []string
	if _, err := b.Attach(first.Name).Events(ctx, buildevents.Cursor{}, func(e buildevents.Event) error {
		whole = append(whole, e.Key.String())
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// A step that waited for a worker (its pod unschedulable a moment, as while its volume
	// binds) shows it to followers that watched it wait; a follower that comes once the
	// pod is scheduled cannot know, as the cluster keeps no record of it in the pod.
	live := slices.DeleteFunc(slices.Clone(seen), func(k string) bool { return strings.Contains(k, "/wait/") })
	if strings.Join(live, " ") != strings.Join(whole, " ") {
		t.Errorf("split and resumed:\n%v\nwhole:\n%v", seen, whole)
	}
}

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestApiserverRestart restarts the kube-apiserver in the middle of a build that `run -w
// --json` follows: the event stream has no gap and no duplicate, and equals what `events`
// prints afterwards. It is the one test that is not parallel: go test runs it before the
// others start, so that the restart breaks no other test's requests.
func TestApiserverRestart(t *testing.T) {
	if kubeconfigPath() != harnessKubeconfig() {
		t.Skip("restarting the apiserver needs the harness's own cluster")
	}
	ns := namespace(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "restart.yml")
	pipeline := `
jobs:
- name: count
  plan:
  - task: count
    config:
      platform: linux
      image_resource: {type: registry-image, source: {repository: ` + strings.Split(busyboxImage, ":")[0] + `, tag: "` + strings.Split(busyboxImage, ":")[1] + `"}}
      run: {path: sh, args: [-c, 'for i in $(seq 1 80); do echo "line $i"; sleep 0.25; done']}
  - task: after
    config:
      platform: linux
      image_resource: {type: registry-image, source: {repository: ` + strings.Split(busyboxImage, ":")[0] + `, tag: "` + strings.Split(busyboxImage, ":")[1] + `"}}
      run: {path: echo, args: [after the restart]}
`
	if err := os.WriteFile(file, []byte(pipeline), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	p := startCLI(t, ctx, "run", file, "-j", "count", "-w", "--json", "-n", ns, "--runner-image", runnerImage)
	waitForText(t, p, `"payload":"line 10\n"`, 5*time.Minute)
	restart := exec.CommandContext(ctx, "e2e/cluster/cluster.sh", "restart-apiserver")
	restart.Dir = ".."
	if out, err := restart.CombinedOutput(); err != nil {
		t.Fatalf("restarting the apiserver: %v\n%s", err, out)
	}
	exit, stdout, stderr := p.wait()
	if exit != 0 {
		t.Fatalf("run exited %d\nstdout:\n%s\nstderr:\n%s", exit, stdout, stderr)
	}
	live := envelopes(t, stdout)
	for i, e := range live {
		if e.EventID != fmt.Sprint(i) {
			t.Fatalf("event %d has id %s", i, e.EventID)
		}
	}
	var counted []string
	for _, e := range live {
		if e.Event == "log" {
			var l event.Log
			if err := json.Unmarshal(e.Data, &l); err != nil {
				t.Fatal(err)
			}
			counted = append(counted, l.Payload)
		}
	}
	var want []string
	for i := 1; i <= 80; i++ {
		want = append(want, fmt.Sprintf("line %d\n", i))
	}
	want = append(want, "after the restart\n")
	if strings.Join(counted, "") != strings.Join(want, "") {
		t.Errorf("log lines through the restart:\n%q\nwant:\n%q", counted, want)
	}
	if last := live[len(live)-1]; last.Event != "status" || !strings.Contains(string(last.Data), `"succeeded"`) {
		t.Errorf("last event %s %s", last.Event, last.Data)
	}
	checkImageFetch(t, live, "1")
	// A new process maps the same build to the same events.
	run := strings.TrimSuffix(strings.SplitN(strings.SplitN(stderr, "pipelinerun "+ns+"/", 2)[1], ")", 2)[0], "\n")
	exit, again, _ := runCLI(t, ctx, "events", run, "--json", "-n", ns)
	if exit != 0 {
		t.Fatalf("events after the build: exit %d", exit)
	}
	if waits := len(live) - len(replayable(live)); waits > 0 {
		t.Logf("the live stream showed %d step(s) waiting for a worker", waits)
	}
	if diff := cmp.Diff(replayable(live), replayable(envelopes(t, again))); diff != "" {
		t.Errorf("events after the build differ from the live stream (-live +events):\n%s", diff)
	}
}

// replayable is what of a stream a follower that comes after the build sees too: each
// event's type and data, in order, but for waiting-for-worker, which only a follower that
// watched a pod wait to be scheduled can know (the cluster keeps no record of it in the
// pod). The first test on a fresh cluster may well wait.
func replayable(list []envelope) []string {
	var out []string
	for _, e := range list {
		if e.Event != string(event.EventTypeWaitingForWorker) {
			out = append(out, e.Event+" "+string(e.Data))
		}
	}
	return out
}

// checkImageFetch checks that the task of plan ID id, whose image_resource is a registry
// image, shows Concourse's fetch of its image between its initialize-task and its
// selected-worker: image-check and image-get, then the check's events and the get's, as
// concourse-semantics.md (4.3) orders them.
func checkImageFetch(t *testing.T, list []envelope, id string) {
	t.Helper()
	checkTaskEvents(t, list, id, false, []string{id + " initialize-task", id + " image-check " + id + "/image-check", id + " image-get " + id + "/image-get",
		id + "/image-check initialize-check", id + "/image-check selected-worker", id + "/image-check start", id + "/image-check finish",
		id + "/image-get initialize-get", id + "/image-get start-get", id + "/image-get selected-worker", id + "/image-get finish-get",
		id + " selected-worker", id + " start-task"})
}

// checkTaskEvents checks that the events of the task of plan ID id, and of the steps
// under it (origins id/...), begin as want says: "origin event", and the plan's ID for
// an event that carries a plan. A wait for a worker (the pod unschedulable a moment, as
// on a cluster just started), which only a follower that watched it knows, is left out,
// and so are logs with withoutLogs.
func checkTaskEvents(t *testing.T, list []envelope, id string, withoutLogs bool, want []string) {
	t.Helper()
	var got []string
	for _, e := range list {
		if e.Event == string(event.EventTypeWaitingForWorker) || withoutLogs && e.Event == string(event.EventTypeLog) {
			continue
		}
		var d struct {
			Origin struct{ ID string } `json:"origin"`
			Plan   struct{ ID string } `json:"plan"`
		}
		if err := json.Unmarshal(e.Data, &d); err != nil {
			t.Fatal(err)
		}
		if d.Origin.ID == id || strings.HasPrefix(d.Origin.ID, id+"/") {
			got = append(got, strings.TrimSpace(d.Origin.ID+" "+e.Event+" "+d.Plan.ID))
		}
	}
	if len(got) < len(want) || strings.Join(got[:len(want)], "\n") != strings.Join(want, "\n") {
		t.Errorf("the events of task %s:\n%s\nwant them to begin:\n%s", id, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

type envelope struct {
	Data    json.RawMessage `json:"data"`
	Event   string          `json:"event"`
	Version string          `json:"version"`
	EventID string          `json:"event_id"`
}

func envelopes(t *testing.T, out string) []envelope {
	t.Helper()
	var list []envelope
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var e envelope
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("not an envelope: %q: %v", line, err)
		}
		list = append(list, e)
	}
	if len(list) == 0 {
		t.Fatal("no events")
	}
	return list
}

// waitForText waits until the process's stdout contains s.
func waitForText(t *testing.T, p *cliProc, s string, timeout time.Duration) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		stdout, stderr, changed := p.output()
		if strings.Contains(stdout, s) {
			return
		}
		select {
		case <-changed:
		case <-p.done:
			t.Fatalf("%s ended before printing %q\nstdout:\n%s\nstderr:\n%s", p, s, stdout, stderr)
		case <-deadline:
			t.Fatalf("%s did not print %q within %v", p, s, timeout)
		}
	}
}

// TestWaitingForWorker: a task whose pod no node can take (its worker tag selects nodes
// by a label none has) shows what Concourse shows of a step that waits for a worker:
// initialize-task, then waiting-for-worker, and nothing else until the build is
// aborted, which interrupts it; the build ends aborted, alone or after its ensure hook.
func TestWaitingForWorker(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	target, err := tektonrun.NewTarget(tektonrun.TargetOptions{Kubeconfig: kubeconfigPath(), Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	b := tektonrun.NewBackend(target, translate.Options{
		RunnerImage:   runnerImage,
		NodeSelectors: map[string]map[string]string{"nowhere": {"e2e.invalid/nowhere": "true"}},
	})
	t.Cleanup(b.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	stuck := `{"id":"s","task":{"name":"stuck","tags":["nowhere"],"config":` + mustMarshal(t, busyboxTask("echo never")) + `}}`
	for _, tt := range []struct {
		name, plan string
		// hook is the ensure hook's output, if the plan has one.
		hook string
	}{
		{"alone", stuck, ""},
		{"ensure", `{"id":"e","ensure":{"step":` + stuck + `,"ensure":{"id":"h","task":{"name":"cleanup","config":` + mustMarshal(t, busyboxTask("echo cleaned up")) + `}}}}`, "cleaned up\n"},
	} {
		build, err := b.RunPlan(ctx, []byte(tt.plan), tektonrun.BuildMeta{Build: tt.name})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		follow, stop := context.WithCancel(ctx)
		_, err = build.Events(follow, buildevents.Cursor{}, func(e buildevents.Event) error {
			if e.Key.Step != "" {
				got = append(got, string(e.Event.EventType()))
			}
			if _, ok := e.Event.(event.WaitingForWorker); ok {
				stop()
			}
			return nil
		})
		stop()
		if follow.Err() == nil {
			t.Fatalf("%s: the build's events ended (%v) before it waited for a worker: %v", tt.name, err, got)
		}
		if want := []string{"initialize-task", "waiting-for-worker"}; !slices.Equal(got, want) {
			t.Errorf("%s: the task's events: %v, want %v", tt.name, got, want)
		}
		if err := build.Abort(ctx); err != nil {
			t.Fatal(err)
		}
		var stuckEvents []string
		var hook strings.Builder
		status, err := b.Attach(build.Name).Events(ctx, buildevents.Cursor{}, func(e buildevents.Event) error {
			switch ev := e.Event.(type) {
			case event.Error:
				if ev.Origin.ID == "s" {
					stuckEvents = append(stuckEvents, "error "+ev.Message)
				}
			case event.Log:
				if ev.Origin.ID == "s" {
					stuckEvents = append(stuckEvents, "log "+ev.Payload)
				} else if ev.Origin.ID == "h" {
					hook.WriteString(ev.Payload)
				}
			}
			return nil
		})
		if err != nil || status != event.BuildStatusAborted {
			t.Errorf("%s: after the abort: %s, %v; want it aborted", tt.name, status, err)
		}
		if want := []string{"error interrupted"}; !slices.Equal(stuckEvents, want) {
			t.Errorf("%s: the stuck task's end: %q, want %q", tt.name, stuckEvents, want)
		}
		if want := tt.hook; hook.String() != want {
			t.Errorf("%s: the hook's output: %q, want %q", tt.name, hook.String(), want)
		}
	}
}
