//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/concourse-tekton/concourse-tekton/e2e/images"
	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/translate"
)

// privateRegistry is a registry that wants a username and password for every request,
// and privateRegistryAuth those, user:password: the harness runs one that its containerd
// pulls from (E2E_PRIVATE_REGISTRY and E2E_PRIVATE_REGISTRY_AUTH on another cluster).
var (
	privateRegistry     = os.Getenv("E2E_PRIVATE_REGISTRY")
	privateRegistryAuth = os.Getenv("E2E_PRIVATE_REGISTRY_AUTH")
)

// TestPrivateRegistryImage runs a task whose image_resource is in a registry that
// refuses anonymous pulls, its password a ((var)) of the namespace's Secrets, as
// Concourse's registry-image resource fetches it with its source's credentials: the task
// runs in that image; the build's Secret of image pull credentials, owned by its
// PipelineRun, holds them, and the PipelineRun does not.
func TestPrivateRegistryImage(t *testing.T) {
	t.Parallel()
	if privateRegistry == "" || privateRegistryAuth == "" {
		t.Skip("no private registry: the harness's cluster sets E2E_PRIVATE_REGISTRY and E2E_PRIVATE_REGISTRY_AUTH; on another cluster, set them to a registry its nodes pull from that wants credentials, and its user:password")
	}
	user, password, _ := strings.Cut(privateRegistryAuth, ":")
	cache := harnessCache(t, "the private registry's image")
	ns := namespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	repo := privateRegistry + "/" + ns + "/busybox"
	busybox := filepath.Join(cache, "images", "busybox.tar")
	if err := images.PushPrivate(ctx, busybox, repo+":private", user, password, "PULLED_WITH=credentials"); err != nil {
		t.Fatal(err)
	}

	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "registry-password"}, StringData: map[string]string{"value": password}}
	if _, err := testCluster.kube.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "private.yml")
	pipeline := fmt.Sprintf(`jobs:
- name: private
  plan:
  - task: private-image
    config:
      platform: linux
      image_resource:
        type: registry-image
        source: {repository: %s, tag: private, username: %s, password: ((registry-password))}
      run: {path: sh, args: [-c, 'echo "pulled with $PULLED_WITH"']}
`, repo, user)
	if err := os.WriteFile(file, []byte(pipeline), 0o644); err != nil {
		t.Fatal(err)
	}
	exit, stdout, stderr := runCLI(t, ctx, "run", file, "-j", "private", "-w", "-n", ns,
		"--runner-image", runnerImage, "--build-volume-size", "64Mi", "--kubeconfig", kubeconfigPath())
	t.Logf("run -j private: exit %d\nstdout:\n%s\nstderr:\n%s", exit, stdout, stderr)
	checkBuild(t, "run", exit, stdout, scenario{wantExit: 0, want: []string{"pulled with credentials"}})

	run, err := testCluster.tekton.TektonV1().PipelineRuns(ns).Get(ctx, translate.RunName("private", "private", "1"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pull, err := testCluster.kube.CoreV1().Secrets(ns).Get(ctx, run.Name+runspec.ImagePullSecretSuffix, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the build's Secret of image pull credentials: %v", err)
	}
	if o := pull.OwnerReferences; len(o) != 1 || o[0].UID != run.UID {
		t.Errorf("the Secret's owners %+v, want the run %s", o, run.UID)
	}
	if pull.Type != corev1.SecretTypeDockerConfigJson || !strings.Contains(string(pull.Data[corev1.DockerConfigJsonKey]), password) {
		t.Errorf("the Secret, of type %s, does not hold the registry's credentials", pull.Type)
	}
	buf, err := json.Marshal(run)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(buf), password) {
		t.Error("the PipelineRun holds the registry's password")
	}
}
