//go:build e2e && faults

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSoak (make soak; docs/faults.md has its last figures): SOAK_BUILDS builds (500) of
// a pipeline of mixed jobs through the web node over SOAK_DURATION (1h), a fault from the
// matrix injected at random every SOAK_FAULT_EVERY (3m). Then: every build ended as its job
// ends (a step's pod deleted errors its build, as in the matrix), every line each printed
// shown once, the web node's memory and goroutines at the end within a bound of what they
// were a third of the way (half as much memory again and 64 MiB, 100 goroutines), and once
// the namespace is swept nothing left but what gc keeps.
func TestSoak(t *testing.T) {
	builds := envInt(t, "SOAK_BUILDS", 500)
	duration := envDuration(t, "SOAK_DURATION", time.Hour)
	faultEvery := envDuration(t, "SOAK_FAULT_EVERY", 3*time.Minute)
	dumpOnFailure(t)

	// The namespace is swept every minute here, so that what gc leaves can be seen at the
	// end (the suite's web node sweeps every 10 minutes).
	web.env = append(web.env, "CONCOURSE_TEKTON_GC_INTERVAL=1m")
	restartWebNode(t, false)

	setPipeline(t, "soak", soakPipeline())
	s := &soak{t: t, faultOf: map[string]string{}}
	start := time.Now()
	interval := duration / time.Duration(builds)
	measured := false

	ctx, stopFaults := context.WithCancel(context.Background())
	faultsDone := make(chan struct{})
	go func() {
		defer close(faultsDone)
		s.injectFaults(ctx, start, duration, faultEvery)
	}()

	for i := range builds {
		if wait := time.Until(start.Add(time.Duration(i) * interval)); wait > 0 {
			time.Sleep(wait)
		}
		job := soakJobs[i%len(soakJobs)].name
		// Once a third has gone, the web node is killed no more: its growth is measured
		// from there.
		if !measured && time.Since(start) >= duration/3 {
			s.warm, measured = s.measure(), true
		}
		s.trigger(job)
	}
	stopFaults()
	<-faultsDone

	ended := s.waitForAll(30 * time.Minute)
	s.end = s.measure()
	if s.end.rss > s.warm.rss*3/2+64<<20 || s.end.goroutines > s.warm.goroutines+100 {
		errorf(t, "the web node grew from %s to %s: more than half its memory and 64 MiB, or 100 goroutines", s.warm, s.end)
	}
	s.check(ended)
	s.checkSwept()
	t.Logf("soak: %d builds in %v, %d faults (%s), web node: %s a third of the way, %s at the end",
		len(ended), time.Since(start).Round(time.Second), len(s.faults), strings.Join(s.faults, ", "), s.warm, s.end)
}

// soakJobs are the soak pipeline's jobs and the status each ends with.
var soakJobs = []struct{ name, status string }{
	{"one", "succeeded"},
	{"sequence", "succeeded"},
	{"parallel", "succeeded"},
	{"failing", "failed"},
}

// soakPipeline has the soak's jobs: each task prints `<step> line N` five times, a second
// apart.
func soakPipeline() string {
	task := func(name, extra string) string {
		return fmt.Sprintf(`
    task: %[1]s
    config:
      platform: linux
      image_resource: %[2]s
      run: {path: sh, args: [-c, 'for i in 1 2 3 4 5; do echo "%[1]s line $i"; sleep 1; done%[3]s']}`, name, busybox(), extra)
	}
	return `
jobs:
- name: one
  plan:
  -` + task("alone", "") + `
- name: sequence
  plan:
  -` + task("first", "") + `
  -` + task("second", "") + `
- name: parallel
  plan:
  - in_parallel:
    -` + strings.ReplaceAll(task("left", ""), "\n    ", "\n      ") + `
    -` + strings.ReplaceAll(task("right", ""), "\n    ", "\n      ") + `
- name: failing
  plan:
  -` + task("fails", "; exit 1") + `
    on_failure:` + strings.ReplaceAll(task("hook", ""), "\n    ", "\n      ") + `
`
}

// soak is the state of a soak run.
type soak struct {
	t  *testing.T
	mu sync.Mutex
	// faults are the faults injected, in order; faultOf is, for each build whose step's
	// pod a fault deleted, that fault.
	faults    []string
	faultOf   map[string]string
	warm, end usage
}

