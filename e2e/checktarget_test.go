//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tektoncd/pipeline/pkg/client/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/concourse-tekton/concourse-tekton/tektonrun"
)

// TestCheckTarget gives a service account part of what the backend needs: Check, asked
// as that account, lists exactly the rest, and check-target says so and exits 1.
func TestCheckTarget(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	ctx := context.Background()

	admin, err := tektonrun.NewTarget(tektonrun.TargetOptions{Kubeconfig: kubeconfigPath(), Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	if r := admin.Check(ctx); !r.OK() {
		t.Fatalf("the cluster's admin cannot run builds in %s: %+v", ns, r)
	} else if r.Runner == nil || !r.Runner.Mounted {
		t.Errorf("the check says builds do not mount the runner on this cluster (Kubernetes 1.36, containerd 2.3): %+v", r.Runner)
	}
	// The namespace's Pod Security level, as the admin reads it.
	enforce(t, ns, "baseline")
	if r := admin.Check(ctx); !r.OK() || r.PodSecurity == nil || r.PodSecurity.Level != "baseline" ||
		len(r.PodSecurity.Rejected) != 1 || !strings.HasPrefix(r.PodSecurity.Rejected[0].Steps, "privileged steps") {
		t.Errorf("under baseline: %+v, %+v; want OK, privileged steps rejected", r, r.PodSecurity)
	}
	enforce(t, ns, "restricted")
	// The harness's Tekton sets its init containers' security contexts: only the tasks of
	// a numeric non-root run.user pass.
	if r := admin.Check(ctx); r.OK() || r.PodSecurity == nil || len(r.PodSecurity.Rejected) != 3 || !r.PodSecurity.TektonSecurityContext {
		t.Errorf("under restricted: %+v, %+v; want not OK, every kind of step but tasks of a numeric run.user rejected", r, r.PodSecurity)
	}
	enforce(t, ns, "")

	var granted, want []tektonrun.Permission
	for _, p := range tektonrun.Permissions {
		if (p.Group == "tekton.dev" && p.Resource != "taskruns") || p == (tektonrun.Permission{Resource: "pods", Subresource: "log", Verb: "get"}) {
			granted = append(granted, p)
		} else {
			want = append(want, p)
		}
	}
	user := grant(t, ns, "worker", granted)

	cfg := rest.CopyConfig(admin.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tekton, err := versioned.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	worker := tektonrun.NewTargetFromClients(ns, kube, tekton)
	// The RBAC authorizer learns of a new Role from its informers, a moment later.
	var got tektonrun.CheckReport
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		got = worker.Check(ctx)
		return slices.Equal(want, got.Missing), nil
	})
	if !got.Reachable || !got.TektonInstalled || got.Err != nil {
		t.Errorf("report %+v, want reachable, Tekton installed, no error", got)
	}
	if diff := cmp.Diff(want, got.Missing); diff != "" {
		t.Errorf("missing as %s after %v (-want +got):\n%s", user, err, diff)
	}

	// The Role is the namespace's: elsewhere, the account may do nothing.
	elsewhere := tektonrun.NewTargetFromClients("default", kube, tekton).Check(ctx)
	if diff := cmp.Diff(tektonrun.Permissions, elsewhere.Missing); diff != "" {
		t.Errorf("missing in namespace default (-want +got):\n%s", diff)
	}

	// The CLI, with a kubeconfig that impersonates the account.
	code, stdout := checkTargetCLI(t, impersonatingKubeconfig(t, user), "-n", ns)
	wantOut := "✓ API server " + admin.Config.Host + " answers (" + got.ServerVersion + ")\n" +
		"✓ Tekton Pipelines (tekton.dev/v1) is installed\n" +
		"✗ missing permissions in namespace " + ns + " (" + strconv.Itoa(len(want)) + "):\n"
	for _, p := range want {
		wantOut += "    " + p.String() + "\n"
	}
	wantOut += "? Pod Security level unknown: namespace " + ns + " cannot be read (get namespaces is not granted)\n" +
		"! step pods copy the runner in, with a container of their own: the nodes' versions cannot be read (list nodes is not granted)\n"
	if code != 1 {
		t.Errorf("check-target exited %d, want 1", code)
	}
	if diff := cmp.Diff(wantOut, stdout); diff != "" {
		t.Errorf("check-target's output (-want +got):\n%s", diff)
	}
}

// TestCheckTargets: check-target --targets checks the web node's workers, here a shared
// namespace that admits privileged pods and a team's that enforces baseline, and says
// where each team's steps run: the team's on its own worker, but its privileged ones on
// the shared one; every other team's on the shared one.
func TestCheckTargets(t *testing.T) {
	t.Parallel()
	shared, team := namespace(t), namespace(t)
	enforce(t, team, "baseline")
	file := filepath.Join(t.TempDir(), "targets.yml")
	if err := os.WriteFile(file, []byte("- namespace: "+team+"\n  in_cluster: true\n  team: ml\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout := checkTargetCLI(t, kubeconfigPath(), "-n", shared, "--targets", file)
	if code != 0 {
		t.Errorf("check-target --targets exited %d, want 0\n%s", code, stdout)
	}
	for _, want := range []string{
		"worker tekton-" + shared + " (namespace " + shared + ", every team's):\n",
		"\nworker tekton-" + team + " (namespace " + team + ", team ml's):\n",
		"\nwhere each team's steps run:\n" +
			"    team ml, steps without tags: tekton-" + team + " (the team's own); privileged ones on tekton-" + shared + "\n" +
			"    every other team, steps without tags: tekton-" + shared + "; privileged ones on tekton-" + shared + "\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("check-target --targets does not say %q:\n%s", want, stdout)
		}
	}
}

// grant creates a service account with a Role of exactly perms in ns, and returns the
// user name to impersonate it.
func grant(t *testing.T, ns, name string, perms []tektonrun.Permission) string {
	t.Helper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := testCluster.kube.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating service account: %v", err)
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, p := range perms {
		resource := p.Resource
		if p.Subresource != "" {
			resource += "/" + p.Subresource
		}
		role.Rules = append(role.Rules, rbacv1.PolicyRule{APIGroups: []string{p.Group}, Resources: []string{resource}, Verbs: []string{p.Verb}})
	}
	if _, err := testCluster.kube.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating role: %v", err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}},
	}
	if _, err := testCluster.kube.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating role binding: %v", err)
	}
	return "system:serviceaccount:" + ns + ":" + name
}

// impersonatingKubeconfig writes the harness's kubeconfig with its user acting as user.
func impersonatingKubeconfig(t *testing.T, user string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(kubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	for _, auth := range cfg.AuthInfos {
		auth.Impersonate = user
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// checkTargetCLI runs `concourse-tekton check-target` the way a user would.
func checkTargetCLI(t *testing.T, kubeconfig string, args ...string) (code int, stdout string) {
	t.Helper()
	cmd := exec.Command(cliBinary(t), append([]string{"check-target", "--kubeconfig", kubeconfig}, args...)...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("check-target: %v\n%s", err, stderr.String())
	}
	if s := strings.TrimPrefix(stderr.String(), "exit status 1\n"); s != "" {
		t.Logf("check-target's stderr:\n%s", s)
	}
	return code, out.String()
}

// enforce sets the namespace's enforced Pod Security level ("" removes it).
func enforce(t *testing.T, ns, level string) {
	t.Helper()
	patch := `{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":null}}}`
	if level != "" {
		patch = `{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"` + level + `"}}}`
	}
	if _, err := testCluster.kube.CoreV1().Namespaces().Patch(context.Background(), ns, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("labelling namespace %s: %v", ns, err)
	}
}
