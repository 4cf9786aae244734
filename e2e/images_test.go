//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/concourse-tekton/concourse-tekton/concourse/event"
	"github.com/concourse-tekton/concourse-tekton/gc"
	"github.com/concourse-tekton/concourse-tekton/internal/ociimage"
	"github.com/concourse-tekton/concourse-tekton/translate"
)

// imageRegistry is the registry builds push image artifacts to: the harness runs one that
// its containerd pulls from and its pods reach (E2E_IMAGE_REGISTRY on another cluster).
var imageRegistry = os.Getenv("E2E_IMAGE_REGISTRY")

// ociWriterImage is busybox with e2e/cmd/oci-writer, which writes a rootfs/ as a docker
// archive or an OCI layout: what a build task leaves for a later task to run.
const ociWriterImage = "e2e.invalid/oci-writer:v1"

// TestImagesFromArtifacts runs tasks in images that earlier steps of the build made or
// fetched as files, in every layout Concourse runs one from, and a resource type whose
// image is a rootfs in a git repository (a custom type of another type than
// registry-image), checked and fetched when the build runs: each image is pushed to the
// registry and the cluster pulls it from there.
func TestImagesFromArtifacts(t *testing.T) {
	t.Parallel()
	if imageRegistry == "" {
		t.Skip("no image registry: the harness's cluster sets E2E_IMAGE_REGISTRY; on another cluster, set it to a registry its nodes pull from and its pods reach")
	}
	importOCIWriterImage(t)
	ns := namespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	git := "git://" + serveImageRepos(t, ns)
	file := filepath.Join(t.TempDir(), "images.yml")
	if err := os.WriteFile(file, []byte(imagesPipeline(git)), 0o644); err != nil {
		t.Fatal(err)
	}
	exit, stdout, stderr := runCLI(t, ctx, "run", file, "-j", "images", "-w", "-n", ns,
		"--runner-image", runnerImage, "--resource-image", "git="+gitImage,
		"--image-registry", imageRegistry, "--build-volume-size", "256Mi", "--kubeconfig", kubeconfigPath())
	t.Logf("run -j images: exit %d\nstdout:\n%s\nstderr:\n%s", exit, stdout, stderr)
	checkBuild(t, "run", exit, stdout, scenario{
		wantExit: 0,
		want: []string{
			"task-rootfs: made in the build",
			"docker-archive: made in the build",
			"oci-layout: made in the build",
			"git-rootfs: fetched from git",
			"git-oci-tar: fetched from git",
			"fetched by a type built from git",
			"image_resource: fetched from git",
		},
	})
	if t.Failed() {
		return
	}
	exit, events, stderr := runCLI(t, ctx, "events", translate.RunName("images", "images", "1"), "--json", "-n", ns, "--kubeconfig", kubeconfigPath())
	if exit != 0 {
		t.Fatalf("events: exit %d\n%s", exit, stderr)
	}
	checkStepsImageFetch(t, envelopes(t, events))
	collectImages(t, ctx, ns)
}

// checkStepsImageFetch checks that the task whose image_resource steps of the build
// fetched (a git repository's rootfs, which the node cannot pull), known by its log,
// shows Concourse's fetch of its image: image-check and image-get on the task's origin,
// then the check's events and the get's (their logs aside), then the task's own.
func checkStepsImageFetch(t *testing.T, list []envelope) {
	t.Helper()
	id := ""
	for _, e := range list {
		var d struct {
			Origin  struct{ ID string } `json:"origin"`
			Payload string              `json:"payload"`
		}
		if err := json.Unmarshal(e.Data, &d); err != nil {
			t.Fatal(err)
		}
		if e.Event == string(event.EventTypeLog) && strings.HasPrefix(d.Payload, "image_resource: ") {
			id = d.Origin.ID
		}
	}
	if id == "" {
		t.Fatal("the task whose image_resource steps fetched wrote nothing")
	}
	checkTaskEvents(t, list, id, true, []string{id + " image-check " + id + "/image-check", id + " image-get " + id + "/image-get",
		id + "/image-check initialize-check", id + "/image-check selected-worker", id + "/image-check start", id + "/image-check finish",
		id + "/image-get initialize-get", id + "/image-get start-get", id + "/image-get selected-worker", id + "/image-get finish-get",
		id + " initialize-task", id + " selected-worker", id + " start-task"})
}

