//go:build e2e

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// TestTeamWorker: the web node's third target is team e2e-team's worker (targets file,
// team:). Until the team exists it is not saved at all; once fly set-team makes it, it
// is in fly workers with its team; the team's builds run there, and no other team's
// build ever does (Concourse's team workers, atc/worker/pool.go).
func TestTeamWorker(t *testing.T) {
	dumpOnFailure(t)
	t.Parallel()
	name := "tekton-" + web.team
	workers, err := listWorkers(t)
	if err != nil {
		fatal(t, err)
	}
	if slices.ContainsFunc(workers, func(w worker) bool { return w.Name == name }) {
		fatalf(t, "worker %s is saved before its team exists: %+v", name, workers)
	}
	flyOK(t, time.Minute, "set-team", "-n", workerTeam, "--local-user", "test", "--non-interactive")
	eventually(t, "worker "+name+" running as team "+workerTeam+"'s", time.Minute, func(context.Context) (bool, error) {
		workers, err := listWorkers(t)
		return slices.ContainsFunc(workers, func(w worker) bool {
			return w.Name == name && w.State == "running" && w.Team == workerTeam
		}), err
	})

	// The team's own fly target.
	teamFly := func(timeout time.Duration, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, web.fly, append([]string{"-t", workerTeam}, args...)...)
		cmd.Env = web.env
		out, err := cmd.CombinedOutput()
		if err != nil {
			fatalf(t, "fly -t %s %s: %v\n%s", workerTeam, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	teamFly(time.Minute, "login", "-c", web.url, "-n", workerTeam, "-u", "test", "-p", "test")
	file := filepath.Join(t.TempDir(), "pipeline.yml")
	if err := os.WriteFile(file, []byte(`
jobs:
- name: hello
  plan:
  - task: hello
    config:
      platform: linux
      image_resource: `+busybox()+`
      run: {path: echo, args: [on the team's own worker]}
`), 0o644); err != nil {
		fatal(t, err)
	}
	teamFly(time.Minute, "set-pipeline", "-n", "-p", "team-jobs", "-c", file)
	teamFly(time.Minute, "unpause-pipeline", "-p", "team-jobs")
	out := teamFly(5*time.Minute, "trigger-job", "-j", "team-jobs/hello", "-w")
	inOrder(t, out, "selected worker:", " "+name+"\n", "on the team's own worker", "succeeded")

	// The namespace has the team's builds alone, while every other test's builds (main's)
	// run beside.
	runs, err := web.tekton.TektonV1().PipelineRuns(web.team).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		fatal(t, err)
	}
	if len(runs.Items) == 0 {
		errorf(t, "no PipelineRun in %s; want the team's build", web.team)
	}
	for _, pr := range runs.Items {
		if team := pr.Labels[runspec.LabelTeam]; team != runspec.LabelValue(workerTeam) {
			errorf(t, "PipelineRun %s of team %q runs on team %s's worker", pr.Name, team, workerTeam)
		}
	}
}
