package tektonrun

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubeversion "k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// mountsRunner tells whether a compiled build's step pods mount the runner's image.
func mountsRunner(b *Build) bool {
	return slices.ContainsFunc(b.Compiled.Tasks, func(t *v1.Task) bool {
		return slices.ContainsFunc(t.Spec.Volumes, func(v corev1.Volume) bool { return v.Image != nil })
	})
}

// addNodes gives a backend's fake cluster an API server of a version and nodes of
// kubelet and runtime versions.
func addNodes(t *testing.T, b *Backend, server string, nodes [][2]string) {
	t.Helper()
	kube := b.client.target.Kube.(*fake.Clientset)
	kube.Discovery().(*fakediscovery.FakeDiscovery).FakedServerVersion = &kubeversion.Info{GitVersion: server}
	for i, n := range nodes {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n%d", i)}}
		node.Status.NodeInfo.KubeletVersion, node.Status.NodeInfo.ContainerRuntimeVersion = n[0], n[1]
		if _, err := kube.CoreV1().Nodes().Create(context.Background(), node, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestMountRunnerWhereSupported(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		server string
		nodes  [][2]string // kubelet, runtime
		mount  bool
	}{
		{"v1.36.3", [][2]string{{"v1.36.3", "containerd://2.3.7"}}, true},
		{"v1.35.0", [][2]string{{"v1.35.0", "containerd://2.1.0"}, {"v1.35.2", "cri-o://1.31.1"}}, true},
		// The feature gate is off by default before 1.35, on the API server or a kubelet.
		{"v1.34.2", [][2]string{{"v1.36.3", "containerd://2.3.7"}}, false},
		{"v1.36.3", [][2]string{{"v1.34.2", "containerd://2.3.7"}}, false},
		// One node that cannot is enough: its pods would never start.
		{"v1.36.3", [][2]string{{"v1.36.3", "containerd://2.3.7"}, {"v1.36.3", "containerd://2.0.5"}}, false},
		{"v1.36.3", [][2]string{{"v1.36.3", "cri-o://1.30.2"}}, false},
		// What is not known is not taken for granted.
		{"v1.36.3", [][2]string{{"v1.36.3", "docker://28.1.0"}}, false},
		{"v1.36.3", [][2]string{{"v1.36.3", "containerd://dev"}}, false},
		{"v1.36.3", [][2]string{{"kwok-v0.8.0", "containerd://2.3.7"}}, false},
		{"v0.0.0-master+$Format:%H$", [][2]string{{"v1.36.3", "containerd://2.3.7"}}, false},
		{"v1.36.3", nil, false},
	} {
		b := newBackend(t, secret("token", "value"), secret("db", "user"))
		b.MountRunnerWhereSupported()
		addNodes(t, b, tt.server, tt.nodes)
		build, err := b.Run(ctx, taskPlan(), BuildMeta{Pipeline: "app", Job: "unit", Build: "1"})
		if err != nil {
			t.Fatalf("%s %v: %v", tt.server, tt.nodes, err)
		}
		if got := mountsRunner(build); got != tt.mount {
			t.Errorf("%s %v: the runner mounted = %v, want %v", tt.server, tt.nodes, got, tt.mount)
		}
	}
}

// TestMountRunnerAsked: a backend not told to mount the runner where it can copies it
// whatever the cluster, one whose defaults ask for the volume mounts it, and one that
// may not list nodes copies it.
func TestMountRunnerAsked(t *testing.T) {
	ctx := context.Background()
	capable := [][2]string{{"v1.36.3", "containerd://2.3.7"}}

	b := newBackend(t, secret("token", "value"), secret("db", "user"))
	addNodes(t, b, "v1.36.3", capable)
	build, err := b.Run(ctx, taskPlan(), BuildMeta{Pipeline: "app", Job: "unit", Build: "1"})
	if err != nil {
		t.Fatal(err)
	}
	if mountsRunner(build) {
		t.Error("the runner mounted without being asked to")
	}

	b = newBackend(t, secret("token", "value"), secret("db", "user"))
	b.defaults.RunnerImageVolume = true
	b.MountRunnerWhereSupported()
	addNodes(t, b, "v1.30.0", nil)
	if build, err = b.Run(ctx, taskPlan(), BuildMeta{Pipeline: "app", Job: "unit", Build: "1"}); err != nil {
		t.Fatal(err)
	}
	if !mountsRunner(build) {
		t.Error("the runner copied where it was asked to be mounted")
	}

	b = newBackend(t, secret("token", "value"), secret("db", "user"))
	b.MountRunnerWhereSupported()
	addNodes(t, b, "v1.36.3", capable)
	b.client.target.Kube.(*fake.Clientset).PrependReactor("list", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "", errors.New("no"))
	})
	if build, err = b.Run(ctx, taskPlan(), BuildMeta{Pipeline: "app", Job: "unit", Build: "1"}); err != nil {
		t.Fatal(err)
	}
	if mountsRunner(build) {
		t.Error("the runner mounted on a cluster whose nodes could not be listed")
	}
}

// TestMountRunnerRechecks: what a backend learnt of the cluster holds for a while, so
// that a busy web node does not list every node at each build, and is then learnt again.
func TestMountRunnerRechecks(t *testing.T) {
	ctx := context.Background()
	b := newBackend(t, secret("token", "value"), secret("db", "user"))
	b.MountRunnerWhereSupported()
	addNodes(t, b, "v1.36.3", [][2]string{{"v1.36.3", "containerd://2.3.7"}})
	kube := b.client.target.Kube.(*fake.Clientset)
	lists := func() int {
		n := 0
		for _, a := range kube.Actions() {
			if a.GetVerb() == "list" && a.GetResource().Resource == "nodes" {
				n++
			}
		}
		return n
	}
	for _, build := range []string{"1", "2", "3"} {
		run, err := b.Run(ctx, taskPlan(), BuildMeta{Pipeline: "app", Job: "unit", Build: build})
		if err != nil {
			t.Fatal(err)
		}
		if !mountsRunner(run) {
			t.Fatalf("build %s copied the runner", build)
		}
		// The choice listed them once, for the first build; the submissions, which
		// check that a node mounts images (checkNodes), go by it.
		if got, want := lists(), 1; got != want {
			t.Fatalf("after build %s: %d node listings, want %d", build, got, want)
		}
	}
	// A while later a node that cannot mount images has joined: builds copy the runner.
	b.client.runnerVolume.checked = b.client.runnerVolume.checked.Add(-runnerVolumeRecheck)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "old"}}
	node.Status.NodeInfo.KubeletVersion, node.Status.NodeInfo.ContainerRuntimeVersion = "v1.36.3", "containerd://1.7.2"
	if _, err := kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	run, err := b.Run(ctx, taskPlan(), BuildMeta{Pipeline: "app", Job: "unit", Build: "4"})
	if err != nil {
		t.Fatal(err)
	}
	if mountsRunner(run) {
		t.Error("build 4 mounted the runner after a node that cannot joined")
	}
}
