//go:build e2e

// Package helm installs the chart (deploy/helm/concourse-tekton) into the e2e cluster with
// the real helm, as an operator does, and drives the installed web node with the real fly:
// login, set-pipeline, a build that succeeds and one that fails, a helm upgrade in the
// middle of a build (which completes, each of its events once), and a helm uninstall that
// leaves nothing of the release in any namespace.
//
// The e2e cluster has no service proxy and no cluster DNS: the web node reaches the API
// server at the pod bridge's address (`cluster.sh pod-apiserver`, set as its
// KUBERNETES_SERVICE_HOST and _PORT, the variables in-cluster clients read) and an
// external Postgres that the test runs on that address (the chart's
// postgresql.enabled=false), and fly reaches the web node through kubectl port-forward,
// as the chart's notes say.
package helm

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/concourse-tekton/concourse-tekton/atc/e2e/internal/e2eenv"
	"github.com/concourse-tekton/concourse-tekton/atc/internal/pgtest"
)

// repo is the repository's root, from this package's directory.
const repo = "../../.."

const (
	release = "ci"
	// upgradeTag is the web node's image under a second tag, for the upgrade.
	upgradeTag = "e2e-upgrade"
	user       = "test"
)

// imageRegistry and imageTag name the project's images as the cluster has them (make
// images, loaded by cluster.sh load).
var (
	imageRegistry = e2eenv.Or("E2E_IMAGES_REGISTRY", "ghcr.io/concourse-tekton")
	imageTag      = e2eenv.Or("E2E_IMAGES_TAG", "dev")
)

// install is one release of the chart in the cluster, and what drives it.
type install struct {
	t         *testing.T
	kube      kubernetes.Interface
	namespace string // the release's
	builds    string // the builds' namespace the chart makes
	helm      string
	fly       string
	home      string // fly's (its ~/.flyrc)
	port      int    // the local port kubectl port-forward serves the web node on
	forward   *exec.Cmd
	password  string
	db        *sql.DB // the web nodes' database
}

func TestInstall(t *testing.T) {
	kubeconfig := e2eenv.Kubeconfig()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatalf("loading kubeconfig %s (make e2e-up first): %v", kubeconfig, err)
	}
	in := &install{
		t:         t,
		kube:      kubernetes.NewForConfigOrDie(cfg),
		namespace: "helm-e2e-" + rand.String(5),
		helm:      output(t, filepath.Join(repo, "deploy/helm/helm.sh")),
		fly:       filepath.Join(e2eenv.ATCCache(), "bin", "fly"),
		home:      t.TempDir(),
		port:      freePort(t),
		password:  rand.String(16),
	}
	in.builds = in.namespace + "-builds"
	apiserver := e2eenv.Or("E2E_POD_APISERVER", output(t, filepath.Join(repo, "e2e/cluster/cluster.sh"), "pod-apiserver"))
	apiHost, apiPort, err := net.SplitHostPort(apiserver)
	if err != nil {
		t.Fatalf("the API server for pods, %q: %v", apiserver, err)
	}
	db := pgtest.Start(t, apiHost)
	in.db = db.Open(t)

	// The release's namespace enforces Pod Security "restricted": a pod of the chart's
	// that asks for more is refused, and the install fails.
	ctx := context.Background()
	if _, err := in.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:   in.namespace,
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			in.dump()
		}
		in.stopForward()
		// What a failed test left installed, cluster-wide objects included.
		in.helmRun(5*time.Minute, "uninstall", release, "--namespace", in.namespace, "--wait", "--ignore-not-found")
		_ = in.kube.CoreV1().Namespaces().Delete(context.Background(), in.namespace, metav1.DeleteOptions{})
		_ = in.kube.CoreV1().Namespaces().Delete(context.Background(), in.builds, metav1.DeleteOptions{})
	})
	t.Run("default values, server dry run", in.testDryRun)

	in.helmRun(5*time.Minute, "install", release, filepath.Join(repo, "deploy/helm/concourse-tekton"),
		"--namespace", in.namespace, "--wait", "--timeout", "5m",
		"--set", "image.registry="+imageRegistry, "--set", "image.tag="+imageTag,
		"--set", "concourse.web.externalUrl="+in.url(),
		"--set", "secrets.localUsers="+user+":"+in.password,
		"--set", "concourse.web.auth.mainTeam.localUser="+user,
		"--set", "postgresql.enabled=false",
		"--set", "concourse.web.postgres.host="+apiHost, "--set", "concourse.web.postgres.port="+strconv.Itoa(db.Port),
		"--set", "secrets.postgresUser=concourse", "--set", "secrets.postgresPassword="+db.Password,
		"--set", "tekton.resourceImages.mock="+e2eenv.MockImage,
		"--set", "tekton.heartbeatInterval=5s",
		"--set", "web.replicas=2",
		"--set-json", fmt.Sprintf(`concourse.web.env=[{"name":"KUBERNETES_SERVICE_HOST","value":%q},{"name":"KUBERNETES_SERVICE_PORT","value":%q}]`, apiHost, apiPort),
	)
	in.startForward()
	in.flyOK(time.Minute, "login", "-c", in.url(), "-u", user, "-p", in.password)
	in.waitForWorker("tekton-" + in.builds)

	t.Run("builds", in.testBuilds)
	// What the web nodes logged, before the next test replaces them.
	if !t.Run("artifacts across web nodes", in.testArtifacts) {
		in.dump()
	}
	if !t.Run("web node tracking a build deleted", in.testFailover) {
		in.dump()
	}
	t.Run("upgrade mid-build", in.testUpgrade)
	t.Run("uninstall", in.testUninstall)
}

