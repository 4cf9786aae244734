//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/concourse-tekton/concourse-tekton/atc/e2e/internal/e2eenv"
	"github.com/concourse-tekton/concourse-tekton/e2e/images"
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// TestTeams: the web node's third and fourth targets are the workers of teams
// workerTeam and otherTeam, each in a namespace of its own (targets file, team:).
func TestTeams(t *testing.T) {
	dumpOnFailure(t)
	t.Parallel()
	t.Run("worker", teamWorker)
	t.Run("isolation", teamIsolation)
}

// teamWorker: until its team exists, a team's worker is not saved at all; once fly
// set-team makes it, it is in fly workers with its team; the team's builds run there, and
// no other team's build ever does (Concourse's team workers, atc/worker/pool.go).
func teamWorker(t *testing.T) {
	name := "tekton-" + web.team
	workers, err := listWorkers(t)
	if err != nil {
		fatal(t, err)
	}
	if slices.ContainsFunc(workers, func(w worker) bool { return w.Name == name }) {
		fatalf(t, "worker %s is saved before its team exists: %+v", name, workers)
	}
	teamFly := newTeam(t, workerTeam, web.team)
	teamFly.setPipeline("team-jobs", `
jobs:
- name: hello
  plan:
  - task: hello
    config:
      platform: linux
      image_resource: `+busybox()+`
      run: {path: echo, args: [on the team's own worker]}
`)
	out := teamFly.ok(5*time.Minute, "trigger-job", "-j", "team-jobs/hello", "-w")
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

// teamIsolation: a step of team workerTeam (A), running in its namespace with a cloud
// identity of its own (--tekton-team-service-account), tries to reach what team otherTeam
// (B) has in its namespace while a build of B's runs: its Secrets, pods, a pod's log and
// its volume claims through the API server (anonymously, and with every token the step
// has), the pod's log through the kubelet, and B's private image, which the node pulled
// for B with B's credentials. Each attempt is denied. A's privileged step runs in A's own
// namespace, which admits it; B's, whose namespace enforces baseline, on the shared one.
func teamIsolation(t *testing.T) {
	registry, auth := os.Getenv("E2E_PRIVATE_REGISTRY"), os.Getenv("E2E_PRIVATE_REGISTRY_AUTH")
	if registry == "" || auth == "" {
		t.Skip("no private registry: the harness sets E2E_PRIVATE_REGISTRY and E2E_PRIVATE_REGISTRY_AUTH (user:password)")
	}
	a := newTeam(t, workerTeam, web.team)
	b := newTeam(t, otherTeam, web.otherTeam)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	// What B has: a Secret, and a build holding a pod in an image only B may pull.
	if _, err := web.kube.CoreV1().Secrets(web.otherTeam).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "team-b-credentials"},
		StringData: map[string]string{"token": "team-b-token-" + rand.String(8)},
	}, metav1.CreateOptions{}); err != nil {
		fatal(t, err)
	}
	user, password, _ := strings.Cut(auth, ":")
	repo := registry + "/atc-" + web.ns + "/team-b"
	busyboxTar := filepath.Join(e2eenv.CacheDir(), "concourse-tekton", "images", "busybox.tar")
	if err := images.PushPrivate(ctx, busyboxTar, repo+":private", user, password, "IMAGE_OF=team-b"); err != nil {
		fatal(t, err)
	}
	b.setPipeline("hold", fmt.Sprintf(`
jobs:
- name: hold
  plan:
  - task: hold
    config:
      platform: linux
      image_resource:
        type: registry-image
        source: {repository: %s, tag: private, username: %s, password: %s}
      run: {path: sh, args: [-c, 'echo "team B holds, in its image"; sleep 600']}
- name: privileged
  plan:
  - task: privileged
    privileged: true
    config:
      platform: linux
      image_resource: %s
      run: {path: echo, args: [privileged on a worker that admits it]}
`, repo, user, password, busybox()))
	b.ok(time.Minute, "trigger-job", "-j", "hold/hold")
	defer b.run(time.Minute, "abort-build", "-j", "hold/hold", "-b", "1")
	var pod *corev1.Pod
	eventually(t, "team B's build's pod running in "+web.otherTeam, 5*time.Minute, func(ctx context.Context) (bool, error) {
		pods, err := web.kube.CoreV1().Pods(web.otherTeam).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for i := range pods.Items {
			if p := &pods.Items[i]; p.Status.Phase == corev1.PodRunning && p.Labels[runspec.LabelTeam] == runspec.LabelValue(otherTeam) {
				pod = p
				return true, nil
			}
		}
		return false, nil
	})
	container := pod.Spec.Containers[len(pod.Spec.Containers)-1].Name

	apiserver := e2eenv.Or("E2E_POD_APISERVER", "")
	if apiserver == "" {
		out, err := exec.Command("../../e2e/cluster/cluster.sh", "pod-apiserver").Output()
		if err != nil {
			fatalf(t, "cluster.sh pod-apiserver: %v", err)
		}
		apiserver = strings.TrimSpace(string(out))
	}
	a.setPipeline("isolation", fmt.Sprintf(`
jobs:
- name: probe
  plan:
  - task: probe
    config:
      platform: linux
      image_resource: %s
      run:
        path: /bin/probe
        args: [-api, "https://%s", -kubelet, "https://%s", -namespace, %s, -pod, %s, -container, %s]
  - task: privileged
    privileged: true
    config:
      platform: linux
      image_resource: %s
      run: {path: echo, args: [privileged in the team's own namespace]}
- name: pull
  plan:
  - task: pull
    config:
      platform: linux
      image_resource:
        type: registry-image
        source: {repository: %s, tag: private}
      run: {path: sh, args: [-c, 'echo "ran the image of $IMAGE_OF"']}
`, imageResource(probeImage), apiserver, net.JoinHostPort(pod.Status.HostIP, "10250"), web.otherTeam, pod.Name, container,
		busybox(), repo))

	out, code := a.run(5*time.Minute, "trigger-job", "-j", "isolation/probe", "-w")
	t.Logf("team A's probe: exit %d\n%s", code, out)
	if code != 0 {
		errorf(t, "exit %d, want 0 (every attempt denied, the privileged step run)", code)
	}
	if strings.Contains(out, "ALLOWED") {
		errorf(t, "an attempt of team A's was allowed")
	}
	identity := "/var/run/secrets/concourse-tekton/identity/token"
	for _, attempt := range []string{
		"denied: service account token: no file at /var/run/secrets/kubernetes.io/serviceaccount/token",
		"denied: API: secrets of " + web.otherTeam + " anonymously: HTTP 40",
		"denied: API: pods of " + web.otherTeam + " anonymously: HTTP 40",
		"denied: API: log of pod " + web.otherTeam + "/" + pod.Name + " anonymously: HTTP 40",
		"denied: API: persistentvolumeclaims of " + web.otherTeam + " anonymously: HTTP 40",
		"denied: API: secrets of " + web.otherTeam + " with the token of " + identity + ": HTTP 401",
		"denied: API: pods of " + web.otherTeam + " with the token of " + identity + ": HTTP 401",
		"denied: API: log of pod " + web.otherTeam + "/" + pod.Name + " with the token of " + identity + ": HTTP 401",
		"denied: API: persistentvolumeclaims of " + web.otherTeam + " with the token of " + identity + ": HTTP 401",
		"denied: kubelet: log of pod " + web.otherTeam + "/" + pod.Name + ": ",
	} {
		if !strings.Contains(out, attempt) {
			errorf(t, "team A's probe did not print %q", attempt)
		}
	}
	inOrder(t, out, "selected worker:", " tekton-"+web.team+"\n", "privileged in the team's own namespace", "succeeded")

	// B's own namespace enforces baseline: B's privileged task runs on the shared worker,
	// the one that fits it (placement counts Pod Security), not on B's.
	out = b.ok(5*time.Minute, "trigger-job", "-j", "hold/privileged", "-w")
	inOrder(t, out, "selected worker:", " tekton-"+web.ns+"\n", "privileged on a worker that admits it", "succeeded")

	out, code = a.run(5*time.Minute, "trigger-job", "-j", "isolation/pull", "-w")
	t.Logf("team A's task in team B's image: exit %d\n%s", code, out)
	if code == 0 || strings.Contains(out, "ran the image of team-b") {
		errorf(t, "team A's task ran in team B's private image, which the node had pulled for B")
	}
}

