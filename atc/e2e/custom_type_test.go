//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/concourse-tekton/concourse-tekton/atc/e2e/internal/e2eenv"
)

// gitResourceImage is the git resource type's image (e2e/resource/git), which the main
// module's e2e cluster has loaded.
var gitResourceImage = e2eenv.Or("E2E_GIT_IMAGE", "e2e.invalid/git-resource:v1")

// TestCustomResourceType: checks of resources of a custom resource type run on the
// cluster as Concourse runs them: the type's check first, then the resource's in the
// type's image. So do checks of the type itself, of a type whose type is a custom type,
// and lidar's own; the versions found trigger a job that gets the resources, and runs a
// task in an image the mock fetches of itself.
func TestCustomResourceType(t *testing.T) {
	dumpOnFailure(t)
	t.Parallel()
	setPipeline(t, "custom", fmt.Sprintf(`
resource_types:
- name: custom-resource-type
  type: mock
  source: {mirror_self: true}
- name: of-custom-type
  type: custom-resource-type
  source: {mirror_self: true}
resources:
- name: custom-resource
  type: custom-resource-type
  check_every: 1h
  source:
    force_version: custom-v1
    create_files: {hello.txt: hi from a custom type}
- name: chained
  type: of-custom-type
  check_every: 10s
  source: {initial_version: chained-v1}
jobs:
- name: use
  plan:
  - in_parallel:
    - {get: custom-resource, trigger: true}
    - {get: chained, trigger: true}
  - task: show
    config:
      platform: linux
      image_resource: %s
      inputs: [{name: custom-resource}, {name: chained}]
      run:
        path: sh
        args: [-c, 'echo got $(cat custom-resource/version): $(cat custom-resource/hello.txt), and $(cat chained/version)']
  - task: mirrored
    config:
      platform: linux
      image_resource: {type: custom-resource-type, source: {mirror_self: true, initial_version: image-version}}
      run: {path: sh, args: [-c, 'echo mirrored $MIRRORED_VERSION']}
`, busybox()))
	// chained is checked every 10 s: a pod or two each time, while the other tests run.
	t.Cleanup(func() {
		if out, code := fly(t, time.Minute, "pause-pipeline", "-p", "custom"); code != 0 {
			t.Logf("fly pause-pipeline -p custom: exit %d\n%s", code, out)
		}
	})

	out := flyOK(t, 5*time.Minute, "check-resource", "-r", "custom/custom-resource")
	inOrder(t, out, "checking custom/custom-resource", "succeeded")
	if vs := versions(t, "custom/custom-resource"); !slices.Equal(vs, []string{"custom-v1"}) {
		errorf(t, "fly resource-versions: %q; want [custom-v1]", vs)
	}

	// The type itself (of a base type).
	out = flyOK(t, 5*time.Minute, "check-resource-type", "-r", "custom/custom-resource-type")
	inOrder(t, out, "checking custom/custom-resource-type", "succeeded")

	// A resource of a type whose type is a custom type, checked by lidar alone (in-memory
	// check builds, whose type checks run before they have an ID).
	eventually(t, "lidar to find chained-v1", 3*time.Minute, func(context.Context) (bool, error) {
		return slices.Equal(versions(t, "custom/chained"), []string{"chained-v1"}), nil
	})
	// The job gets both. A task whose image is the mock fetching itself, through the
	// custom type, has the environment the fetched image's metadata.json gives.
	inOrder(t, watchBuild(t, "custom", "use", "1"), "got custom-v1: hi from a custom type, and chained-v1", "mirrored image-version", "succeeded")
}

// TestCheckSavesEveryVersion: a check from a version gives that version and every one
// after it, all saved in order, as Concourse's check step saves them: here the commits of
// a git repository after the one checked from, at last many more than Tekton's results
// carry (which the step's log then carries, in a line longer than the 16 KiB a container
// runtime writes of a line at once), and no one sees that line.
func TestCheckSavesEveryVersion(t *testing.T) {
	const commits = 400
	addr, refs := gitServer(t, commits)
	useWebNode(t, gitWebNode(t))
	dumpOnFailure(t) // of this test's web node

	setPipeline(t, "versions", fmt.Sprintf(`
resources:
- name: repo
  type: git
  check_every: 1h
  source: {uri: "git://%s/repo.git", branch: main}
jobs:
- name: fetch
  plan: [{get: repo}]
`, addr))
	check := func(from string) string {
		t.Helper()
		args := []string{"check-resource", "-r", "versions/repo"}
		if from != "" {
			args = append(args, "-f", "ref:"+from)
		}
		return flyOK(t, 5*time.Minute, args...)
	}
	newestFirst := func(refs []string) []string {
		out := slices.Clone(refs)
		slices.Reverse(out)
		return out
	}

	// The first check: the latest commit only, as resources do.
	check("")
	if got := versionsOf(t, "versions/repo", "ref"); !slices.Equal(got, []string{refs[commits-1]}) {
		errorf(t, "after the first check: %q; want the last commit, %s", got, refs[commits-1])
	}
	// From the fourth commit before the last: all four.
	check(refs[commits-4])
	if got, want := versionsOf(t, "versions/repo", "ref"), newestFirst(refs[commits-4:]); !slices.Equal(got, want) {
		errorf(t, "after the check from %s:\n got  %q\n want %q", refs[commits-4], got, want)
	}
	// From the first commit: every one, though they are many more than Tekton's results
	// carry.
	out := check(refs[0])
	if strings.Contains(out, "concourse-tekton;") {
		errorf(t, "the check's output shows the versions' frame:\n%.2000s", out)
	}
	if got, want := versionsOf(t, "versions/repo", "ref"), newestFirst(refs); !slices.Equal(got, want) {
		errorf(t, "after the check from the first commit: %d versions, want all %d, newest first:\n got  %.300q...\n want %.300q...", len(got), len(want), got, want)
	}
}

