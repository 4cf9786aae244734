//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/concourse-tekton/concourse-tekton/atc/tektonengine"
)

// worker is one line of `fly workers --json`.
type worker struct {
	Name          string   `json:"name"`
	State         string   `json:"state"`
	Platform      string   `json:"platform"`
	Version       string   `json:"version"`
	Tags          []string `json:"tags"`
	Team          string   `json:"team"`
	Containers    int      `json:"active_containers"`
	Volumes       int      `json:"active_volumes"`
	ResourceTypes []struct {
		Type  string `json:"type"`
		Image string `json:"image"`
	} `json:"resource_types"`
}

// listWorkers is what fly workers --json lists.
func listWorkers(t *testing.T) ([]worker, error) {
	t.Helper()
	out, code := fly(t, time.Minute, "workers", "--json")
	if code != 0 {
		return nil, fmt.Errorf("fly workers: exit %d\n%s", code, out)
	}
	var workers []worker
	return workers, jsonUnmarshal(out, &workers)
}

func TestWorker(t *testing.T) {
	dumpOnFailure(t)
	t.Parallel()
	name := "tekton-" + web.ns
	var found *worker
	eventually(t, "worker "+name+" running", time.Minute, func(context.Context) (bool, error) {
		workers, err := listWorkers(t)
		if err != nil {
			return false, err
		}
		for i := range workers {
			if workers[i].Name == name && workers[i].State == "running" {
				found = &workers[i]
			}
		}
		return found != nil, nil
	})
	if found.Platform != "linux" || found.Version != "2.5" {
		errorf(t, "worker %s: platform %q, version %q; want linux, 2.5", name, found.Platform, found.Version)
	}
	images := map[string]string{}
	for _, rt := range found.ResourceTypes {
		images[rt.Type] = rt.Image
	}
	if images["mock"] != mockImage || images["registry-image"] != "concourse/registry-image-resource" {
		errorf(t, "base resource types %v; want mock's from --tekton-resource-image, the others the defaults", images)
	}
}

func TestTriggerJob(t *testing.T) {
	dumpOnFailure(t)
	t.Parallel()
	setPipeline(t, "trigger", fmt.Sprintf(`
jobs:
- name: hello
  plan:
  - task: say-hello
    config:
      platform: linux
      image_resource: %[1]s
      run: {path: sh, args: [-c, 'echo hello from tekton']}
- name: fail
  plan:
  - task: exit-42
    config:
      platform: linux
      image_resource: %[1]s
      run: {path: sh, args: [-c, 'echo failing; exit 42']}
`, busybox()))

	tests := []struct {
		job      string
		wantExit int
		want     []string // in this order
		status   string
	}{
		{"hello", 0, []string{"started trigger/hello #1", "hello from tekton", "succeeded"}, "succeeded"},
		// fly exits with the task's exit status, as it does on workers.
		{"fail", 42, []string{"started trigger/fail #1", "failing", "failed"}, "failed"},
	}
	for _, tt := range tests {
		t.Run(tt.job, func(t *testing.T) {
			out, code := fly(t, 5*time.Minute, "trigger-job", "-j", "trigger/"+tt.job, "-w")
			t.Logf("fly trigger-job -j trigger/%s -w: exit %d\n%s", tt.job, code, out)
			if code != tt.wantExit {
				errorf(t, "exit %d, want %d", code, tt.wantExit)
			}
			inOrder(t, out, tt.want...)
		})
	}

	all := builds(t, "trigger")
	for _, tt := range tests {
		b, ok := all[tt.job+"/1"]
		if !ok || b.Status != tt.status {
			errorf(t, "fly builds: %s #1 %+v; want %s", tt.job, b, tt.status)
			continue
		}
		// One PipelineRun per build, named after it, and recording which build it runs.
		pr, err := web.tekton.TektonV1().PipelineRuns(web.ns).Get(context.Background(), "trigger-"+tt.job+"-1", metav1.GetOptions{})
		if err != nil {
			errorf(t, "the run of %s #1: %v", tt.job, err)
			continue
		}
		if got := pr.Annotations[tektonengine.AnnotationBuildID]; got != strconv.Itoa(b.ID) {
			errorf(t, "PipelineRun %s records build %q, want %d", pr.Name, got, b.ID)
		}
	}
}

