package tektonrun

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/version"
)

// The runner reaches a step pod in one of two ways: copied in by a container of its own,
// which works on every cluster, or mounted as an image volume
// (translate.Options.RunnerImageVolume), a container fewer a pod, where the cluster mounts
// images. A backend told to mount it where it can (MountRunnerWhereSupported) asks the
// cluster (Target.RunnerMount), at most once every runnerVolumeRecheck.

// runnerVolumeRecheck is how long a client goes by what it learnt of the cluster's
// versions before it asks again (nodes come and go, and are upgraded).
const runnerVolumeRecheck = time.Minute

// runnerVolumeChoice is what a client last learnt of whether its cluster mounts images.
type runnerVolumeChoice struct {
	mu      sync.Mutex
	mount   bool
	checked time.Time
}

// MountRunnerWhereSupported makes the backend's builds mount the runner's image as a
// volume when the cluster is known to mount images with Kubernetes' defaults (see
// Target.RunnerMount), and copy the runner in otherwise. Builds compiled with
// RunnerImageVolume in the backend's defaults always mount it. Call it before the
// backend runs a build.
func (b *Backend) MountRunnerWhereSupported() { b.autoRunnerVolume = true }

// mountRunner tells whether the build compiled now mounts the runner's image as a volume.
func (b *Backend) mountRunner(ctx context.Context) bool {
	if b.defaults.RunnerImageVolume || !b.autoRunnerVolume {
		return b.defaults.RunnerImageVolume
	}
	return b.client.mountsImages(ctx)
}

// mountsImages tells whether the cluster mounts images (Target.RunnerMount), as it was
// learnt less than runnerVolumeRecheck ago, else asking it. A cluster that cannot be
// asked does not: the runner is copied in, which works everywhere.
func (c *Client) mountsImages(ctx context.Context) bool {
	v := &c.runnerVolume
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.recent() {
		return v.mount
	}
	m, err := c.target.RunnerMount(ctx)
	if err != nil {
		return false
	}
	v.mount, v.checked = m.Mounted, time.Now()
	return m.Mounted
}

// mountedRecently tells whether the cluster was found to mount images less than
// runnerVolumeRecheck ago: every node could then, and a build's pods need not be
// checked against them again.
func (c *Client) mountedRecently() bool {
	v := &c.runnerVolume
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.recent() && v.mount
}

// recent tells whether the choice was learnt less than runnerVolumeRecheck ago; hold mu.
func (v *runnerVolumeChoice) recent() bool {
	return !v.checked.IsZero() && time.Since(v.checked) < runnerVolumeRecheck
}

// RunnerMount is how the builds of a backend that mounts the runner where the cluster
// can (MountRunnerWhereSupported: run, execute and the web node by default) get it.
type RunnerMount struct {
	// Mounted: the runner's image is each step pod's volume; else a container of each
	// copies the runner in.
	Mounted bool `json:"mounted"`
	// Why the runner is copied in: the first thing found that is not known to mount
	// images.
	Why string `json:"why,omitempty"`
}

// imageVolumesNeed is what image volumes need, as the reasons of RunnerMount say it.
const imageVolumesNeed = "image volumes are on by default from Kubernetes 1.35, with containerd 2.1 or CRI-O 1.31"

// RunnerMount tells whether the cluster is known to mount images as volumes with
// Kubernetes' defaults: its API server and every node's kubelet of 1.35 or later (where
// the ImageVolume feature gate is on unless turned off), every node's runtime containerd
// 2.1 or later or CRI-O 1.31 or later. A cluster of no node, of nodes the user may not
// list, or of a runtime of another kind or an unknown version is not known to.
func (t *Target) RunnerMount(ctx context.Context) (RunnerMount, error) {
	server, err := withContext(ctx, t.Kube.Discovery().ServerVersion)
	if err != nil {
		return RunnerMount{}, fmt.Errorf("reading the cluster's version: %w", err)
	}
	return t.runnerMount(ctx, server.GitVersion)
}

// runnerMount is RunnerMount on a cluster whose API server is of version server.
func (t *Target) runnerMount(ctx context.Context, server string) (RunnerMount, error) {
	if !versionAtLeast(server, 1, 35) {
		return RunnerMount{Why: fmt.Sprintf("the API server is %s (%s)", server, imageVolumesNeed)}, nil
	}
	nodes, err := t.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if apierrors.IsForbidden(err) {
		return RunnerMount{Why: "the nodes' versions cannot be read (list nodes is not granted)"}, nil
	}
	if err != nil {
		return RunnerMount{}, fmt.Errorf("listing nodes to check whether they mount images: %w", err)
	}
	if len(nodes.Items) == 0 {
		return RunnerMount{Why: "the cluster has no node"}, nil
	}
	for _, n := range nodes.Items {
		info := n.Status.NodeInfo
		if !versionAtLeast(info.KubeletVersion, 1, 35) {
			return RunnerMount{Why: fmt.Sprintf("node %s's kubelet is %q (%s)", n.Name, info.KubeletVersion, imageVolumesNeed)}, nil
		}
		if mounts, known := runtimeMountsImages(info.ContainerRuntimeVersion); !mounts || !known {
			return RunnerMount{Why: fmt.Sprintf("node %s runs %q (%s)", n.Name, info.ContainerRuntimeVersion, imageVolumesNeed)}, nil
		}
	}
	return RunnerMount{Mounted: true}, nil
}

// mayMountImages tells whether a node may mount images as volumes: false only where its
// kubelet or its runtime is known to be too old (a kubelet of 1.33 or 1.34 may not have
// the feature gate on, and other runtimes are not known: they may).
func mayMountImages(info corev1.NodeSystemInfo) bool {
	if kubelet, err := version.ParseGeneric(info.KubeletVersion); err == nil && !kubelet.AtLeast(version.MajorMinor(1, 33)) {
		return false
	}
	mounts, known := runtimeMountsImages(info.ContainerRuntimeVersion)
	return mounts || !known
}

// runtimeMountsImages tells whether a runtime, as a node reports it (containerd://2.3.7),
// mounts images as volumes, and whether that is known: containerd from 2.1, CRI-O from
// 1.31.
func runtimeMountsImages(runtime string) (mounts, known bool) {
	name, v, _ := strings.Cut(runtime, "://")
	switch name {
	case "containerd":
		return versionAtLeast(v, 2, 1), isVersion(v)
	case "cri-o":
		return versionAtLeast(v, 1, 31), isVersion(v)
	}
	return false, false
}

// versionAtLeast tells whether v (1.36.3, v1.36.3-gke.1) is a version of at least
// major.minor.
func versionAtLeast(v string, major, minor uint) bool {
	parsed, err := version.ParseGeneric(v)
	return err == nil && parsed.AtLeast(version.MajorMinor(major, minor))
}

// isVersion tells whether v reads as a version.
func isVersion(v string) bool {
	_, err := version.ParseGeneric(v)
	return err == nil
}
