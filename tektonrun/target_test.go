package tektonrun

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const kubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: lab
  cluster: {server: "https://lab.example:6443"}
- name: prod
  cluster: {server: "https://prod.example:6443"}
users:
- name: me
  user: {token: secret}
contexts:
- name: lab
  context: {cluster: lab, user: me, namespace: ci}
- name: prod
  context: {cluster: prod, user: me}
current-context: lab
`

func TestNewTarget(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config")
	if err := os.WriteFile(path, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	// Neither a kubeconfig nor a pod, whatever the machine running the tests has.
	t.Setenv("KUBECONFIG", filepath.Join(dir, "absent"))
	t.Setenv("KUBERNETES_SERVICE_HOST", "")

	type target struct {
		Name, Namespace, Host, UserAgent string
		QPS                              float32
		Burst                            int
	}
	tests := []struct {
		name       string
		kubeconfig string // the KUBECONFIG variable, when set
		opts       TargetOptions
		want       target
		wantErr    string
	}{{
		name: "current context and its namespace",
		opts: TargetOptions{Kubeconfig: path},
		want: target{Name: "lab/ci", Namespace: "ci", Host: "https://lab.example:6443", QPS: 50, Burst: 100},
	}, {
		name: "namespace flag",
		opts: TargetOptions{Kubeconfig: path, Namespace: "builds"},
		want: target{Name: "lab/builds", Namespace: "builds", Host: "https://lab.example:6443", QPS: 50, Burst: 100},
	}, {
		name: "context without a namespace",
		opts: TargetOptions{Kubeconfig: path, Context: "prod"},
		want: target{Name: "prod/default", Namespace: "default", Host: "https://prod.example:6443", QPS: 50, Burst: 100},
	}, {
		name:       "KUBECONFIG",
		kubeconfig: path,
		opts:       TargetOptions{QPS: 5, Burst: 10, UserAgent: "concourse-tekton/test"},
		want:       target{Name: "lab/ci", Namespace: "ci", Host: "https://lab.example:6443", UserAgent: "concourse-tekton/test", QPS: 5, Burst: 10},
	}, {
		name:    "no configuration",
		wantErr: "no Kubernetes cluster configured: set --kubeconfig or KUBECONFIG, or run in a pod",
	}, {
		name:    "kubeconfig does not exist",
		opts:    TargetOptions{Kubeconfig: filepath.Join(dir, "nope")},
		wantErr: "kubeconfig " + filepath.Join(dir, "nope") + " does not exist: check --kubeconfig",
	}, {
		name:    "unknown context",
		opts:    TargetOptions{Kubeconfig: path, Context: "staging"},
		wantErr: `loading kubeconfig: context "staging" does not exist`,
	}, {
		name:    "in-cluster and a kubeconfig",
		opts:    TargetOptions{Kubeconfig: path, InCluster: true},
		wantErr: "--in-cluster uses the pod's service account: leave out --kubeconfig and --context",
	}, {
		name:    "in-cluster outside a pod",
		opts:    TargetOptions{InCluster: true},
		wantErr: "--in-cluster: unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be defined",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.kubeconfig != "" {
				t.Setenv("KUBECONFIG", tc.kubeconfig)
			}
			tg, err := NewTarget(tc.opts)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tg.Kube == nil || tg.Tekton == nil {
				t.Fatal("a client is missing")
			}
			got := target{tg.Name, tg.Namespace, tg.Config.Host, tg.Config.UserAgent, tg.Config.QPS, tg.Config.Burst}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("target (-want +got):\n%s", diff)
			}
		})
	}
}
