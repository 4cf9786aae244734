package tektonrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	tektonfake "github.com/tektoncd/pipeline/pkg/client/clientset/versioned/fake"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// fakeCluster is what a fake target's API server serves and grants.
type fakeCluster struct {
	groupVersions []string             // served, each with pipelineruns
	denied        []Permission         // not granted in the target's namespace
	failing       map[Permission]error // access reviews that fail
	unreachable   error                // what asking for the version fails with
	// enforce is the namespace's pod-security.kubernetes.io/enforce label, if any;
	// noNamespace leaves the namespace out.
	enforce         string
	noNamespace     bool
	forbidNamespace bool // reading namespaces is forbidden
	// featureFlags is Tekton's ConfigMap tekton-pipelines/feature-flags; nil leaves it out.
	featureFlags map[string]string
	// nodes is how many nodes the cluster has; forbidNodes forbids listing them.
	nodes       int
	forbidNodes bool
}

// fakeTarget is a target in namespace "ci" of a fake cluster. Access reviews about other
// namespaces are denied.
func fakeTarget(t *testing.T, c fakeCluster) *Target {
	t.Helper()
	kube := fake.NewClientset()
	if !c.noNamespace {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ci", Labels: map[string]string{}}}
		if c.enforce != "" {
			ns.Labels["pod-security.kubernetes.io/enforce"] = c.enforce
		}
		if _, err := kube.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if c.featureFlags != nil {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "feature-flags", Namespace: "tekton-pipelines"},
			Data: c.featureFlags}
		if _, err := kube.CoreV1().ConfigMaps(cm.Namespace).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range c.nodes {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%d", i)}}
		if _, err := kube.CoreV1().Nodes().Create(context.Background(), node, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if c.forbidNodes {
		kube.PrependReactor("list", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "", errors.New("no"))
		})
	}
	if c.forbidNamespace {
		kube.PrependReactor("get", "namespaces", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, "ci", errors.New("no"))
		})
	}
	disc := kube.Discovery().(*fakediscovery.FakeDiscovery)
	disc.FakedServerVersion = &version.Info{GitVersion: "v1.35.0"}
	for _, gv := range c.groupVersions {
		disc.Resources = append(disc.Resources, &metav1.APIResourceList{
			GroupVersion: gv,
			APIResources: []metav1.APIResource{{Name: "pipelineruns", Namespaced: true, Kind: "PipelineRun"}},
		})
	}
	if c.unreachable != nil {
		kube.PrependReactor("get", "version", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, c.unreachable
		})
	}
	kube.PrependReactor("create", "selfsubjectaccessreviews", func(action k8stesting.Action) (bool, runtime.Object, error) {
		review := action.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
		a := review.Spec.ResourceAttributes
		p := Permission{a.Group, a.Resource, a.Subresource, a.Verb}
		if err := c.failing[p]; err != nil {
			return true, nil, err
		}
		review.Status.Allowed = a.Namespace == "ci" && !slices.Contains(c.denied, p)
		return true, review, nil
	})
	return NewTargetFromClients("ci", kube, tektonfake.NewSimpleClientset())
}

