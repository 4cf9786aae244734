// Package helm holds the tests of the chart in concourse-tekton/, run with the real helm
// (HELM=path; `make test` builds it with helm.sh): helm lint, helm template against golden
// files, and what the rendered objects must promise: the web node's Role is exactly what the
// engine uses, the release's own pods pass Pod Security "restricted", no secret value is
// outside the Secret, and values the chart cannot honour are refused with a reason.
package helm

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	"sigs.k8s.io/yaml"

	"github.com/concourse-tekton/concourse-tekton/internal/golden"
	"github.com/concourse-tekton/concourse-tekton/tektonrun"
)

var update = flag.Bool("update", false, "rewrite the golden files")

const (
	chart     = "concourse-tekton"
	release   = "ci"
	namespace = "concourse"
	// kubeVersion is the cluster version helm renders for (the chart needs 1.33+).
	kubeVersion = "1.36.3"
)

// helm runs the helm named by $HELM in this directory and returns its standard output;
// without $HELM the test fails, saying how to run it.
func helm(t *testing.T, args ...string) ([]byte, error) {
	t.Helper()
	bin := os.Getenv("HELM")
	if bin == "" {
		t.Fatal("HELM is not set: run `make test`, or HELM=$(deploy/helm/helm.sh) go test ./deploy/helm/")
	}
	var out, errOut bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	// No kubeconfig, no repository cache of the user's: helm template and lint need none.
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(home, "none"), "HELM_CACHE_HOME="+home,
		"HELM_CONFIG_HOME="+home, "HELM_DATA_HOME="+home)
	if err := cmd.Run(); err != nil {
		return out.Bytes(), fmt.Errorf("helm %s: %w: %s", strings.Join(args, " "), err, errOut.String())
	}
	return out.Bytes(), nil
}

// render is helm template of the chart with the values files given.
func render(t *testing.T, values ...string) ([]byte, error) {
	args := []string{"template", release, chart, "--namespace", namespace, "--kube-version", kubeVersion}
	for _, v := range values {
		args = append(args, "--values", v)
	}
	return helm(t, args...)
}

// valueSets are testdata/*.values.yaml: each is linted and rendered to its golden file.
func valueSets(t *testing.T) []string {
	sets, err := filepath.Glob("testdata/*.values.yaml")
	if err != nil || len(sets) == 0 {
		t.Fatalf("no testdata/*.values.yaml: %v", err)
	}
	return sets
}

func TestLint(t *testing.T) {
	if _, err := helm(t, "lint", "--strict", chart, "--namespace", namespace, "--kube-version", kubeVersion); err != nil {
		t.Fatalf("the default values: %v", err)
	}
	for _, set := range valueSets(t) {
		if _, err := helm(t, "lint", "--strict", chart, "--namespace", namespace, "--kube-version", kubeVersion, "--values", set); err != nil {
			t.Errorf("%s: %v", set, err)
		}
	}
}

func TestTemplateGolden(t *testing.T) {
	for _, set := range valueSets(t) {
		t.Run(filepath.Base(set), func(t *testing.T) {
			got, err := render(t, set)
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, strings.TrimSuffix(set, ".values.yaml")+".golden.yaml", got, *update)
		})
	}
}

// TestTemplateDeterministic: the same values, the same bytes (given the generated secrets).
func TestTemplateDeterministic(t *testing.T) {
	set := valueSets(t)[0]
	a, errA := render(t, set)
	b, errB := render(t, set)
	if err := errors.Join(errA, errB); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("two renders of the same values differ")
	}
}

// objects are a render's documents, by kind.
type objects struct {
	deployments  []appsv1.Deployment
	statefulSets []appsv1.StatefulSet
	roles        []rbacv1.Role
	clusterRoles []rbacv1.ClusterRole
	namespaces   []corev1.Namespace
	secrets      []corev1.Secret
	configMaps   []corev1.ConfigMap
	// other are the documents of every other kind, as text.
	other []string
	// all are every document as text, by kind, for what must appear nowhere.
	all []document
}

// parse decodes a render strictly: a field the API does not have is an error.
func parse(t *testing.T, rendered []byte) objects {
	t.Helper()
	var o objects
	for doc := range strings.SplitSeq(string(rendered), "\n---\n") {
		doc = strings.TrimPrefix(strings.TrimSpace(doc), "---\n")
		var head struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			t.Fatalf("a rendered document is not YAML: %v\n%s", err, doc)
		}
		if head.Kind == "" {
			continue
		}
		o.all = append(o.all, document{head.Kind, doc})
		var err error
		switch head.Kind {
		case "Deployment":
			err = decode(doc, &o.deployments)
		case "StatefulSet":
			err = decode(doc, &o.statefulSets)
		case "Role":
			err = decode(doc, &o.roles)
		case "ClusterRole":
			err = decode(doc, &o.clusterRoles)
		case "Namespace":
			err = decode(doc, &o.namespaces)
		case "Secret":
			err = decode(doc, &o.secrets)
		case "ConfigMap":
			err = decode(doc, &o.configMaps)
		default:
			o.other = append(o.other, doc)
		}
		if err != nil {
			t.Fatalf("%s: %v\n%s", head.Kind, err, doc)
		}
	}
	return o
}