// trigger starts a build of job, trying again while the web node cannot answer (a fault).
func (s *soak) trigger(job string) {
	for attempt := 0; ; attempt++ {
		out, code := fly(s.t, time.Minute, "trigger-job", "-j", "soak/"+job)
		if code == 0 {
			return
		}
		if attempt == 20 {
			fatalf(s.t, "fly trigger-job -j soak/%s: exit %d\n%s", job, code, out)
		}
		time.Sleep(5 * time.Second)
	}
}

// soakBuilds are the soak pipeline's builds, by job/name.
func (s *soak) builds() (map[string]build, error) {
	out, code := fly(s.t, time.Minute, "builds", "--pipeline", "soak", "--count", "100000", "--json")
	if code != 0 {
		return nil, fmt.Errorf("fly builds: exit %d: %s", code, out)
	}
	var list []build
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		return nil, err
	}
	m := map[string]build{}
	for _, b := range list {
		m[b.JobName+"/"+b.Name] = b
	}
	return m, nil
}

// waitForAll waits until every build of the soak has ended, and returns them.
func (s *soak) waitForAll(timeout time.Duration) map[string]build {
	var last map[string]build
	eventually(s.t, "every build of the soak to end", timeout, func(context.Context) (bool, error) {
		bs, err := s.builds()
		if err != nil {
			return false, nil
		}
		last = bs
		for _, b := range bs {
			if b.Status == "pending" || b.Status == "started" {
				return false, nil
			}
		}
		return true, nil
	})
	return last
}

// injectFaults injects a fault every `every` until ctx ends: the web node is killed at most
// once, in the first third, so that its growth is measured over the rest.
func (s *soak) injectFaults(ctx context.Context, start time.Time, duration, every time.Duration) {
	kinds := []string{"web node killed", "Postgres restarted", "API server restarted", "kubelet restarted", "containerd restarted", "step pod deleted"}
	killed := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
		kind := kinds[rand.IntN(len(kinds))]
		if kind == "web node killed" && (killed || time.Since(start) > duration/3) {
			kind = "Postgres restarted"
		}
		s.t.Logf("soak: %s at %v", kind, time.Since(start).Round(time.Second))
		switch kind {
		case "web node killed":
			killed = true
			restartWebNode(s.t, true)
		case "Postgres restarted":
			pgCtl(s.t, "-m", "fast", "-w", "-t", "60", "restart")
		case "API server restarted":
			clusterSh(s.t, "restart-apiserver")
		case "kubelet restarted":
			clusterSh(s.t, "restart-kubelet")
		case "containerd restarted":
			clusterSh(s.t, "restart-containerd")
		case "step pod deleted":
			if name := s.deleteAStepPod(); name != "" {
				kind += " (" + name + ")"
			}
		}
		s.mu.Lock()
		s.faults = append(s.faults, kind)
		s.mu.Unlock()
	}
}

// deleteAStepPod deletes the pod of a running step of one of the soak's builds, and
// remembers the build, which errors.
func (s *soak) deleteAStepPod() string {
	pods, err := web.kube.CoreV1().Pods(web.ns).List(context.Background(), metav1.ListOptions{LabelSelector: "concourse-ci.org/pipeline=soak"})
	if err != nil {
		s.t.Logf("soak: listing pods: %v", err)
		return ""
	}
	for _, p := range pods.Items {
		task := p.Labels["tekton.dev/pipelineTask"]
		if p.Status.Phase != "Running" || p.DeletionTimestamp != nil || !strings.HasPrefix(task, "task-") {
			continue
		}
		build := p.Labels["concourse-ci.org/job"] + "/" + p.Labels["concourse-ci.org/build"]
		if err := web.kube.CoreV1().Pods(web.ns).Delete(context.Background(), p.Name, metav1.DeleteOptions{}); err != nil {
			s.t.Logf("soak: deleting pod %s: %v", p.Name, err)
			return ""
		}
		s.mu.Lock()
		s.faultOf[build] = "step pod deleted"
		s.mu.Unlock()
		return build
	}
	return ""
}