// gitServer serves a repository of n commits on branch main from a git daemon in the web
// node's namespace, and returns its address and the commits, oldest first.
var commitLines = regexp.MustCompile(`(?m)^[0-9a-f]{40}$`)

func gitServer(t *testing.T, n int) (addr string, refs []string) {
	t.Helper()
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "git-server"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "main", Image: gitResourceImage, ImagePullPolicy: corev1.PullIfNotPresent,
			Env: []corev1.EnvVar{
				{Name: "GIT_AUTHOR_NAME", Value: "e2e"}, {Name: "GIT_AUTHOR_EMAIL", Value: "e2e@e2e.invalid"},
				{Name: "GIT_COMMITTER_NAME", Value: "e2e"}, {Name: "GIT_COMMITTER_EMAIL", Value: "e2e@e2e.invalid"},
				{Name: "HOME", Value: "/tmp"},
			},
			// The commits in one git process (fast-import), not three each: on a loaded
			// machine hundreds of git processes took minutes.
			Command: []string{"sh", "-c", fmt.Sprintf(`set -e
git init -q --bare -b main /repos/repo.git && cd /repos/repo.git
i=0; while [ $i -lt %d ]; do
  printf 'commit refs/heads/main\ncommitter e2e <e2e@e2e.invalid> %%d +0000\ndata <<EOT\ncommit %%d\nEOT\nM 644 inline n\ndata <<EOT\n%%d\nEOT\n\n' $((1700000000+i)) $i $i
  i=$((i+1))
done | git fast-import --quiet
git rev-list --reverse main
exec git daemon --reuseaddr --export-all --base-path=/repos /repos`, n)},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(9418)}}, PeriodSeconds: 1},
		}}},
	}
	if _, err := web.kube.CoreV1().Pods(web.ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		fatal(t, err)
	}
	t.Cleanup(func() {
		if err := web.kube.CoreV1().Pods(web.ns).Delete(context.Background(), pod.Name, metav1.DeleteOptions{}); err != nil {
			t.Logf("deleting pod %s: %v", pod.Name, err)
		}
	})
	var ip string
	last := &corev1.Pod{}
	if err := pollErr(ctx, 5*time.Minute, func(ctx context.Context) (bool, error) {
		p, err := web.kube.CoreV1().Pods(web.ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, client(err)
		}
		last, ip = p, p.Status.PodIP
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				return c.Status == corev1.ConditionTrue && ip != "", nil
			}
		}
		return false, nil
	}); err != nil {
		fatalf(t, "waiting for the git server to be ready: %v\nits status: %s", err, podStatus(last))
	}
	// The log may lag behind the daemon, and holds its complaints about the readiness
	// probe's connections: the commits are its lines of 40 hex digits.
	eventually(t, "the git server to log its commits", time.Minute, func(ctx context.Context) (bool, error) {
		log, err := web.kube.CoreV1().Pods(web.ns).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		refs = commitLines.FindAllString(string(log), -1)
		return len(refs) == n, err
	})
	return ip, refs
}

// podStatus is a pod's phase, conditions and containers' states, for a failure's message.
func podStatus(p *corev1.Pod) string {
	b, err := json.Marshal(struct {
		Phase      corev1.PodPhase          `json:"phase,omitempty"`
		Conditions []corev1.PodCondition    `json:"conditions,omitempty"`
		Containers []corev1.ContainerStatus `json:"containers,omitempty"`
	}{p.Status.Phase, p.Status.Conditions, p.Status.ContainerStatuses})
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// gitWebNode starts, for the test, a web node of its own beside the tests' (its database,
// ports and fly target; the same namespace), whose worker has the git resource type, and
// stops it when the test ends.
func gitWebNode(t *testing.T) *webNode {
	t.Helper()
	w := *web
	tmp := t.TempDir()
	home := filepath.Join(tmp, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		fatal(t, err)
	}
	webPort, pgPort, err := freePorts()
	if err != nil {
		fatal(t, err)
	}
	w.state = filepath.Join(tmp, "web")
	w.url = "http://127.0.0.1:" + strconv.Itoa(webPort)
	// Later variables win: these replace the tests' web node's.
	w.env = append(slices.Clone(web.env),
		"HOME="+home,
		"CONCOURSE_TEKTON_WEB_STATE="+w.state,
		"CONCOURSE_TEKTON_WEB_PORT="+strconv.Itoa(webPort),
		"CONCOURSE_TEKTON_PG_PORT="+strconv.Itoa(pgPort),
		"CONCOURSE_TEKTON_RESOURCE_IMAGE=mock="+mockImage+",git="+gitResourceImage,
	)
	t.Cleanup(func() {
		if out, err := w.webSh("down"); err != nil {
			t.Logf("web.sh down: %v\n%s", err, out)
		}
	})
	if out, err := w.webSh("up"); err != nil {
		fatalf(t, "web.sh up: %v\n%s%s", err, out, w.logTail(40))
	}
	return &w
}

// useWebNode makes the helpers (fly, builds, dumpOnFailure) drive w until the test ends.
func useWebNode(t *testing.T, w *webNode) {
	tests := web
	web = w
	t.Cleanup(func() { web = tests })
}
