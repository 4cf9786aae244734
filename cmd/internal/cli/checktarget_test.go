package cli

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	tektonfake "github.com/tektoncd/pipeline/pkg/client/clientset/versioned/fake"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubeversion "k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"

	"github.com/concourse-tekton/concourse-tekton/tektonrun"
)

// fakeWorker is a cluster behind check-target's flags.
type fakeWorker struct {
	tekton      bool     // serves tekton.dev/v1
	denied      []string // permissions not granted, as "verb resource/subresource"
	unreachable bool
	enforce     string // the namespace's Pod Security enforce level
	landing     bool   // an operator landed it
	// runtime is its one node's runtime (of a kubelet of 1.36.3); none: no node.
	runtime string
}

// useFakeTarget makes check-target talk to a fake cluster in namespace "ci", and returns
// the options the command passed.
func useFakeTarget(t *testing.T, w fakeWorker) *tektonrun.TargetOptions {
	t.Helper()
	useFakeTargets(t, map[string]fakeWorker{"ci": w})
	var got tektonrun.TargetOptions
	fake := newTarget
	newTarget = func(o tektonrun.TargetOptions) (*tektonrun.Target, error) {
		got = o
		return fake(o)
	}
	return &got
}

// useFakeTargets makes check-target talk to a fake cluster in each namespace of workers
// (that of the options it passes, else "ci"), and returns the options it passed, in
// the order it passed them.
func useFakeTargets(t *testing.T, workers map[string]fakeWorker) *[]tektonrun.TargetOptions {
	t.Helper()
	got := make([]tektonrun.TargetOptions, 0, len(workers))
	var mu sync.Mutex
	old := newTarget
	t.Cleanup(func() { newTarget = old })
	newTarget = func(o tektonrun.TargetOptions) (*tektonrun.Target, error) {
		mu.Lock()
		got = append(got, o)
		mu.Unlock()
		name := cmp.Or(o.Namespace, "ci")
		w, ok := workers[name]
		if !ok {
			return nil, fmt.Errorf("no fake cluster has namespace %s", name)
		}
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if w.enforce != "" {
			ns.Labels = map[string]string{"pod-security.kubernetes.io/enforce": w.enforce}
		}
		objects := []runtime.Object{ns}
		if w.landing {
			objects = append(objects, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: tektonrun.StateConfigMap, Namespace: name},
				Data: map[string]string{"state": "landing", "since": "2026-11-24T10:00:00Z"}})
		}
		if w.runtime != "" {
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n0"}}
			node.Status.NodeInfo.KubeletVersion, node.Status.NodeInfo.ContainerRuntimeVersion = "v1.36.3", w.runtime
			objects = append(objects, node)
		}
		kube := fake.NewClientset(objects...)
		disc := kube.Discovery().(*fakediscovery.FakeDiscovery)
		disc.FakedServerVersion = &kubeversion.Info{GitVersion: "v1.35.0"}
		if w.tekton {
			disc.Resources = []*metav1.APIResourceList{{GroupVersion: "tekton.dev/v1", APIResources: []metav1.APIResource{{Name: "pipelineruns"}}}}
		}
		if w.unreachable {
			kube.PrependReactor("get", "version", func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")
			})
		}
		kube.PrependReactor("create", "selfsubjectaccessreviews", func(action k8stesting.Action) (bool, runtime.Object, error) {
			review := action.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
			a := review.Spec.ResourceAttributes
			name := a.Verb + " " + a.Resource
			if a.Subresource != "" {
				name += "/" + a.Subresource
			}
			review.Status.Allowed = true
			for _, d := range w.denied {
				review.Status.Allowed = review.Status.Allowed && d != name
			}
			return true, review, nil
		})
		target := tektonrun.NewTargetFromClients(name, kube, tektonfake.NewSimpleClientset())
		target.Config = &rest.Config{Host: "https://127.0.0.1:6443"}
		return target, nil
	}
	return &got
}

