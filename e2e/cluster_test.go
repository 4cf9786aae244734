//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/pkg/apis"
)

// TestTaskRunScriptLog runs a script step for real and reads its log through the API.
func TestTaskRunScriptLog(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	ctx := context.Background()
	tr := &pipelinev1.TaskRun{
		ObjectMeta: metav1.ObjectMeta{Name: "hello"},
		Spec: pipelinev1.TaskRunSpec{TaskSpec: &pipelinev1.TaskSpec{
			Steps: []pipelinev1.Step{{Name: "greet", Image: busyboxImage, Script: "#!/bin/sh\necho hello from $(uname -s)\n"}},
		}},
	}
	created, err := testCluster.tekton.TektonV1().TaskRuns(ns).Create(ctx, tr, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating TaskRun: %v", err)
	}
	// Tekton's webhook defaults the spec synchronously: proof it is in the path.
	if created.Spec.Timeout == nil || created.Spec.ServiceAccountName == "" {
		t.Errorf("TaskRun was not defaulted by Tekton's webhook: timeout %v, service account %q", created.Spec.Timeout, created.Spec.ServiceAccountName)
	}
	got := waitTaskRun(t, ns, "hello")
	mustSucceed(t, "TaskRun", "hello", got.Status.GetCondition(apis.ConditionSucceeded))
	logs, err := podLogs(ctx, ns, got.Status.PodName, "step-greet")
	if err != nil {
		t.Fatal(err)
	}
	if want := "hello from Linux\n"; logs != want {
		t.Errorf("step log %q, want %q", logs, want)
	}
}

// TestWebhookRejectsInvalidTaskRun shows the apiserver validates Tekton objects.
func TestWebhookRejectsInvalidTaskRun(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	tr := &pipelinev1.TaskRun{
		ObjectMeta: metav1.ObjectMeta{Name: "invalid"},
		Spec: pipelinev1.TaskRunSpec{TaskSpec: &pipelinev1.TaskSpec{
			Steps: []pipelinev1.Step{{Name: "no-image", Script: "true"}},
		}},
	}
	_, err := testCluster.tekton.TektonV1().TaskRuns(ns).Create(context.Background(), tr, metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "admission webhook") {
		t.Errorf("creating a TaskRun whose step has no image: error %v, want a rejection by the admission webhook", err)
	}
}

// TestFailingStep reports a failed step, and the next step is skipped.
func TestFailingStep(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	tr := &pipelinev1.TaskRun{
		ObjectMeta: metav1.ObjectMeta{Name: "fails"},
		Spec: pipelinev1.TaskRunSpec{TaskSpec: &pipelinev1.TaskSpec{
			Steps: []pipelinev1.Step{
				{Name: "boom", Image: busyboxImage, Script: "echo about to fail >&2; exit 3"},
				{Name: "never", Image: busyboxImage, Script: "echo should not run"},
			},
		}},
	}
	if _, err := testCluster.tekton.TektonV1().TaskRuns(ns).Create(context.Background(), tr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := waitTaskRun(t, ns, "fails")
	c := got.Status.GetCondition(apis.ConditionSucceeded)
	if !c.IsFalse() || !strings.Contains(c.Message, `"step-boom" exited with code 3`) {
		t.Errorf("condition %+v, want failed with step-boom's exit code 3", c)
	}
}

// TestPipelineRunSharesVolume runs two tasks on one PVC (default storage class): the
// second reads what the first wrote.
func TestPipelineRunSharesVolume(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	ctx := context.Background()
	ws := []pipelinev1.WorkspaceDeclaration{{Name: "shared"}}
	pr := &pipelinev1.PipelineRun{
		ObjectMeta: metav1.ObjectMeta{Name: "share"},
		Spec: pipelinev1.PipelineRunSpec{
			PipelineSpec: &pipelinev1.PipelineSpec{
				Workspaces: []pipelinev1.PipelineWorkspaceDeclaration{{Name: "shared"}},
				Tasks: []pipelinev1.PipelineTask{
					{
						Name:       "write",
						Workspaces: []pipelinev1.WorkspacePipelineTaskBinding{{Name: "shared", Workspace: "shared"}},
						TaskSpec: &pipelinev1.EmbeddedTask{TaskSpec: pipelinev1.TaskSpec{
							Workspaces: ws,
							Steps:      []pipelinev1.Step{{Name: "write", Image: busyboxImage, Script: "echo -n written-by-task-a > $(workspaces.shared.path)/file"}},
						}},
					},
					{
						Name:       "read",
						RunAfter:   []string{"write"},
						Workspaces: []pipelinev1.WorkspacePipelineTaskBinding{{Name: "shared", Workspace: "shared"}},
						TaskSpec: &pipelinev1.EmbeddedTask{TaskSpec: pipelinev1.TaskSpec{
							Workspaces: ws,
							Results:    []pipelinev1.TaskResult{{Name: "content"}},
							Steps:      []pipelinev1.Step{{Name: "read", Image: busyboxImage, Script: "cat $(workspaces.shared.path)/file > $(results.content.path)"}},
						}},
					},
				},
				Results: []pipelinev1.PipelineResult{{Name: "content", Value: *pipelinev1.NewStructuredValues("$(tasks.read.results.content)")}},
			},
			Workspaces: []pipelinev1.WorkspaceBinding{{
				Name: "shared",
				VolumeClaimTemplate: &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("16Mi")}},
				}},
			}},
		},
	}
	if _, err := testCluster.tekton.TektonV1().PipelineRuns(ns).Create(ctx, pr, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating PipelineRun: %v", err)
	}
	got := waitPipelineRun(t, ns, "share")
	mustSucceed(t, "PipelineRun", "share", got.Status.GetCondition(apis.ConditionSucceeded))
	var results []string
	for _, r := range got.Status.Results {
		results = append(results, r.Name+"="+r.Value.StringVal)
	}
	if diff := cmp.Diff([]string{"content=written-by-task-a"}, results); diff != "" {
		t.Errorf("pipeline results (-want +got):\n%s", diff)
	}
}