// testDryRun renders the chart with its default values (the bundled Postgres included)
// and has the API server validate every object, as kubectl apply --dry-run=server does.
// The builds' namespace exists for it (a dry run makes no namespace for what goes in it).
func (in *install) testDryRun(t *testing.T) {
	ctx := context.Background()
	if _, err := in.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: in.builds}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = in.kube.CoreV1().Namespaces().Delete(ctx, in.builds, metav1.DeleteOptions{})
		deadline := time.Now().Add(2 * time.Minute)
		for time.Now().Before(deadline) {
			if _, err := in.kube.CoreV1().Namespaces().Get(ctx, in.builds, metav1.GetOptions{}); apierrors.IsNotFound(err) {
				return
			}
			time.Sleep(time.Second)
		}
		t.Errorf("namespace %s is still there", in.builds)
	}()
	rendered := in.helmOutput(time.Minute, "template", release, filepath.Join(repo, "deploy/helm/concourse-tekton"), "--namespace", in.namespace)
	cmd := exec.Command(filepath.Join(repo, "e2e/cluster/cluster.sh"), "kubectl", "apply", "--dry-run=server", "-f", "-")
	cmd.Stdin = bytes.NewReader(rendered)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl apply --dry-run=server of the default values: %v\n%s", err, out)
	}
	for _, kind := range []string{"deployment.apps/", "statefulset.apps/", "role.rbac", "clusterrole.rbac", "secret/", "namespace/"} {
		if !strings.Contains(string(out), kind) {
			t.Errorf("the dry run applied no %s:\n%s", kind, out)
		}
	}
}

const pipeline = `
jobs:
- name: pass
  plan:
  - task: hello
    config:
      platform: linux
      image_resource: {type: registry-image, source: {repository: %[1]s, tag: "%[2]s"}}
      run: {path: sh, args: [-c, 'echo hello from the chart']}
- name: fail
  plan:
  - task: exit-3
    config:
      platform: linux
      image_resource: {type: registry-image, source: {repository: %[1]s, tag: "%[2]s"}}
      run: {path: sh, args: [-c, 'echo failing; exit 3']}
- name: slow
  plan:
  - task: wait
    config:
      platform: linux
      image_resource: {type: registry-image, source: {repository: %[1]s, tag: "%[2]s"}}
      run: {path: sh, args: [-c, 'echo started-slow; sleep 45; echo done-after-upgrade']}
`

func (in *install) testBuilds(t *testing.T) {
	repository, tag, _ := strings.Cut(e2eenv.BusyboxImage, ":")
	file := filepath.Join(t.TempDir(), "pipeline.yml")
	if err := os.WriteFile(file, []byte(fmt.Sprintf(pipeline, repository, tag)), 0o644); err != nil {
		t.Fatal(err)
	}
	in.flyOK(time.Minute, "set-pipeline", "-n", "-p", "chart", "-c", file)
	in.flyOK(time.Minute, "unpause-pipeline", "-p", "chart")

	out, code := in.flyRun(3*time.Minute, "trigger-job", "-j", "chart/pass", "-w")
	if code != 0 || !strings.Contains(out, "hello from the chart") || !strings.Contains(out, "succeeded") {
		t.Errorf("trigger-job -w chart/pass: exit %d, want 0 with the task's output:\n%s", code, out)
	}
	out, code = in.flyRun(3*time.Minute, "trigger-job", "-j", "chart/fail", "-w")
	if code != 3 || !strings.Contains(out, "failing") || !strings.Contains(out, "failed") {
		t.Errorf("trigger-job -w chart/fail: exit %d, want 3 (the task's) with its output:\n%s", code, out)
	}
}