func TestAbortBuild(t *testing.T) {
	dumpOnFailure(t)
	t.Parallel()
	setPipeline(t, "abort", fmt.Sprintf(`
jobs:
- name: sleep
  plan:
  - task: sleep
    config:
      platform: linux
      image_resource: %[1]s
      run: {path: sh, args: [-c, 'echo sleeping; sleep 600']}
    on_abort:
      task: cleanup
      config:
        platform: linux
        image_resource: %[1]s
        run: {path: sh, args: [-c, 'echo on_abort ran']}
`, busybox()))

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	watch := startFly(t, ctx, "trigger-job", "-j", "abort/sleep", "-w")
	eventually(t, "the task to sleep", 3*time.Minute, func(context.Context) (bool, error) {
		return strings.Contains(watch.output(), "sleeping"), nil
	})
	// fly workers counts the sleeping task's pod and the build's volume.
	eventually(t, "the worker to show a container and a volume", time.Minute, func(context.Context) (bool, error) {
		workers, err := listWorkers(t)
		return slices.ContainsFunc(workers, func(w worker) bool {
			return w.Name == "tekton-"+web.ns && w.Containers >= 1 && w.Volumes >= 1
		}), err
	})
	start := time.Now()
	out, code := fly(t, time.Minute, "abort-build", "-j", "abort/sleep", "-b", "1")
	if code != 0 || !strings.Contains(out, "build successfully aborted") {
		fatalf(t, "fly abort-build: exit %d\n%s", code, out)
	}
	out, code = watch.wait(t)
	t.Logf("fly trigger-job -w, aborted after %s: exit %d\n%s", time.Since(start).Round(time.Second), code, out)
	if code != 3 {
		errorf(t, "exit %d, want 3 (aborted)", code)
	}
	// The task is interrupted, its on_abort hook runs, then the build ends aborted.
	inOrder(t, out, "sleeping", "interrupted", "on_abort ran", "aborted")
	if b := builds(t, "abort")["sleep/1"]; b.Status != "aborted" {
		errorf(t, "fly builds: sleep #1 %+v; want aborted", b)
	}
}

// TestAbortWhileWaiting aborts a build whose task waits for a worker (its memory limit,
// which its pod requests, fits on no node): fly shows the wait, then the task interrupted,
// its ensure hook run and the build aborted, as Concourse shows a build aborted while a
// step waits for a worker. (Its on_abort hook would not run: README, differences.)
func TestAbortWhileWaiting(t *testing.T) {
	dumpOnFailure(t)
	t.Parallel()
	setPipeline(t, "abort-waiting", fmt.Sprintf(`
jobs:
- name: huge
  plan:
  - task: huge
    config:
      platform: linux
      image_resource: %[1]s
      container_limits: {memory: 1125899906842624}
      run: {path: echo, args: [never]}
    ensure:
      task: cleanup
      config:
        platform: linux
        image_resource: %[1]s
        run: {path: sh, args: [-c, 'echo ensure ran']}
`, busybox()))

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	watch := startFly(t, ctx, "trigger-job", "-j", "abort-waiting/huge", "-w")
	eventually(t, "the task to wait for a worker", 3*time.Minute, func(context.Context) (bool, error) {
		return strings.Contains(watch.output(), "waiting for worker"), nil
	})
	out, code := fly(t, time.Minute, "abort-build", "-j", "abort-waiting/huge", "-b", "1")
	if code != 0 || !strings.Contains(out, "build successfully aborted") {
		fatalf(t, "fly abort-build: exit %d\n%s", code, out)
	}
	out, code = watch.wait(t)
	t.Logf("fly trigger-job -w, aborted while it waited: exit %d\n%s", code, out)
	if code != 3 {
		errorf(t, "exit %d, want 3 (aborted)", code)
	}
	inOrder(t, out, "waiting for worker", "interrupted", "ensure ran", "aborted")
	if strings.Contains(out, "never") {
		errorf(t, "the task ran")
	}
	if b := builds(t, "abort-waiting")["huge/1"]; b.Status != "aborted" {
		errorf(t, "fly builds: huge #1 %+v; want aborted", b)
	}
}