// collectImages deletes the build of namespace ns, whose tasks pushed images to the
// registry, and gc with the registry deletes them; before, it keeps them.
func collectImages(t *testing.T, ctx context.Context, ns string) {
	repo, err := name.NewRepository(imageRegistry + "/" + ns)
	if err != nil {
		t.Fatal(err)
	}
	tags, err := remote.List(repo, remote.WithContext(ctx))
	if err != nil || len(tags) < 4 {
		t.Fatalf("the build's images in %s: %q, %v", repo, tags, err)
	}
	images := func(items []gc.Item) (n int) {
		for _, i := range items {
			if i.Kind == gc.KindImage {
				n++
			}
		}
		return n
	}
	sweep := func() gc.Report {
		exit, stdout, stderr := runCLI(t, ctx, "gc", "-n", ns, "--image-registry", imageRegistry, "-o", "json")
		var r gc.Report
		if err := json.Unmarshal([]byte(stdout), &r); exit != 0 || err != nil {
			t.Fatalf("gc --image-registry: exit %d, %v\n%s%s", exit, err, stdout, stderr)
		}
		return r
	}
	if r := sweep(); images(r.Deleted) > 0 || images(r.Kept) != len(tags) {
		t.Errorf("gc deleted %d images of a build that is there, kept %d of %d", images(r.Deleted), images(r.Kept), len(tags))
	}
	run := translate.RunName("images", "images", "1")
	background := metav1.DeletePropagationBackground
	if err := testCluster.tekton.TektonV1().PipelineRuns(ns).Delete(ctx, run, metav1.DeleteOptions{PropagationPolicy: &background}); err != nil {
		t.Fatal(err)
	}
	poll(t, "the build's TaskRuns to go", 2*time.Minute, func(ctx context.Context) (bool, error) {
		l, err := testCluster.tekton.TektonV1().TaskRuns(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(l.Items) == 0, err
	})
	if r := sweep(); images(r.Deleted) != len(tags) {
		t.Errorf("gc deleted %d images of a deleted build, want %d: %+v", images(r.Deleted), len(tags), r.Deleted)
	}
	for _, tag := range tags {
		if _, err := remote.Head(repo.Tag(tag), remote.WithContext(ctx)); err == nil {
			t.Errorf("%s:%s is still there", repo, tag)
		}
	}
}

// imagesPipeline is the pipeline of TestImagesFromArtifacts, its repositories at git.
func imagesPipeline(git string) string {
	show := `{platform: linux, run: {path: sh, args: [-c, 'echo "$MARK: $(cat /marker)"']}}`
	return fmt.Sprintf(`resource_types:
- name: built-type
  type: git
  source: {uri: %[1]s/type-image, branch: master}

resources:
- {name: rootfs-image, type: git, source: {uri: %[1]s/rootfs-image, branch: master}}
- {name: oci-image, type: git, source: {uri: %[1]s/oci-image, branch: master}}
- {name: thing, type: built-type, source: {}}

jobs:
- name: images
  plan:
  - in_parallel:
    - get: rootfs-image
    - get: oci-image
    - get: thing
  - task: make-images
    config:
      platform: linux
      image_resource: {type: registry-image, source: {repository: e2e.invalid/oci-writer, tag: v1}}
      outputs: [{name: rootfs-out}, {name: archive-out}, {name: layout-out}]
      run:
        path: sh
        args:
        - -ec
        - |
          mkdir -p rootfs-out/rootfs/bin
          cp /bin/busybox rootfs-out/rootfs/bin/busybox
          for l in sh cat echo; do ln -s busybox rootfs-out/rootfs/bin/$l; done
          echo "made in the build" > rootfs-out/rootfs/marker
          echo '{"env": ["PATH=/bin", "MARK=task-rootfs"], "user": ""}' > rootfs-out/metadata.json
          oci-writer -in rootfs-out -format docker-archive -env MARK=docker-archive -o archive-out/image.tar
          oci-writer -in rootfs-out -format oci-layout -env MARK=oci-layout -o layout-out/image
  - in_parallel:
    - {task: in-task-rootfs, image: rootfs-out, config: %[2]s}
    - {task: in-docker-archive, image: archive-out, config: %[2]s}
    - {task: in-oci-layout, image: layout-out, config: %[2]s}
    - {task: in-git-rootfs, image: rootfs-image, config: %[2]s}
    - {task: in-git-oci-tar, image: oci-image, config: %[2]s}
    - task: in-image-resource
      config:
        platform: linux
        image_resource: {type: git, source: {uri: %[1]s/rootfs-image, branch: master}}
        run: {path: sh, args: [-c, 'echo "image_resource: $(cat /marker)"']}
  - task: read-thing
    config:
      platform: linux
      image_resource: {type: registry-image, source: {repository: e2e.invalid/busybox, tag: "1.35"}}
      inputs: [{name: thing}]
      run: {path: cat, args: [thing/fetched]}
`, git, show)
}

// serveImageRepos serves three repositories from a git daemon in a pod and returns its
// address: rootfs-image (rootfs/ and metadata.json, as registry-image's format rootfs),
// oci-image (image.tar holding an OCI layout) and type-image (the rootfs of a resource
// type whose check and in are shell scripts). An init container of the oci-writer image
// writes them from its own busybox.
func serveImageRepos(t *testing.T, ns string) string {
	t.Helper()
	ctx := context.Background()
	const makeRepos = `set -e
mkrootfs() {
  mkdir -p "$1/rootfs/bin"
  cp /bin/busybox "$1/rootfs/bin/busybox"
  for l in sh cat echo; do ln -s busybox "$1/rootfs/bin/$l"; done
}
mkrootfs /work/rootfs-image
echo "fetched from git" > /work/rootfs-image/rootfs/marker
echo '{"env": ["PATH=/bin", "MARK=git-rootfs"], "user": ""}' > /work/rootfs-image/metadata.json
mkdir -p /work/oci-image
oci-writer -in /work/rootfs-image -format oci-tar -env MARK=git-oci-tar -o /work/oci-image/image.tar
mkrootfs /work/type-image
mkdir -p /work/type-image/rootfs/opt/resource
printf '#!/bin/sh\necho '"'"'[{"v":"1"}]'"'"'\n' > /work/type-image/rootfs/opt/resource/check
printf '#!/bin/sh\necho "fetched by a type built from git" > "$1/fetched"\necho '"'"'{"version":{"v":"1"}}'"'"'\n' > /work/type-image/rootfs/opt/resource/in
chmod +x /work/type-image/rootfs/opt/resource/check /work/type-image/rootfs/opt/resource/in
echo '{"env": ["PATH=/bin"], "user": ""}' > /work/type-image/metadata.json
`
	const serve = `set -e
mkdir /repos
for r in rootfs-image oci-image type-image; do
  git init -q -b master "/tmp/$r" && cp -a "/work/$r/." "/tmp/$r/" && cd "/tmp/$r"
  git add . && git commit -q -m "$r" && git clone -q --bare "/tmp/$r" "/repos/$r"
done
exec git daemon --reuseaddr --export-all --base-path=/repos /repos`
	work := []corev1.VolumeMount{{Name: "work", MountPath: "/work"}}
	server := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "image-repos"},
		Spec: corev1.PodSpec{
			Volumes: []corev1.Volume{{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			InitContainers: []corev1.Container{{
				Name: "make", Image: ociWriterImage, ImagePullPolicy: corev1.PullIfNotPresent,
				Command: []string{"sh", "-c", makeRepos}, VolumeMounts: work,
			}},
			Containers: []corev1.Container{{
				Name: "main", Image: gitImage, ImagePullPolicy: corev1.PullIfNotPresent, Env: gitIdentity,
				Command: []string{"sh", "-c", serve}, VolumeMounts: work,
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(9418)}},
					PeriodSeconds: 1},
			}},
		},
	}
	if _, err := testCluster.kube.CoreV1().Pods(ns).Create(ctx, server, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var ip string
	poll(t, "the git server of the image repositories", 2*time.Minute, func(ctx context.Context) (bool, error) {
		p, err := testCluster.kube.CoreV1().Pods(ns).Get(ctx, server.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		ip = p.Status.PodIP
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				return ip != "", nil
			}
		}
		return false, nil
	})
	return ip
}

