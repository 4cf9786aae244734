//go:build e2e

package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestIdentity: a step whose tag maps to a ServiceAccount (--tag-service-account) runs as
// it, with a token projected for the audience given, whose subject is that account; the
// next step of the same build, untagged, has no token at all, neither that one nor the
// namespace's default account's. The task prints the token's claims (its middle part:
// without the signature it is no credential), which the test decodes.
func TestIdentity(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := testCluster.kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "deployer"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "identity.yml")
	pipeline := `
jobs:
- name: deploy
  plan:
  - task: with-identity
    tags: [cloud]
    config:
      platform: linux
      ` + busyboxImageResource() + `
      run: {path: sh, args: [-c, 'echo "claims: $(cut -d. -f2 "$CONCOURSE_IDENTITY_TOKEN_FILE")"']}
  - task: without
    config:
      platform: linux
      ` + busyboxImageResource() + `
      run:
        path: sh
        args: [-c, 'if [ -n "$CONCOURSE_IDENTITY_TOKEN_FILE" ] || [ -e /var/run/secrets/concourse-tekton/identity/token ] || [ -e /var/run/secrets/kubernetes.io/serviceaccount/token ]; then echo has-a-token; exit 1; fi; echo no-token']
`
	if err := os.WriteFile(file, []byte(pipeline), 0o644); err != nil {
		t.Fatal(err)
	}
	exit, stdout, stderr := runCLI(t, ctx, "run", file, "-j", "deploy", "-w", "-n", ns, "--runner-image", runnerImage,
		"--tag-service-account", "cloud=deployer", "--identity-audience", "e2e-audience", "--identity-expiration", "1h",
		"--kubeconfig", kubeconfigPath())
	if exit != 0 {
		t.Fatalf("run -j deploy: exit %d\nstdout:\n%s\nstderr:\n%s", exit, stdout, stderr)
	}
	var claims struct {
		Aud []string `json:"aud"`
		Sub string   `json:"sub"`
		Exp int64    `json:"exp"`
		Iat int64    `json:"iat"`
	}
	found := false
	for _, l := range lines(stdout) {
		if enc, ok := strings.CutPrefix(l, "claims: "); ok {
			raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(enc, "="))
			if err != nil {
				t.Fatalf("the token's claims %q: %v", enc, err)
			}
			if err := json.Unmarshal(raw, &claims); err != nil {
				t.Fatalf("the token's claims %s: %v", raw, err)
			}
			found = true
		}
	}
	if !found {
		t.Fatalf("no claims printed:\n%s", stdout)
	}
	if !slices.Equal(claims.Aud, []string{"e2e-audience"}) || claims.Sub != "system:serviceaccount:"+ns+":deployer" || claims.Exp-claims.Iat != 3600 {
		t.Errorf("the token's claims %+v; want audience e2e-audience, subject deployer of %s, an hour", claims, ns)
	}
	if !strings.Contains(stdout, "no-token") {
		t.Errorf("the untagged step has a token:\n%s", stdout)
	}
	// The pods: the tagged step's runs as deployer, the other as the namespace's default.
	pods, err := testCluster.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	accounts := map[string]string{}
	for _, p := range pods.Items {
		accounts[p.Labels["tekton.dev/pipelineTask"]] = p.Spec.ServiceAccountName
	}
	if accounts["task-with-identity"] != "deployer" || accounts["task-without"] != "default" {
		t.Errorf("pods' service accounts %v; want task-with-identity deployer, task-without default", accounts)
	}
}
