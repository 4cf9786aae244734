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
// cluster, at most once every runnerVolumeRecheck.

// runnerVolumeRecheck is how long a backend goes by what it learnt of the cluster's
// versions before it asks again (nodes come and go, and are upgraded).
const runnerVolumeRecheck = time.Minute

// runnerVolumeChoice is what a backend mounting the runner where it can knows of its
// cluster.
type runnerVolumeChoice struct {
	auto bool

	mu      sync.Mutex
	mount   bool
	checked time.Time
}

// MountRunnerWhereSupported makes the backend's builds mount the runner's image as a
// volume when the cluster is known to mount images with Kubernetes' defaults (see
// Client.MountsImages), and copy the runner in otherwise. Builds compiled with
// RunnerImageVolume in the backend's defaults always mount it. Call it before the
// backend runs a build.
func (b *Backend) MountRunnerWhereSupported() { b.runnerVolume.auto = true }

// mountRunner tells whether the build compiled now mounts the runner's image as a volume.
// A cluster that cannot be asked gets the copy, which works everywhere.
func (b *Backend) mountRunner(ctx context.Context) bool {
	if b.defaults.RunnerImageVolume || !b.runnerVolume.auto {
		return b.defaults.RunnerImageVolume
	}
	c := &b.runnerVolume
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.checked.IsZero() && time.Since(c.checked) < runnerVolumeRecheck {
		return c.mount
	}
	mount, err := b.client.MountsImages(ctx)
	if err != nil {
		return false
	}
	c.mount, c.checked = mount, time.Now()
	return mount
}

// MountsImages tells whether the cluster is known to mount images as volumes with
// Kubernetes' defaults: its API server and every node's kubelet of 1.35 or later (where
// the ImageVolume feature gate is on unless turned off), every node's runtime containerd
// 2.1 or later or CRI-O 1.31 or later. A cluster of no node, of nodes the client may not
// list, or of a runtime of another kind or an unknown version is not known to.
func (c *Client) MountsImages(ctx context.Context) (bool, error) {
	server, err := withContext(ctx, c.target.Kube.Discovery().ServerVersion)
	if err != nil {
		return false, fmt.Errorf("reading the cluster's version: %w", err)
	}
	if !versionAtLeast(server.GitVersion, 1, 35) {
		return false, nil
	}
	nodes, err := c.target.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if apierrors.IsForbidden(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("listing nodes to check whether they mount images: %w", err)
	}
	for _, n := range nodes.Items {
		info := n.Status.NodeInfo
		if mounts, known := runtimeMountsImages(info.ContainerRuntimeVersion); !mounts || !known || !versionAtLeast(info.KubeletVersion, 1, 35) {
			return false, nil
		}
	}
	return len(nodes.Items) > 0, nil
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