// check checks each build: its status, and each line it printed shown once (all of them
// for a build that succeeded).
func (s *soak) check(ended map[string]build) {
	want := map[string]string{}
	for _, j := range soakJobs {
		want[j.name] = j.status
	}
	steps := map[string][]string{"one": {"alone"}, "sequence": {"first", "second"}, "parallel": {"left", "right"}, "failing": {"fails", "hook"}}
	keys := slices.Sorted(maps.Keys(ended))
	var mu sync.Mutex
	wrong := 0
	bad := func(format string, args ...any) {
		mu.Lock()
		wrong++
		mu.Unlock()
		errorf(s.t, format, args...)
	}
	next := make(chan string)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for key := range next {
				b := ended[key]
				status := want[b.JobName]
				// A build whose step's pod was deleted errors, unless the step had done its
				// work when the pod went.
				hit := s.faultOf[key] != ""
				out, _ := fly(s.t, 2*time.Minute, "watch", "-j", "soak/"+b.JobName, "-b", b.Name)
				if b.Status != status && !(hit && b.Status == "errored") {
					// What it printed says why, with the faults' times in the log.
					bad("build %s ended %s, want %s; fly watch:\n%s", key, b.Status, status, out)
					continue
				}
				for _, step := range steps[b.JobName] {
					for i := 1; i <= 5; i++ {
						line := fmt.Sprintf("%s line %d", step, i)
						n := len(regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(line)+`$`).FindAllString(out, -1))
						if n > 1 || n == 0 && b.Status != "errored" {
							bad("build %s: %q shown %d times, want once", key, line, n)
						}
					}
				}
			}
		})
	}
	for _, key := range keys {
		next <- key
	}
	close(next)
	wg.Wait()
	s.t.Logf("soak: %d builds checked, %d wrong", len(keys), wrong)
}

// checkSwept waits for a sweep, then checks that the namespace holds only what gc keeps:
// of each job's builds, its latest (and, the failing job's, its latest failed one, kept
// for --gc-failed-grace-period), no other's run or pod.
func (s *soak) checkSwept() {
	var left []string
	err := pollErr(context.Background(), 5*time.Minute, func(ctx context.Context) (bool, error) {
		prs, err := web.tekton.TektonV1().PipelineRuns(web.ns).List(ctx, metav1.ListOptions{LabelSelector: "concourse-ci.org/pipeline=soak"})
		if err != nil {
			return false, client(err)
		}
		left = nil
		for _, pr := range prs.Items {
			if pr.DeletionTimestamp == nil {
				left = append(left, pr.Name)
			}
		}
		return len(left) <= len(soakJobs)+1, nil
	})
	if err != nil {
		errorf(s.t, "after the sweeps, %d runs of the soak are left, want %d at most: %v", len(left), len(soakJobs)+1, left)
	}
}

// usage is what the web node uses: its resident memory and its goroutines.
type usage struct {
	rss        int64
	goroutines int
}

func (u usage) String() string {
	return fmt.Sprintf("%d MiB resident, %d goroutines", u.rss>>20, u.goroutines)
}

// measure reads the web node's resident memory (/proc) and goroutines (its debug server).
func (s *soak) measure() usage {
	var u usage
	data, err := os.ReadFile(filepath.Join(web.state, "web.pid"))
	if err != nil {
		return u
	}
	status, err := os.ReadFile("/proc/" + strings.TrimSpace(string(data)) + "/status")
	if err == nil {
		if m := regexp.MustCompile(`(?m)^VmRSS:\s+(\d+) kB`).FindSubmatch(status); m != nil {
			kb, _ := strconv.ParseInt(string(m[1]), 10, 64)
			u.rss = kb << 10
		}
	}
	u.goroutines = goroutines(s.t)
	return u
}

// goroutines is the count the web node's debug server (its port + 1) gives.
func goroutines(t *testing.T) int {
	u, err := url.Parse(web.url)
	if err != nil {
		return 0
	}
	port, _ := strconv.Atoi(u.Port())
	resp, err := http.Get(fmt.Sprintf("http://%s:%d/debug/pprof/goroutine?debug=1", u.Hostname(), port+1))
	if err != nil {
		t.Logf("goroutines: %v", err)
		return 0
	}
	defer resp.Body.Close()
	head, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
	if m := regexp.MustCompile(`total (\d+)`).FindSubmatch(head); m != nil {
		n, _ := strconv.Atoi(string(m[1]))
		return n
	}
	return 0
}

// restartWebNode stops the web node, by SIGKILL when kill is set, and starts it again.
func restartWebNode(t *testing.T, kill bool) {
	t.Helper()
	if kill {
		data, err := os.ReadFile(filepath.Join(web.state, "web.pid"))
		if err != nil {
			fatal(t, err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil {
			fatal(t, err)
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			fatal(t, err)
		}
		time.Sleep(3 * time.Second)
	} else if out, err := web.webSh("down"); err != nil {
		fatalf(t, "web.sh down: %v\n%s", err, out)
	}
	if out, err := web.webSh("up"); err != nil {
		fatalf(t, "web.sh up: %v\n%s", err, out)
	}
}