// TestRestartLosesNoEvent: a build that runs while the web node goes away and comes back
// has every line of its log once, in order, and its end, in fly watch.
func TestRestartLosesNoEvent(t *testing.T) {
	dumpOnFailure(t)
	// Each task counts until the test stops it (fly intercept), once the web node is
	// back: whatever web.sh up takes (it relinks the web node), the build runs still.
	count := func(name string) string {
		return fmt.Sprintf(`
    - task: count-%[1]s
      config:
        platform: linux
        image_resource: %[2]s
        run: {path: sh, args: [-c, 'i=0; while [ ! -e /tmp/stop ] && [ $i -lt 600 ]; do i=$((i+1)); echo %[1]s $i; sleep 1; done']}`, name, busybox())
	}
	setPipeline(t, "restart", `
jobs:
- name: count
  plan:
  - in_parallel:`+count("a")+count("b")+"\n")

	if out, code := fly(t, time.Minute, "trigger-job", "-j", "restart/count"); code != 0 {
		fatalf(t, "fly trigger-job: exit %d\n%s", code, out)
	}
	// Once the build has printed a few lines, the web node goes away for a while, and
	// comes back.
	eventually(t, "a few lines", 3*time.Minute, func(context.Context) (bool, error) {
		out, _ := fly(t, 3*time.Second, "watch", "-j", "restart/count", "-b", "1")
		return strings.Contains(out, "a 3\n") && strings.Contains(out, "b 3\n"), nil
	})
	if out, err := web.webSh("down"); err != nil {
		fatalf(t, "web.sh down: %v\n%s", err, out)
	}
	time.Sleep(3 * time.Second)
	if out, err := web.webSh("up"); err != nil {
		fatalf(t, "web.sh up: %v\n%s", err, out)
	}
	pr, err := web.tekton.TektonV1().PipelineRuns(web.ns).Get(context.Background(), "restart-count-1", metav1.GetOptions{})
	if err != nil {
		fatal(t, err)
	}
	if pr.Status.CompletionTime != nil {
		errorf(t, "the build ended while the web node was away, at %s: it did not restart mid-build", pr.Status.CompletionTime)
	}
	for _, name := range []string{"a", "b"} {
		flyOK(t, 3*time.Minute, "intercept", "-j", "restart/count", "-s", "count-"+name, "--", "touch", "/tmp/stop")
	}

	out, code := fly(t, 5*time.Minute, "watch", "-j", "restart/count", "-b", "1")
	t.Logf("fly watch after the restart: exit %d\n%s", code, out)
	if code != 0 {
		errorf(t, "exit %d, want 0", code)
	}
	for _, name := range []string{"a", "b"} {
		// Every line its task printed, 1 to the last, once each: the ones before the
		// web node went away, while it was away, and after.
		last := 0
		for _, m := range regexp.MustCompile(`(?m)^`+name+` ([0-9]+)$`).FindAllStringSubmatch(out, -1) {
			if n, _ := strconv.Atoi(m[1]); n > last {
				last = n
			}
		}
		if last < 3 {
			errorf(t, "task %s printed up to %q, want at least the 3 lines seen before the restart", name, fmt.Sprintf("%s %d", name, last))
		}
		for i := 1; i <= last; i++ {
			line := fmt.Sprintf("%s %d", name, i)
			if n := len(regexp.MustCompile(`(?m)^`+line+`$`).FindAllString(out, -1)); n != 1 {
				errorf(t, "%q printed %d times, want once", line, n)
			}
		}
	}
	inOrder(t, out, "a 1", "a 3", "succeeded")
}

// inOrder fails t unless out holds each of want, in order.
func inOrder(t *testing.T, out string, want ...string) {
	t.Helper()
	rest := out
	for _, w := range want {
		i := strings.Index(rest, w)
		if i < 0 {
			errorf(t, "output lacks %q (after the ones before it)", w)
			return
		}
		rest = rest[i+len(w):]
	}
}