// teamFly is fly with the target of one team.
type teamFly struct {
	t    *testing.T
	team string
}

// newTeam makes a team with fly set-team (or gives it again), logs fly in as it, and
// waits for its worker, the namespace ns, to run as the team's.
func newTeam(t *testing.T, team, ns string) teamFly {
	t.Helper()
	flyOK(t, time.Minute, "set-team", "-n", team, "--local-user", "test", "--non-interactive")
	name := "tekton-" + ns
	eventually(t, "worker "+name+" running as team "+team+"'s", time.Minute, func(context.Context) (bool, error) {
		workers, err := listWorkers(t)
		return slices.ContainsFunc(workers, func(w worker) bool {
			return w.Name == name && w.State == "running" && w.Team == team
		}), err
	})
	f := teamFly{t: t, team: team}
	f.ok(time.Minute, "login", "-c", web.url, "-n", team, "-u", "test", "-p", "test")
	return f
}

// run runs fly as the team and returns what it printed and its exit status.
func (f teamFly) run(timeout time.Duration, args ...string) (string, int) {
	f.t.Helper()
	return flyAs(f.t, f.team, timeout, args...)
}

// ok runs fly as the team and fails the test unless it exits 0.
func (f teamFly) ok(timeout time.Duration, args ...string) string {
	f.t.Helper()
	out, code := f.run(timeout, args...)
	if code != 0 {
		fatalf(f.t, "fly -t %s %s: exit %d\n%s", f.team, strings.Join(args, " "), code, out)
	}
	return out
}

// setPipeline sets and unpauses one of the team's pipelines.
func (f teamFly) setPipeline(name, config string) {
	f.t.Helper()
	setPipelineAs(f.t, f.team, name, config)
}