// importOCIWriterImage builds ociWriterImage on the harness's busybox and imports it into
// the harness's containerd (on another cluster the test is skipped: load it there first).
func importOCIWriterImage(t *testing.T) {
	t.Helper()
	cache := harnessCache(t, ociWriterImage)
	bin := filepath.Join(t.TempDir(), "oci-writer")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/oci-writer")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building oci-writer: %v\n%s", err, out)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	importOnBusybox(t, cache, ociWriterImage, []ociimage.File{{Path: "/bin/oci-writer", Mode: 0o755, Data: data}})
}

// harnessCache is the local harness's cache, whose containerd a test imports an image
// of its own into; the test is skipped on another cluster.
func harnessCache(t *testing.T, image string) string {
	t.Helper()
	if kubeconfigPath() != harnessKubeconfig() {
		t.Skipf("%s is imported into the local harness's containerd only; on another cluster, load it and run with E2E_KUBECONFIG unset", image)
	}
	cache := filepath.Dir(filepath.Dir(harnessKubeconfig()))
	if _, err := os.Stat(harnessSocket(cache)); err != nil {
		t.Skipf("no local harness containerd: %v", err)
	}
	return cache
}

func harnessSocket(cache string) string {
	return filepath.Join(cache, "state", "run", "containerd", "containerd.sock")
}

// importOnBusybox imports into the harness's containerd, as ref, the harness's busybox
// image with files laid over it.
func importOnBusybox(t *testing.T, cache, ref string, files []ociimage.File) {
	t.Helper()
	base, err := tarball.ImageFromPath(filepath.Join(cache, "images", "busybox.tar"), nil)
	if err != nil {
		t.Fatalf("reading the harness's busybox image: %v", err)
	}
	layer, err := ociimage.Layer(files)
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(base, layer)
	if err != nil {
		t.Fatal(err)
	}
	tar := filepath.Join(t.TempDir(), strings.NewReplacer("/", "-", ":", "-").Replace(ref)+".tar")
	if err := ociimage.WriteTarball(tar, ref, img); err != nil {
		t.Fatal(err)
	}
	ctr := exec.Command("e2e/cluster/cluster.sh", "ctr", "images", "import", "--no-unpack=false", tar)
	ctr.Dir = ".."
	out, err := ctr.CombinedOutput()
	if err != nil {
		t.Fatalf("importing %s: %v\n%s", ref, err, out)
	}
}
