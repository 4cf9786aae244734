//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/concourse-tekton/concourse-tekton/atc/e2e/internal/e2eenv"
	"github.com/concourse-tekton/concourse-tekton/e2e/images"
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// TestPrivateRegistryImage: a task whose image_resource is in a registry that refuses
// anonymous pulls, its password from the pipeline's var source, runs in that image, as on
// workers, where the registry-image resource fetches it with its source's credentials.
// The run's Secret of image pull credentials holds them, and no Tekton object does; fly
// never shows the password. So does a task whose config is a file a task of the build
// wrote, its image private, the password a ((var)) no plan holds.
func TestPrivateRegistryImage(t *testing.T) {
	dumpOnFailure(t)
	t.Parallel()
	registry, auth := os.Getenv("E2E_PRIVATE_REGISTRY"), os.Getenv("E2E_PRIVATE_REGISTRY_AUTH")
	if registry == "" || auth == "" {
		t.Skip("no private registry: the harness sets E2E_PRIVATE_REGISTRY and E2E_PRIVATE_REGISTRY_AUTH (user:password)")
	}
	user, password, _ := strings.Cut(auth, ":")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	repo := registry + "/atc-" + web.ns + "/busybox"
	busyboxTar := filepath.Join(e2eenv.CacheDir(), "concourse-tekton", "images", "busybox.tar")
	if err := images.PushPrivate(ctx, busyboxTar, repo+":private", user, password, "PULLED_WITH=credentials"); err != nil {
		fatal(t, err)
	}
	// The task file's image is one of its own: the node has not pulled it for the first
	// job, and pulls it with the credentials the file gives, or not at all.
	if err := images.PushPrivate(ctx, busyboxTar, repo+":file", user, password, "PULLED_WITH=the-file-credentials"); err != nil {
		fatal(t, err)
	}
	// A task of the build writes the file: its image and ((vars)) are in no plan.
	file := fmt.Sprintf(`platform: linux
image_resource:
  type: registry-image
  source: {repository: %s, tag: file, username: %s, password: ((dm:registry_password))}
run: {path: sh, args: [-c, 'echo "ran the file in its private image, pulled with $PULLED_WITH"']}
`, repo, user)

	setPipeline(t, "private", fmt.Sprintf(`
var_sources:
- name: dm
  type: dummy
  config:
    vars: {registry_password: %[3]s}
jobs:
- name: private
  plan:
  - task: private-image
    config:
      platform: linux
      image_resource:
        type: registry-image
        source: {repository: %[1]s, tag: private, username: %[2]s, password: ((dm:registry_password))}
      run: {path: sh, args: [-c, 'echo "ran in the private image, pulled with $PULLED_WITH"']}
- name: from-file
  plan:%[4]s
  - task: from-file
    file: ci/task.yml
`, repo, user, password, writeTaskFile(file)))
	// build triggers a job of the pipeline, wants want in its output, and returns its
	// run's Secret of image pull credentials, which must hold them.
	build := func(job, want string) *corev1.Secret {
		out, code := fly(t, 5*time.Minute, "trigger-job", "-j", "private/"+job, "-w")
		t.Logf("fly trigger-job -j private/%s -w: exit %d\n%s", job, code, out)
		if code != 0 {
			errorf(t, "exit %d, want 0", code)
		}
		inOrder(t, out, want, "succeeded")
		if strings.Contains(out, password) {
			errorf(t, "fly's output shows the registry's password")
		}
		run := pipelineRun(t, "private", job)
		// A context of its own: the pushes' may have run out while the builds ran.
		get, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		s, err := web.kube.CoreV1().Secrets(web.ns).Get(get, run+runspec.ImagePullSecretSuffix, metav1.GetOptions{})
		if err != nil {
			fatalf(t, "the run's Secret of image pull credentials: %v", err)
		}
		if o := s.OwnerReferences; len(o) != 1 || o[0].Kind != "PipelineRun" || o[0].Name != run {
			errorf(t, "the Secret's owners %+v, want PipelineRun %s", o, run)
		}
		if s.Type != corev1.SecretTypeDockerConfigJson || !strings.Contains(string(s.Data[corev1.DockerConfigJsonKey]), password) {
			errorf(t, "the Secret, of type %s, does not hold the registry's credentials", s.Type)
		}
		return s
	}
	build("private", "ran in the private image, pulled with credentials")
	// A task file read at run time: its resolve step gives the credentials as the file
	// writes them, and the web node adds them, looked up, to the run's Secret (made
	// without them) before the task's pod pulls its image.
	build("from-file", "ran the file in its private image, pulled with the-file-credentials")

	for _, obj := range tektonObjects(t) {
		if strings.Contains(obj, password) {
			errorf(t, "a Tekton object holds the registry's password: %.200s", obj)
		}
	}
}