func pvc(name, class string, source *corev1.TypedLocalObjectReference) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("16Mi")}},
			DataSource:  source,
		},
	}
	if class != "" {
		c.Spec.StorageClassName = &class
	}
	return c
}

func claimVolume(claim string) ([]corev1.Volume, []corev1.VolumeMount) {
	return []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
		}}},
		[]corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
}

// TestPVCClone clones a PVC through the CSI driver: the clone sees the source's data,
// and a write to the clone leaves the source unchanged.
func TestPVCClone(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	ctx := context.Background()
	pvcs := testCluster.kube.CoreV1().PersistentVolumeClaims(ns)
	if _, err := pvcs.Create(ctx, pvc("source", "", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	vols, mounts := claimVolume("source")
	runPod(t, ns, "fill", busyboxImage, "echo -n original > /data/file", vols, mounts)

	if _, err := pvcs.Create(ctx, pvc("clone", "", &corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "source"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	vols, mounts = claimVolume("clone")
	if got := runPod(t, ns, "read-clone", busyboxImage, "cat /data/file; echo -n changed > /data/file", vols, mounts); got != "original" {
		t.Errorf("clone holds %q, want the source's %q", got, "original")
	}
	vols, mounts = claimVolume("source")
	if got := runPod(t, ns, "read-source", busyboxImage, "cat /data/file", vols, mounts); got != "original" {
		t.Errorf("source holds %q after a write to the clone, want %q", got, "original")
	}
	claim, err := pvcs.Get(ctx, "clone", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sc := claim.Spec.StorageClassName; sc == nil || *sc != "labcsi" {
		t.Errorf("clone's storage class %v, want the default labcsi", sc)
	}
}

// TestLocalPathVolume writes and reads a volume of rancher's local-path-provisioner.
func TestLocalPathVolume(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	if _, err := testCluster.kube.CoreV1().PersistentVolumeClaims(ns).Create(context.Background(), pvc("lp", "local-path", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	vols, mounts := claimVolume("lp")
	if got := runPod(t, ns, "use-local-path", busyboxImage, "echo -n here > /data/f && cat /data/f", vols, mounts); got != "here" {
		t.Errorf("read back %q, want %q", got, "here")
	}
}

// TestMockResource runs the mock resource type's check, in and out in a pod, as
// Concourse would: a JSON request on stdin, a directory argument, JSON on stdout.
func TestMockResource(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	script := `set -e
echo '{"source":{"initial_version":"v1"}}' | /opt/resource/check
echo '{"source":{"create_files":{"greeting.txt":"hi"}},"version":{"version":"v2"}}' | /opt/resource/in /tmp/get >/tmp/in.json 2>/tmp/in.err
cat /tmp/in.err /tmp/in.json
echo "files: $(cat /tmp/get/version) $(cat /tmp/get/greeting.txt)"
mkdir -p /tmp/put && echo v4 > /tmp/put/v
echo '{"source":{},"params":{"file":"v"}}' | /opt/resource/out /tmp/put 2>/dev/null
if echo '{"source":{"check_failure":"nope"}}' | /opt/resource/check 2>/dev/null; then echo check did not fail; exit 1; fi
`
	logs := runPod(t, ns, "mock", mockImage, script, nil, nil)
	lines := strings.Split(strings.TrimSpace(logs), "\n")
	if len(lines) != 5 {
		t.Fatalf("log %q, want 5 lines", logs)
	}
	// in says what it fetches on stderr, as concourse/mock-resource does (printed from a
	// file: a pod's stdout and stderr reach its log in no fixed order).
	if lines[1] != "fetching version: v2" {
		t.Errorf("in's stderr %q, want %q", lines[1], "fetching version: v2")
	}
	lines = append(lines[:1], lines[2:]...)
	var check []map[string]string
	if err := json.Unmarshal([]byte(lines[0]), &check); err != nil {
		t.Fatalf("check output %q: %v", lines[0], err)
	}
	if diff := cmp.Diff([]map[string]string{{"version": "v1"}}, check); diff != "" {
		t.Errorf("check (-want +got):\n%s", diff)
	}
	var in, out struct {
		Version map[string]string `json:"version"`
	}
	if err := json.Unmarshal([]byte(lines[1]), &in); err != nil || in.Version["version"] != "v2" {
		t.Errorf("in output %q: %v", lines[1], err)
	}
	if lines[2] != "files: v2 hi" {
		t.Errorf("files fetched by in: %q, want %q", lines[2], "files: v2 hi")
	}
	if err := json.Unmarshal([]byte(lines[3]), &out); err != nil || out.Version["version"] != "v4" {
		t.Errorf("out output %q: %v", lines[3], err)
	}
}

// TestGitResource serves a repository from a git daemon in one pod and runs the git
// resource type's check, in and out against it from another, over the pod network.
func TestGitResource(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	ctx := context.Background()
	server := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "git-server"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "main", Image: gitImage, ImagePullPolicy: corev1.PullIfNotPresent,
			Env: gitIdentity,
			Command: []string{"sh", "-c", `set -e
git init -q -b main /tmp/work && cd /tmp/work
echo first > README && git add README && git commit -q -m first
mkdir /repos && git clone -q --bare /tmp/work /repos/repo.git
exec git daemon --reuseaddr --export-all --enable=receive-pack --base-path=/repos /repos`},
		}}},
	}
	if _, err := testCluster.kube.CoreV1().Pods(ns).Create(ctx, server, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var ip string
	poll(t, "the git server's address", 2*time.Minute, func(ctx context.Context) (bool, error) {
		p, err := testCluster.kube.CoreV1().Pods(ns).Get(ctx, "git-server", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		ip = p.Status.PodIP
		return p.Status.Phase == corev1.PodRunning && ip != "", nil
	})
	script := fmt.Sprintf(`set -e
src='"source":{"uri":"git://%s/repo.git","branch":"main"}'
until git ls-remote git://%[1]s/repo.git >/dev/null 2>&1; do sleep 0.5; done
echo "{$src}" | /opt/resource/check > /tmp/check.json
ref=$(sed 's/.*"ref":"\([0-9a-f]*\)".*/\1/' /tmp/check.json)
echo "{$src,\"version\":{\"ref\":\"$ref\"}}" | /opt/resource/in /tmp/sources/repo > /dev/null
echo "got: $(cat /tmp/sources/repo/README)"
cd /tmp/sources/repo && echo second > README && git commit -q -am second && cd /
echo "{$src,\"params\":{\"repository\":\"repo\"}}" | /opt/resource/out /tmp/sources > /dev/null
echo "{$src,\"version\":{\"ref\":\"$ref\"}}" | /opt/resource/check | sed 's/[0-9a-f]\{40\}/SHA/g'
`, ip)
	logs := runPodEnv(t, ns, "git-client", gitImage, script, gitIdentity)
	want := "got: first\n" + `[{"ref":"SHA"},{"ref":"SHA"}]` + "\n"
	if logs != want {
		t.Errorf("client log %q, want %q", logs, want)
	}
}