// testUpgrade upgrades the release to another tag of the web node's image while a build
// runs: the old web node stops, the new one takes the build up, and the build's events,
// as fly watch shows them, are each there once.
func (in *install) testUpgrade(t *testing.T) {
	in.clusterSh("ctr", "images", "tag", "--force", imageRegistry+"/web:"+imageTag, imageRegistry+"/web:"+upgradeTag)
	in.flyOK(time.Minute, "trigger-job", "-j", "chart/slow")
	in.waitStarted(t)
	in.stopForward()
	in.helmRun(5*time.Minute, "upgrade", release, filepath.Join(repo, "deploy/helm/concourse-tekton"),
		"--namespace", in.namespace, "--reuse-values", "--wait", "--timeout", "5m", "--set", "image.tag="+upgradeTag)
	pods, err := in.kube.CoreV1().Pods(in.namespace).List(context.Background(), metav1.ListOptions{
		LabelSelector: "app.kubernetes.io/instance=" + release + ",app.kubernetes.io/component=web"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Spec.Containers[0].Image != imageRegistry+"/web:"+upgradeTag {
			t.Fatalf("after the upgrade, web pod %s runs %s", p.Name, p.Spec.Containers[0].Image)
		}
	}
	in.startForward()
	out, code := in.flyRun(4*time.Minute, "watch", "-j", "chart/slow")
	if code != 0 {
		t.Fatalf("fly watch chart/slow after the upgrade: exit %d, want 0:\n%s", code, out)
	}
	// The task's lines, each once (the "running sh -c ..." line names them too).
	for _, want := range []string{"started-slow", "done-after-upgrade"} {
		if n := linesOf(out, want); n != 1 {
			t.Errorf("fly watch shows the line %q %d times, want once:\n%s", want, n, out)
		}
	}
}

// testUninstall removes the release: nothing of it is left in any namespace, and the
// builds' namespace it made goes with every build in it.
func (in *install) testUninstall(t *testing.T) {
	in.stopForward()
	in.helmRun(5*time.Minute, "uninstall", release, "--namespace", in.namespace, "--wait", "--timeout", "5m")
	ctx := context.Background()
	selector := metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + release + ",app.kubernetes.io/name=concourse-tekton"}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		left := in.leftOf(ctx, selector)
		if _, err := in.kube.CoreV1().Namespaces().Get(ctx, in.builds, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			left = append(left, "namespace "+in.builds)
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("left after helm uninstall: %s", strings.Join(left, ", "))
		}
		time.Sleep(2 * time.Second)
	}
}

// leftOf lists what of the release is still in the cluster, by its labels.
func (in *install) leftOf(ctx context.Context, selector metav1.ListOptions) []string {
	var left []string
	add := func(kind string, err error, names ...string) {
		if err != nil {
			left = append(left, fmt.Sprintf("%s (%v)", kind, err))
		}
		for _, n := range names {
			left = append(left, kind+" "+n)
		}
	}
	pods, err := in.kube.CoreV1().Pods(in.namespace).List(ctx, selector)
	add("pod", err, names(pods.Items, func(p corev1.Pod) string { return p.Name })...)
	secrets, err := in.kube.CoreV1().Secrets(in.namespace).List(ctx, selector)
	add("secret", err, names(secrets.Items, func(s corev1.Secret) string { return s.Name })...)
	services, err := in.kube.CoreV1().Services(in.namespace).List(ctx, selector)
	add("service", err, names(services.Items, func(s corev1.Service) string { return s.Name })...)
	claims, err := in.kube.CoreV1().PersistentVolumeClaims(in.namespace).List(ctx, metav1.ListOptions{})
	add("persistentvolumeclaim", err, names(claims.Items, func(c corev1.PersistentVolumeClaim) string { return c.Name })...)
	accounts, err := in.kube.CoreV1().ServiceAccounts(in.namespace).List(ctx, selector)
	add("serviceaccount", err, names(accounts.Items, func(s corev1.ServiceAccount) string { return s.Name })...)
	roles, err := in.kube.RbacV1().Roles("").List(ctx, selector)
	add("role", err, names(roles.Items, func(r rbacv1.Role) string { return r.Namespace + "/" + r.Name })...)
	clusterRoles, err := in.kube.RbacV1().ClusterRoles().List(ctx, selector)
	add("clusterrole", err, names(clusterRoles.Items, func(r rbacv1.ClusterRole) string { return r.Name })...)
	bindings, err := in.kube.RbacV1().ClusterRoleBindings().List(ctx, selector)
	add("clusterrolebinding", err, names(bindings.Items, func(r rbacv1.ClusterRoleBinding) string { return r.Name })...)
	return left
}