type document struct{ kind, text string }

func decode[T any](doc string, into *[]T) error {
	var v T
	if err := yaml.UnmarshalStrict([]byte(doc), &v); err != nil {
		return err
	}
	*into = append(*into, v)
	return nil
}

// TestRoleIsWhatTheEngineUses: in every builds' namespace, the web node's Role grants
// exactly tektonrun.Permissions, no verb more and none fewer.
func TestRoleIsWhatTheEngineUses(t *testing.T) {
	for _, set := range valueSets(t) {
		rendered, err := render(t, set)
		if err != nil {
			t.Fatal(err)
		}
		o := parse(t, rendered)
		builds := map[string]bool{}
		for _, ns := range namespacesOf(t, set) {
			builds[ns] = true
		}
		var want []string
		for _, p := range tektonrun.Permissions {
			want = append(want, permission(p.Group, p.Resource, p.Subresource, p.Verb))
		}
		slices.Sort(want)
		seen := 0
		for _, r := range o.roles {
			if !builds[r.Namespace] {
				continue
			}
			seen++
			for _, rule := range r.Rules {
				if len(rule.ResourceNames) > 0 {
					t.Errorf("%s: Role %s/%s names resources: %v", set, r.Namespace, r.Name, rule.ResourceNames)
				}
			}
			got := granted(r.Rules)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s: Role %s/%s (-the engine's permissions +the chart's):\n%s", set, r.Namespace, r.Name, diff)
			}
		}
		if seen != len(builds) {
			t.Errorf("%s: %d builds' namespaces, a Role in %d", set, len(builds), seen)
		}
	}
}

// granted is what rules grant, one "verb resource[/sub].group" each, sorted.
func granted(rules []rbacv1.PolicyRule) []string {
	var got []string
	for _, rule := range rules {
		for _, g := range rule.APIGroups {
			for _, res := range rule.Resources {
				resource, sub, _ := strings.Cut(res, "/")
				for _, v := range rule.Verbs {
					got = append(got, permission(g, resource, sub, v))
				}
			}
		}
	}
	slices.Sort(got)
	return got
}