func TestCheckTarget(t *testing.T) {
	all := len(tektonrun.Permissions)
	tests := []struct {
		name     string
		worker   fakeWorker
		wantCode int
		want     []string
	}{{
		name:   "ready",
		worker: fakeWorker{tekton: true, runtime: "containerd://2.3.7"},
		want: []string{
			"✓ API server https://127.0.0.1:6443 answers (v1.35.0)",
			"✓ Tekton Pipelines (tekton.dev/v1) is installed",
			"✓ all " + strconv.Itoa(all) + " permissions are granted in namespace ci",
			"✓ Pod Security \"privileged\" (latest) admits every step",
			"✓ target ci is running: it takes builds (0 running)",
			"✓ step pods mount the runner's image as a volume: the cluster mounts images",
		},
	}, {
		// Baseline: a pipeline's privileged steps cannot run there; the others can.
		name:   "baseline namespace",
		worker: fakeWorker{tekton: true, enforce: "baseline", runtime: "containerd://1.7.2"},
		want: []string{
			"✓ API server https://127.0.0.1:6443 answers (v1.35.0)",
			"✓ Tekton Pipelines (tekton.dev/v1) is installed",
			"✓ all " + strconv.Itoa(all) + " permissions are granted in namespace ci",
			`! Pod Security "baseline" (latest) in namespace ci rejects:`,
			`    privileged steps (privileged: true): privileged (container "step-run" must not set securityContext.privileged=true)`,
			"✓ target ci is running: it takes builds (0 running)",
			`! step pods copy the runner in, with a container of their own: node n0 runs "containerd://1.7.2" (image volumes are on by default from Kubernetes 1.35, with containerd 2.1 or CRI-O 1.31)`,
		},
	}, {
		// Restricted: every step that starts as root is rejected, so builds cannot run.
		name:     "restricted namespace",
		worker:   fakeWorker{tekton: true, enforce: "restricted"},
		wantCode: 1,
	}, {
		name:     "missing permissions",
		worker:   fakeWorker{tekton: true, denied: []string{"create pods/exec", "watch pipelineruns", "get secrets"}},
		wantCode: 1,
		want: []string{
			"✓ API server https://127.0.0.1:6443 answers (v1.35.0)",
			"✓ Tekton Pipelines (tekton.dev/v1) is installed",
			"✗ missing permissions in namespace ci (3):",
			"    watch pipelineruns.tekton.dev",
			"    create pods/exec",
			"    get secrets",
			"✓ Pod Security \"privileged\" (latest) admits every step",
			"✓ target ci is running: it takes builds (0 running)",
			"! step pods copy the runner in, with a container of their own: the cluster has no node",
		},
	}, {
		name:     "no Tekton",
		worker:   fakeWorker{},
		wantCode: 1,
		want: []string{
			"✓ API server https://127.0.0.1:6443 answers (v1.35.0)",
			"✗ Tekton Pipelines (tekton.dev/v1) is not installed: install it, see https://tekton.dev/docs/installation/pipelines/",
			"✓ all " + strconv.Itoa(all) + " permissions are granted in namespace ci",
			"✓ Pod Security \"privileged\" (latest) admits every step",
			"✓ target ci is running: it takes builds (0 running)",
			"! step pods copy the runner in, with a container of their own: the cluster has no node",
		},
	}, {
		// Landed by an operator: as wanted, so the check passes, and says so.
		name:   "landed",
		worker: fakeWorker{tekton: true, landing: true},
		want: []string{
			"✓ API server https://127.0.0.1:6443 answers (v1.35.0)",
			"✓ Tekton Pipelines (tekton.dev/v1) is installed",
			"✓ all " + strconv.Itoa(all) + " permissions are granted in namespace ci",
			"✓ Pod Security \"privileged\" (latest) admits every step",
			"! target ci is landed since 2026-11-24T10:00:00Z: it takes no new build (land --undo takes them again)",
			"! step pods copy the runner in, with a container of their own: the cluster has no node",
		},
	}, {
		name:     "unreachable",
		worker:   fakeWorker{unreachable: true},
		wantCode: 1,
		want: []string{
			"✗ API server https://127.0.0.1:6443 does not answer: asking the API server its version: dial tcp 127.0.0.1:6443: connect: connection refused",
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := useFakeTarget(t, tc.worker)
			code, stdout, stderr := run(t, "", "check-target", "--kubeconfig", "/k/config", "--context", "lab", "-n", "ci", "--qps", "5")
			if code != tc.wantCode || stderr != "" {
				t.Errorf("code %d, stderr %q; want code %d, no stderr", code, stderr, tc.wantCode)
			}
			if tc.want == nil {
				if !strings.Contains(stdout, `✗ Pod Security "restricted" (latest) in namespace ci rejects:`) ||
					!strings.Contains(stdout, "steps whose runner switches to run.user") {
					t.Errorf("stdout does not say restricted rejects the steps:\n%s", stdout)
				}
			} else if diff := gocmp.Diff(tc.want, strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
			wantOpts := tektonrun.TargetOptions{Kubeconfig: "/k/config", Context: "lab", Namespace: "ci", QPS: 5, Burst: 100, UserAgent: "concourse-tekton/" + version}
			if diff := gocmp.Diff(wantOpts, *opts); diff != "" {
				t.Errorf("target options (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckTargetJSON(t *testing.T) {
	useFakeTarget(t, fakeWorker{tekton: true, denied: []string{"get pods/log"}})
	code, stdout, stderr := run(t, "", "check-target", "-o", "json")
	if code != 1 || stderr != "" {
		t.Errorf("code %d, stderr %q; want code 1, no stderr", code, stderr)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	want := map[string]any{
		"target":          "ci",
		"serverVersion":   "v1.35.0",
		"reachable":       true,
		"tektonInstalled": true,
		"missing":         []any{map[string]any{"resource": "pods", "subresource": "log", "verb": "get"}},
		"podSecurity":     map[string]any{"level": "privileged", "version": "latest", "rejected": []any{}, "tektonSecurityContext": false},
		"status":          map[string]any{"state": "running", "running": float64(0)},
		"runner":          map[string]any{"mounted": false, "why": "the cluster has no node"},
		"ok":              false,
	}
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
}

func TestCheckTargetErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "kubeconfig")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"bad kubeconfig path", []string{"check-target", "--kubeconfig", missing}, "error: kubeconfig " + missing + " does not exist: check --kubeconfig\n"},
		{"bad output", []string{"check-target", "-o", "table"}, "error: invalid --output \"table\": use json or yaml\n"},
		{"arguments", []string{"check-target", "ci"}, "error: unknown command \"ci\" for \"concourse-tekton check-target\"\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := run(t, "", tc.args...)
			if code != 1 || stdout != "" {
				t.Errorf("code %d, stdout %q; want code 1, no stdout", code, stdout)
			}
			if diff := gocmp.Diff(tc.want, stderr); diff != "" {
				t.Errorf("stderr (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLand lands the target and takes it back, saying its state each time.
func TestLand(t *testing.T) {
	useFakeTarget(t, fakeWorker{tekton: true})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"land"}, "target ci is landed: it takes no new build, and none runs\n"},
		{[]string{"land"}, "target ci is landed: it takes no new build, and none runs\n"},
		{[]string{"land", "--undo"}, "target ci is running: it takes builds (0 running)\n"},
	} {
		code, stdout, stderr := run(t, "", tc.args...)
		if code != 0 || stdout != tc.want || stderr != "" {
			t.Errorf("%v: code %d, stdout %q, stderr %q; want %q", tc.args, code, stdout, stderr, tc.want)
		}
	}
}

// TestCheckTargets: with --targets, each of the web node's workers is checked, the flags'
// as the first, then where each team's steps go: its own workers first, the shared ones
// when none of its own fits or takes builds, and privileged steps only where the
// namespace admits them.
func TestCheckTargets(t *testing.T) {
	opts := useFakeTargets(t, map[string]fakeWorker{
		"ci":     {tekton: true, enforce: "baseline"},
		"ci-ml":  {tekton: true},
		"ci-ops": {tekton: true, enforce: "baseline", landing: true},
	})
	file := writeFile(t, "targets.yml", `- namespace: ci-ml
  in_cluster: true
  worker: ml-gpu
  team: ml
  tags: [gpu]
- namespace: ci-ops
  kubeconfig: /other/config
  team: ops
`)
	code, stdout, stderr := run(t, "", "check-target", "--kubeconfig", "/k/config", "-n", "ci", "--targets", file)
	if code != 0 || stderr != "" {
		t.Errorf("code %d, stderr %q; want 0, none", code, stderr)
	}
	refused := `privileged ones refused: worker tekton-ci's namespace enforces Pod Security baseline: privileged (container "step-run" must not set securityContext.privileged=true)`
	for _, want := range []string{
		"worker tekton-ci (namespace ci, every team's):\n✓ API server",
		"\n\nworker ml-gpu (namespace ci-ml, team ml's, tags gpu):\n✓ API server",
		"\n\nworker tekton-ci-ops (namespace ci-ops, team ops's):\n✓ API server",
		"! target ci-ops is landed since 2026-11-24T10:00:00Z: it takes no new build (land --undo takes them again)\n",
		"\nwhere each team's steps run:\n" +
			"    team ml, steps without tags: tekton-ci; " + refused + "\n" +
			"    team ml, steps tagged gpu: ml-gpu (the team's own); privileged ones on ml-gpu\n" +
			"    team ops, steps without tags: tekton-ci; " + refused + "\n" +
			"    team ops, steps tagged gpu: no worker: such a build errors\n" +
			"    every other team, steps without tags: tekton-ci; " + refused + "\n" +
			"    every other team, steps tagged gpu: no worker: such a build errors\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout does not have %q:\n%s", want, stdout)
		}
	}
	byNamespace := map[string]tektonrun.TargetOptions{}
	for _, o := range *opts {
		byNamespace[o.Namespace] = o
	}
	if o := byNamespace["ci-ml"]; o.Kubeconfig != "/k/config" || o.InCluster {
		t.Errorf("ci-ml (in_cluster) checked with %+v; want the flags' cluster", o)
	}
	if o := byNamespace["ci-ops"]; o.Kubeconfig != "/other/config" {
		t.Errorf("ci-ops checked with %+v; want its own kubeconfig", o)
	}

	code, stdout, _ = run(t, "", "check-target", "-n", "ci", "--team", "main", "--targets", file, "-o", "json")
	var report struct {
		Targets []struct {
			Worker, Team string
		}
		Teams []teamPlace
	}
	if err := json.Unmarshal([]byte(stdout), &report); err != nil || code != 0 {
		t.Fatalf("-o json: code %d, %v\n%s", code, err, stdout)
	}
	if len(report.Targets) != 3 || report.Targets[0].Team != "main" || report.Teams[0].Team != "main" || !report.Teams[0].Steps[0].Own {
		t.Errorf("-o json with --team main: %+v", report)
	}
}

func TestCheckTargetsErrors(t *testing.T) {
	useFakeTargets(t, map[string]fakeWorker{"ci": {tekton: true}, "ci-x": {tekton: true}})
	bad := writeFile(t, "bad.yml", "- namespace: ci-x\n  tags: [\"no tag\"]\n")
	twice := writeFile(t, "twice.yml", "- namespace: ci-x\n  worker: tekton-ci\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--team", "ml"}, "error: --worker, --team and --tag describe the first of the web node's workers: give --targets too\n"},
		{[]string{"--targets", bad}, "error: --targets " + bad + `:2:9: targets[0].tags: "no tag" is not a tag (letters, digits, and _ . : / - after the first)` + "\n"},
		{[]string{"--targets", twice}, "error: --targets " + twice + ":1:3: targets[0]: worker tekton-ci is the flags' target's name already\n"},
		{[]string{"--targets", bad, "--tag", "a b"}, "error: --tag \"a b\" is not a tag (letters, digits, and _ . : / - after the first)\n"},
	} {
		code, stdout, stderr := run(t, "", append([]string{"check-target", "-n", "ci"}, tc.args...)...)
		if code != 1 || stdout != "" || stderr != tc.want {
			t.Errorf("%v: code %d, stdout %q, stderr %q; want 1, none, %q", tc.args, code, stdout, stderr, tc.want)
		}
	}
}