func names[T any](items []T, name func(T) string) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = name(it)
	}
	return out
}

func (in *install) url() string { return "http://127.0.0.1:" + strconv.Itoa(in.port) }

// startForward runs kubectl port-forward to the web node's Service, as the chart's notes
// say, and waits until the web node answers through it.
func (in *install) startForward() {
	in.t.Helper()
	in.forward = in.portForward(in.t, "service/"+release+"-concourse-tekton-web", in.port)
}

func (in *install) stopForward() {
	if in.forward != nil {
		stopGroup(in.forward)
		in.forward = nil
	}
}

// portForward runs kubectl port-forward of the web node's port on resource (a Service, a
// pod) to port here, and waits until the web node answers through it.
func (in *install) portForward(t testing.TB, resource string, port int) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(filepath.Join(repo, "e2e/cluster/cluster.sh"), "kubectl", "--namespace", in.namespace,
		"port-forward", resource, fmt.Sprintf("%d:8080", port))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// A group of its own: cluster.sh runs kubectl as its child, and both must go.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("http://127.0.0.1:%d/api/v1/info", port)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Second) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return cmd
			}
		}
		if time.Now().After(deadline) {
			stopGroup(cmd)
			t.Fatalf("kubectl port-forward of %s did not serve the web node:\n%s", resource, out.String())
		}
	}
}

// stopGroup kills a command's process group, and waits for it.
func stopGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	}
}

// waitForWorker waits until fly workers lists the worker, running.
func (in *install) waitForWorker(name string) {
	in.t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		out, _ := in.flyRun(30*time.Second, "workers")
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) > 0 && f[0] == name && strings.Contains(line, "running") {
				return
			}
		}
		if time.Now().After(deadline) {
			in.t.Fatalf("worker %s is not running:\n%s", name, out)
		}
		time.Sleep(2 * time.Second)
	}
}

func (in *install) flyRun(timeout time.Duration, args ...string) (string, int) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, in.fly, append([]string{"-t", release}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+in.home)
	out, err := cmd.CombinedOutput()
	code := 0
	if err != nil {
		code = -1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
	}
	return string(out), code
}

func (in *install) flyOK(timeout time.Duration, args ...string) string {
	in.t.Helper()
	out, code := in.flyRun(timeout, args...)
	if code != 0 {
		in.t.Fatalf("fly %s: exit %d\n%s", strings.Join(args, " "), code, out)
	}
	return out
}

func (in *install) helmRun(timeout time.Duration, args ...string) {
	in.t.Helper()
	in.helmOutput(timeout, args...)
}

// helmOutput runs helm with args, on the e2e cluster, and returns its standard output.
func (in *install) helmOutput(timeout time.Duration, args ...string) []byte {
	in.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout+time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, in.helm, args...)
	// Not t.TempDir: helm runs in the test's cleanup too.
	home, err := os.MkdirTemp("", "helm-home-")
	if err != nil {
		in.t.Fatal(err)
	}
	defer os.RemoveAll(home)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+e2eenv.Kubeconfig(),
		"HELM_CACHE_HOME="+home, "HELM_CONFIG_HOME="+home, "HELM_DATA_HOME="+home)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		in.t.Fatalf("helm %s: %v\n%s%s", args[0], err, out, stderr.String())
	}
	return out
}

func (in *install) clusterSh(args ...string) string {
	in.t.Helper()
	return output(in.t, filepath.Join(repo, "e2e/cluster/cluster.sh"), args...)
}

// dump prints what a failed install left to read: the release's pods, their logs and the
// namespace's events.
func (in *install) dump() {
	for _, ns := range []string{in.namespace, in.builds} {
		out, _ := exec.Command(filepath.Join(repo, "e2e/cluster/cluster.sh"), "kubectl", "--namespace", ns,
			"get", "all,events", "-o", "wide").CombinedOutput()
		in.t.Logf("namespace %s:\n%s", ns, out)
	}
	out, _ := exec.Command(filepath.Join(repo, "e2e/cluster/cluster.sh"), "kubectl", "--namespace", in.namespace,
		"logs", "-l", "app.kubernetes.io/component=web", "--tail", "80", "--all-containers").CombinedOutput()
	in.t.Logf("the web node's log:\n%s", out)
}

func output(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, msg)
	}
	return strings.TrimSpace(string(out))
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