func TestCheck(t *testing.T) {
	podsExec := Permission{"", "pods", "exec", "create"}
	watchRuns := Permission{"tekton.dev", "pipelineruns", "", "watch"}
	getTasks := Permission{"tekton.dev", "tasks", "", "get"}
	refused := errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")
	forbidden := errors.New("forbidden")
	running := &Status{State: StateRunning}
	noNode := &RunnerMount{Why: "the cluster has no node"}
	tests := []struct {
		name    string
		cluster fakeCluster
		want    CheckReport
		wantErr string
		wantOK  bool
	}{{
		name:    "ready",
		cluster: fakeCluster{groupVersions: []string{"v1", "tekton.dev/v1"}},
		want:    CheckReport{Target: "ci", ServerVersion: "v1.35.0", Reachable: true, TektonInstalled: true, Granted: true, Status: running, Runner: noNode},
		wantOK:  true,
	}, {
		name: "missing permissions, in table order",
		cluster: fakeCluster{
			groupVersions: []string{"tekton.dev/v1"},
			denied:        []Permission{podsExec, watchRuns, getTasks},
		},
		want: CheckReport{
			Target: "ci", ServerVersion: "v1.35.0", Reachable: true, TektonInstalled: true, Status: running, Runner: noNode,
			Missing: []Permission{getTasks, watchRuns, podsExec},
		},
	}, {
		name:    "no Tekton",
		cluster: fakeCluster{groupVersions: []string{"v1"}},
		want:    CheckReport{Target: "ci", ServerVersion: "v1.35.0", Reachable: true, Granted: true, Status: running, Runner: noNode},
	}, {
		name:    "only an older Tekton",
		cluster: fakeCluster{groupVersions: []string{"tekton.dev/v1beta1"}},
		want:    CheckReport{Target: "ci", ServerVersion: "v1.35.0", Reachable: true, Granted: true, Status: running, Runner: noNode},
	}, {
		name:    "unreachable",
		cluster: fakeCluster{groupVersions: []string{"tekton.dev/v1"}, unreachable: refused},
		want:    CheckReport{Target: "ci"},
		wantErr: "asking the API server its version: " + refused.Error(),
	}, {
		name: "a review fails",
		cluster: fakeCluster{
			groupVersions: []string{"tekton.dev/v1"},
			denied:        []Permission{getTasks},
			failing:       map[Permission]error{podsExec: forbidden, watchRuns: forbidden},
		},
		want: CheckReport{
			Target: "ci", ServerVersion: "v1.35.0", Reachable: true, TektonInstalled: true, Status: running, Runner: noNode,
			Missing: []Permission{getTasks},
		},
		wantErr: "asking whether watch pipelineruns.tekton.dev is allowed in namespace ci: forbidden",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := fakeTarget(t, tc.cluster).Check(context.Background())
			if ok := got.OK(); ok != tc.wantOK {
				t.Errorf("OK() = %v, want %v", ok, tc.wantOK)
			}
			var gotErr string
			if got.Err != nil {
				gotErr = got.Err.Error()
			}
			if gotErr != tc.wantErr {
				t.Errorf("Err = %q, want %q", gotErr, tc.wantErr)
			}
			got.Err = nil
			got.PodSecurity = nil // TestCheckPodSecurity
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("report (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCheckAssumeGranted: a check that takes the permissions as granted asks no access
// review, and reports them granted; the rest is asked as always.
func TestCheckAssumeGranted(t *testing.T) {
	target := fakeTarget(t, fakeCluster{groupVersions: []string{"tekton.dev/v1"}, denied: []Permission{{"", "pods", "exec", "create"}}})
	var reviews atomic.Int32
	target.Kube.(*fake.Clientset).PrependReactor("create", "selfsubjectaccessreviews", func(k8stesting.Action) (bool, runtime.Object, error) {
		reviews.Add(1)
		return false, nil, nil
	})
	asked := target.CheckWith(context.Background(), CheckOptions{})
	if n := reviews.Swap(0); n != int32(len(Permissions)) || asked.Granted || len(asked.Missing) != 1 {
		t.Errorf("asked: %d reviews, granted %v, missing %v; want %d, false, pods/exec", n, asked.Granted, asked.Missing, len(Permissions))
	}
	assumed := target.CheckWith(context.Background(), CheckOptions{AssumeGranted: true})
	if n := reviews.Load(); n != 0 || !assumed.Granted || assumed.Missing != nil || !assumed.OK() {
		t.Errorf("assumed: %d reviews, granted %v, missing %v, OK %v; want none, true, none, true", n, assumed.Granted, assumed.Missing, assumed.OK())
	}
	if !assumed.TektonInstalled || assumed.Status == nil {
		t.Errorf("assumed: the rest was not asked: %+v", assumed)
	}
	if asked.Runner == nil || assumed.Runner != nil {
		t.Errorf("how builds get the runner: asked %+v, assumed %+v; want it asked only without assuming", asked.Runner, assumed.Runner)
	}
}

// TestCheckRunner: the check says whether builds that mount the runner where the cluster
// can mount it, and if not, why.
func TestCheckRunner(t *testing.T) {
	for _, tc := range []struct {
		name   string
		server string
		nodes  [][2]string // kubelet, runtime
		forbid bool
		want   RunnerMount
	}{
		{"capable", "v1.36.3", [][2]string{{"v1.36.3", "containerd://2.3.7"}, {"v1.35.1", "cri-o://1.35.0"}}, false, RunnerMount{Mounted: true}},
		{"old API server", "v1.34.2", [][2]string{{"v1.36.3", "containerd://2.3.7"}}, false,
			RunnerMount{Why: "the API server is v1.34.2 (" + imageVolumesNeed + ")"}},
		{"old kubelet", "v1.36.3", [][2]string{{"v1.36.3", "containerd://2.3.7"}, {"v1.33.0", "containerd://2.3.7"}}, false,
			RunnerMount{Why: `node n1's kubelet is "v1.33.0" (` + imageVolumesNeed + ")"}},
		{"old runtime", "v1.36.3", [][2]string{{"v1.36.3", "containerd://1.7.2"}}, false,
			RunnerMount{Why: `node n0 runs "containerd://1.7.2" (` + imageVolumesNeed + ")"}},
		{"other runtime", "v1.36.3", [][2]string{{"v1.36.3", "docker://28.1.0"}}, false,
			RunnerMount{Why: `node n0 runs "docker://28.1.0" (` + imageVolumesNeed + ")"}},
		{"nodes forbidden", "v1.36.3", [][2]string{{"v1.36.3", "containerd://2.3.7"}}, true,
			RunnerMount{Why: "the nodes' versions cannot be read (list nodes is not granted)"}},
		{"no node", "v1.36.3", nil, false, RunnerMount{Why: "the cluster has no node"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target := fakeTarget(t, fakeCluster{groupVersions: []string{"tekton.dev/v1"}, forbidNodes: tc.forbid})
			kube := target.Kube.(*fake.Clientset)
			kube.Discovery().(*fakediscovery.FakeDiscovery).FakedServerVersion = &version.Info{GitVersion: tc.server}
			for i, n := range tc.nodes {
				node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n%d", i)}}
				node.Status.NodeInfo.KubeletVersion, node.Status.NodeInfo.ContainerRuntimeVersion = n[0], n[1]
				if _, err := kube.CoreV1().Nodes().Create(context.Background(), node, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			r := target.Check(context.Background())
			if r.Err != nil || r.Runner == nil {
				t.Fatalf("err %v, runner %v", r.Err, r.Runner)
			}
			if diff := cmp.Diff(tc.want, *r.Runner); diff != "" {
				t.Errorf("runner (-want +got):\n%s", diff)
			}
		})
	}
}

// The namespace's enforced Pod Security level, and the kinds of step pod it rejects, by
// Kubernetes' own checks.
func TestCheckPodSecurity(t *testing.T) {
	tests := []struct {
		name     string
		cluster  fakeCluster
		want     []string // the kinds rejected
		wantOK   bool
		wantNote string
	}{
		{name: "no level", cluster: fakeCluster{}, wantOK: true},
		{name: "privileged", cluster: fakeCluster{enforce: "privileged"}, wantOK: true},
		{name: "baseline", cluster: fakeCluster{enforce: "baseline"}, want: []string{"privileged steps (privileged: true)"}, wantOK: true},
		{name: "restricted", cluster: fakeCluster{enforce: "restricted"}, want: []string{
			"privileged steps (privileged: true)",
			"steps whose runner switches to run.user (root, then the user)",
			"other steps (the image's user)",
			"tasks whose run.user is a number other than 0",
		}},
		// Tekton's init containers too pass: tasks of a numeric non-root user can run.
		{name: "restricted, Tekton sets security contexts", cluster: fakeCluster{enforce: "restricted", featureFlags: map[string]string{"set-security-context": "true"}}, want: []string{
			"privileged steps (privileged: true)",
			"steps whose runner switches to run.user (root, then the user)",
			"other steps (the image's user)",
		}},
		{name: "namespace not readable", cluster: fakeCluster{noNamespace: true, forbidNamespace: true}, wantOK: true,
			wantNote: "namespace ci cannot be read (get namespaces is not granted)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.cluster.groupVersions = []string{"tekton.dev/v1"}
			got := fakeTarget(t, tc.cluster).Check(context.Background())
			if got.Err != nil {
				t.Fatal(got.Err)
			}
			var kinds []string
			for _, r := range got.PodSecurity.Rejected {
				kinds = append(kinds, r.Steps)
				if len(r.Reasons) == 0 {
					t.Errorf("%s rejected for no reason", r.Steps)
				}
			}
			if diff := cmp.Diff(tc.want, kinds); diff != "" {
				t.Errorf("rejected (-want +got):\n%s", diff)
			}
			if got.OK() != tc.wantOK || got.PodSecurity.Unknown != tc.wantNote {
				t.Errorf("OK() = %v, note %q; want %v, %q", got.OK(), got.PodSecurity.Unknown, tc.wantOK, tc.wantNote)
			}
		})
	}
}

// TestCheckAdvice: a cluster whose Tekton makes each pod's first step wait for the
// controller's ready mark (running-in-environment-with-injected-sidecars, true unless
// set) is told how its steps start sooner; nothing is said when the flag is false or
// when the flags cannot be read, and the advice never fails the check.
func TestCheckAdvice(t *testing.T) {
	for _, c := range []struct {
		name   string
		flags  map[string]string
		advice bool
	}{
		{name: "Tekton's default", flags: map[string]string{}, advice: true},
		{name: "true", flags: map[string]string{"running-in-environment-with-injected-sidecars": " True "}, advice: true},
		{name: "false", flags: map[string]string{"running-in-environment-with-injected-sidecars": "false"}},
		{name: "unread", flags: nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := fakeTarget(t, fakeCluster{groupVersions: []string{"tekton.dev/v1"}, featureFlags: c.flags}).Check(context.Background())
			if !r.OK() {
				t.Fatalf("the check failed: %+v", r)
			}
			if got := len(r.Advice) > 0; got != c.advice {
				t.Fatalf("advice %q; want some: %v", r.Advice, c.advice)
			}
			if c.advice && !strings.Contains(r.Advice[0], `running-in-environment-with-injected-sidecars: "true"`) {
				t.Errorf("the advice does not name the flag: %q", r.Advice[0])
			}
		})
	}
}

// TestCheckAdviceAssistants: on a cluster of one node, a Tekton that gives each build an
// affinity-assistant pod (coschedule, "workspaces" unless set) is told how each build
// runs a pod fewer; not with more nodes, nor when the nodes cannot be listed, nor when
// coschedule is "disabled".
func TestCheckAdviceAssistants(t *testing.T) {
	sidecarsOff := func(coschedule string) map[string]string {
		m := map[string]string{"running-in-environment-with-injected-sidecars": "false"}
		if coschedule != "" {
			m["coschedule"] = coschedule
		}
		return m
	}
	for _, c := range []struct {
		name    string
		cluster fakeCluster
		advice  bool
	}{
		{name: "one node, Tekton's default", cluster: fakeCluster{nodes: 1, featureFlags: sidecarsOff("")}, advice: true},
		{name: "one node, pipelineruns", cluster: fakeCluster{nodes: 1, featureFlags: sidecarsOff("pipelineruns")}, advice: true},
		{name: "one node, isolate-pipelinerun", cluster: fakeCluster{nodes: 1, featureFlags: sidecarsOff("isolate-pipelinerun")}, advice: true},
		{name: "one node, disabled", cluster: fakeCluster{nodes: 1, featureFlags: sidecarsOff(" disabled ")}},
		{name: "two nodes", cluster: fakeCluster{nodes: 2, featureFlags: sidecarsOff("")}},
		{name: "three nodes", cluster: fakeCluster{nodes: 3, featureFlags: sidecarsOff("")}},
		{name: "nodes forbidden", cluster: fakeCluster{nodes: 1, forbidNodes: true, featureFlags: sidecarsOff("")}},
		{name: "flags unread", cluster: fakeCluster{nodes: 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.cluster.groupVersions = []string{"tekton.dev/v1"}
			r := fakeTarget(t, c.cluster).Check(context.Background())
			if !r.OK() {
				t.Fatalf("the check failed: %+v", r)
			}
			if got := len(r.Advice) > 0; got != c.advice {
				t.Fatalf("advice %q; want some: %v", r.Advice, c.advice)
			}
			if c.advice && (len(r.Advice) != 1 || !strings.Contains(r.Advice[0], `coschedule, Tekton's default "workspaces"`)) {
				t.Errorf("the advice does not name the flag, or says more: %q", r.Advice)
			}
		})
	}
}

func TestCheckCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	got := fakeTarget(t, fakeCluster{groupVersions: []string{"tekton.dev/v1"}}).Check(ctx)
	if got.OK() || !errors.Is(got.Err, context.Canceled) {
		t.Errorf("Check with a cancelled context: OK %v, Err %v; want not OK, context.Canceled", got.OK(), got.Err)
	}
}

func TestPermissions(t *testing.T) {
	seen := map[Permission]bool{}
	for _, p := range Permissions {
		if seen[p] {
			t.Errorf("%s is listed twice", p)
		}
		seen[p] = true
		if p.Resource == "selfsubjectaccessreviews" {
			t.Errorf("%s is not namespaced: it cannot be checked in the target's namespace", p)
		}
	}
	tests := []struct {
		p    Permission
		want string
	}{
		{Permission{"", "pods", "exec", "create"}, "create pods/exec"},
		{Permission{"", "secrets", "", "get"}, "get secrets"},
		{Permission{"tekton.dev", "pipelineruns", "", "patch"}, "patch pipelineruns.tekton.dev"},
		{Permission{"tekton.dev", "pipelineruns", "status", "update"}, "update pipelineruns.tekton.dev/status"},
	}
	for _, tc := range tests {
		if got := tc.p.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
}

func TestCheckReportJSON(t *testing.T) {
	tests := []struct {
		name   string
		report CheckReport
		want   string
	}{{
		name:   "ok",
		report: CheckReport{Target: "lab/ci", ServerVersion: "v1.35.0", Reachable: true, TektonInstalled: true},
		want:   `{"target":"lab/ci","serverVersion":"v1.35.0","reachable":true,"tektonInstalled":true,"missing":[],"ok":true}`,
	}, {
		name:   "runner",
		report: CheckReport{Target: "lab/ci", ServerVersion: "v1.35.0", Reachable: true, TektonInstalled: true, Runner: &RunnerMount{Why: "the cluster has no node"}},
		want:   `{"target":"lab/ci","serverVersion":"v1.35.0","reachable":true,"tektonInstalled":true,"missing":[],"runner":{"mounted":false,"why":"the cluster has no node"},"ok":true}`,
	}, {
		name: "missing",
		report: CheckReport{Target: "lab/ci", ServerVersion: "v1.35.0", Reachable: true, TektonInstalled: true,
			Missing: []Permission{{"", "pods", "exec", "create"}, {"tekton.dev", "tasks", "", "get"}}},
		want: `{"target":"lab/ci","serverVersion":"v1.35.0","reachable":true,"tektonInstalled":true,"missing":[` +
			`{"resource":"pods","subresource":"exec","verb":"create"},{"group":"tekton.dev","resource":"tasks","verb":"get"}],"ok":false}`,
	}, {
		name:   "unreachable",
		report: CheckReport{Target: "lab/ci", Err: errors.New("connection refused")},
		want:   `{"target":"lab/ci","reachable":false,"tektonInstalled":false,"missing":[],"error":"connection refused","ok":false}`,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := json.Marshal(tc.report)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("JSON (-want +got):\n%s", diff)
			}
		})
	}
}