// TestClusterRoleIsWhatTheEngineReads: outside the builds' namespaces, the web node may
// read exactly tektonrun.ClusterPermissions (the nodes only with rbac.readNodes), and the
// namespaces only by name, the builds' ones.
func TestClusterRoleIsWhatTheEngineReads(t *testing.T) {
	for _, set := range valueSets(t) {
		rendered, err := render(t, set)
		if err != nil {
			t.Fatal(err)
		}
		o := parse(t, rendered)
		if len(o.clusterRoles) != 1 {
			t.Fatalf("%s: %d ClusterRoles, want 1", set, len(o.clusterRoles))
		}
		readNodes := !strings.Contains(readFile(t, set), "readNodes: false")
		var want []string
		for _, p := range tektonrun.ClusterPermissions {
			if p.Resource == "nodes" && !readNodes {
				continue
			}
			want = append(want, permission(p.Group, p.Resource, p.Subresource, p.Verb))
		}
		slices.Sort(want)
		role := o.clusterRoles[0]
		if diff := cmp.Diff(want, granted(role.Rules)); diff != "" {
			t.Errorf("%s: ClusterRole %s (-the engine's +the chart's):\n%s", set, role.Name, diff)
		}
		for _, rule := range role.Rules {
			if slices.Contains(rule.Resources, "namespaces") {
				if diff := cmp.Diff(namespacesOf(t, set), rule.ResourceNames); diff != "" {
					t.Errorf("%s: the namespaces the web node may read (-builds' +granted):\n%s", set, diff)
				}
			} else if len(rule.ResourceNames) > 0 {
				t.Errorf("%s: %v names resources %v", set, rule.Resources, rule.ResourceNames)
			}
		}
	}
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func permission(group, resource, sub, verb string) string {
	if sub != "" {
		resource += "/" + sub
	}
	return fmt.Sprintf("%s %s.%s", verb, resource, group)
}

// namespacesOf reads the builds' namespaces a values file names (the default name for
// an entry without one).
func namespacesOf(t *testing.T, set string) []string {
	data, err := os.ReadFile(set)
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Tekton struct {
			Namespaces []struct{ Name string }
		}
	}
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	if v.Tekton.Namespaces == nil {
		return []string{namespace + "-builds"}
	}
	var out []string
	for _, ns := range v.Tekton.Namespaces {
		out = append(out, cmpOr(ns.Name, namespace+"-builds"))
	}
	return out
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// TestRestricted: the web node's and Postgres's pods pass Pod Security "restricted", and
// each builds' namespace the chart makes enforces the level its values ask for.
func TestRestricted(t *testing.T) {
	eval, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	restricted := psaapi.LevelVersion{Level: psaapi.LevelRestricted, Version: psaapi.LatestVersion()}
	for _, set := range valueSets(t) {
		rendered, err := render(t, set)
		if err != nil {
			t.Fatal(err)
		}
		o := parse(t, rendered)
		pods := map[string]corev1.PodTemplateSpec{}
		for _, d := range o.deployments {
			pods["Deployment "+d.Name] = d.Spec.Template
		}
		for _, s := range o.statefulSets {
			pods["StatefulSet "+s.Name] = s.Spec.Template
		}
		if len(pods) == 0 {
			t.Fatalf("%s: no pods rendered", set)
		}
		for name, pod := range pods {
			for _, r := range eval.EvaluatePod(restricted, &pod.ObjectMeta, &pod.Spec) {
				if !r.Allowed {
					t.Errorf("%s: %s is not restricted: %s: %s", set, name, r.ForbiddenReason, r.ForbiddenDetail)
				}
			}
		}
		for _, ns := range o.namespaces {
			level := ns.Labels[psaapi.EnforceLevelLabel]
			if level != "baseline" && level != "privileged" {
				t.Errorf("%s: namespace %s enforces %q, not baseline or privileged", set, ns.Name, level)
			}
		}
	}
}

// TestSecretsStayInTheSecret: the values of secrets appear in the Secret (base64) and
// nowhere else: not in an environment variable, an annotation, a ConfigMap.
func TestSecretsStayInTheSecret(t *testing.T) {
	for _, set := range valueSets(t) {
		rendered, err := render(t, set)
		if err != nil {
			t.Fatal(err)
		}
		o := parse(t, rendered)
		if len(o.secrets) != 1 {
			t.Fatalf("%s: %d Secrets, want 1", set, len(o.secrets))
		}
		data := o.secrets[0].Data
		secrets := map[string]string{"postgres-password": string(data["postgres-password"])}
		for line := range strings.SplitSeq(strings.TrimSpace(string(data["session-signing-key"])), "\n") {
			if !strings.HasPrefix(line, "-----") {
				secrets["a line of session-signing-key"] = line
			}
		}
		for user := range strings.SplitSeq(string(data["local-users"]), ",") {
			name, password, _ := strings.Cut(user, ":")
			secrets["the password of local user "+name] = password
		}
		for what, value := range secrets {
			if len(value) < 8 {
				t.Fatalf("%s: %s is %q: too short to look for", set, what, value)
			}
			for _, doc := range o.all {
				if doc.kind != "Secret" && strings.Contains(doc.text, value) {
					t.Errorf("%s: %s is written in a %s:\n%s", set, what, doc.kind, doc.text)
				}
			}
		}
	}
}

// TestRefused: values the chart cannot honour fail the render with the reason.
func TestRefused(t *testing.T) {
	for _, tc := range []struct{ name, values, want string }{
		{"no web node", "web:\n  replicas: 0\n", "web.replicas: one web node at least"},
		{"no builds' namespace", "tekton:\n  namespaces: []\n", "tekton.namespaces: at least one namespace"},
		{"a namespace twice", "tekton:\n  namespaces:\n    - name: b\n    - name: b\n", "tekton.namespaces[1]: namespace b is listed twice"},
		{"the release's namespace", "tekton:\n  namespaces:\n    - name: concourse\n", "tekton.namespaces[0]: builds run in a namespace of their own"},
		{"restricted builds", "tekton:\n  namespaces:\n    - podSecurity: restricted\n", `tekton.namespaces[0].podSecurity: "restricted" is not baseline or privileged`},
		{"a tag's labels that are none", "tekton:\n  tagNodeSelectors:\n    gpu: nvidia\n", "tekton.tagNodeSelectors.gpu: want the node labels of the tag"},
		{"a node label with a comma", "tekton:\n  tagNodeSelectors:\n    gpu:\n      zone: a,b\n", `tekton.tagNodeSelectors.gpu.zone: "a,b": a tag, a label and its value hold no , or =`},
		{"external database without a host", "postgresql:\n  enabled: false\n", "concourse.web.postgres.host: the database's address"},
		{"Garden off the loopback", "concourse:\n  web:\n    env:\n      - name: CONCOURSE_TEKTON_GARDEN_BIND_IP\n        value: 0.0.0.0\n", "concourse.web.env[0]: CONCOURSE_TEKTON_GARDEN_BIND_IP: the Garden and baggageclaim servers authenticate no one"},
		{"baggageclaim off the loopback", "concourse:\n  web:\n    env:\n      - name: CONCOURSE_LOG_LEVEL\n        value: debug\n      - name: CONCOURSE_TEKTON_BAGGAGECLAIM_BIND_IP\n        value: 10.0.0.1\n", "concourse.web.env[1]: CONCOURSE_TEKTON_BAGGAGECLAIM_BIND_IP"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			values := filepath.Join(t.TempDir(), "values.yaml")
			if err := os.WriteFile(values, []byte(tc.values), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := render(t, values)
			if err == nil {
				t.Fatal("rendered")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q in it", err, tc.want)
			}
		})
	}
}
