package translate_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	psaapi "k8s.io/pod-security-admission/api"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/translate"
)

func checkBuild(t *testing.T, plan concourse.Plan, opts translate.Options) *translate.Result {
	t.Helper()
	base := translate.Options{Team: "main", Pipeline: "app", Job: "check-repo", Build: "17", TeamID: 1, PipelineID: 2, BuildID: 17, Check: true,
		SuppliedCredentials: true, NodeSelectors: map[string]map[string]string{"big": {"pool": "big"}},
		ResourceImages: map[string]string{"git": "concourse/git-resource@sha256:" + strings.Repeat("a", 64)}}
	if opts.ServiceAccount != "" {
		base.ServiceAccount = opts.ServiceAccount
	}
	base.UserNamespaces = opts.UserNamespaces
	base.Identity = opts.Identity
	r, err := translate.Translate(plan, base)
	if err != nil {
		t.Fatal(err)
	}
	validate(t, r)
	return r
}

func gitCheck(tags ...string) concourse.Plan {
	return concourse.Plan{ID: "1", Check: &concourse.CheckPlan{Name: "repo", Type: "git", Resource: "repo", Tags: tags,
		Source: concourse.Source{"uri": "https://ci:((token))@git.example.com/r.git"}, TypeImage: concourse.TypeImage{BaseType: "git"}}}
}

// TestCheckSession: a check build becomes a session's pod, the check step's own
// container serving checks (its image, its security, its node by its tags, the runner's
// install, no token, no Secret mounted), and the check's request, whose spec is the
// step's, its build's name given, and whose credentials are the starter's to add.
func TestCheckSession(t *testing.T) {
	r := checkBuild(t, gitCheck("big"), translate.Options{ServiceAccount: "builds"})
	s, err := r.CheckSession()
	if err != nil {
		t.Fatal(err)
	}
	pod := s.Pod.Spec
	if len(pod.Containers) != 1 || len(pod.InitContainers) != 1 {
		t.Fatalf("containers %d, init containers %d; want one of each", len(pod.Containers), len(pod.InitContainers))
	}
	c := pod.Containers[0]
	if c.Name != runspec.SessionContainer || c.Image != s.Image || !strings.HasPrefix(c.Image, "concourse/git-resource@sha256:") {
		t.Errorf("container %s of %s (session image %s); want %s of the type's image", c.Name, c.Image, s.Image, runspec.SessionContainer)
	}
	if diff := cmp.Diff([]string{runspec.RunnerPath, "serve", "--timeout=2h0m0s", "--image=" + s.Image}, append(c.Command, c.Args...)); diff != "" {
		t.Errorf("command (-want +got):\n%s", diff)
	}
	if len(c.Ports) != 1 || c.Ports[0].ContainerPort != runspec.SessionPort {
		t.Errorf("ports %v; want the one checks are served on", c.Ports)
	}
	if *pod.AutomountServiceAccountToken || *pod.EnableServiceLinks || pod.ServiceAccountName != "builds" || pod.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("pod token %v, links %v, account %q, restart %s; want no token, no links, builds, never", *pod.AutomountServiceAccountToken, *pod.EnableServiceLinks, pod.ServiceAccountName, pod.RestartPolicy)
	}
	if diff := cmp.Diff(map[string]string{"pool": "big"}, pod.NodeSelector); diff != "" {
		t.Errorf("node selector (-want +got):\n%s", diff)
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = m.Name
	}
	for _, v := range pod.Volumes {
		if v.Secret != nil || v.Projected != nil {
			t.Errorf("the pod mounts the Secret volume %s", v.Name)
		}
		if v.Name == "check-creds" && (v.EmptyDir == nil || v.EmptyDir.Medium != corev1.StorageMediumMemory) {
			t.Errorf("the credentials' volume is %+v; want an emptyDir in memory", v.VolumeSource)
		}
	}
	for _, p := range []string{runspec.RunnerDir, "/scratch", runspec.SessionRoot, runspec.SessionCreds} {
		if mounts[p] == "" {
			t.Errorf("nothing mounted at %s (%v)", p, mounts)
		}
	}
	if s.Pod.Labels[runspec.LabelCheckSession] != s.Hash || s.Pod.Labels[runspec.LabelJob] != "check-repo" || s.Pod.Annotations[runspec.LabelPipeline] != "app" {
		t.Errorf("labels %v, annotations %v; want the hash and the check's job and pipeline", s.Pod.Labels, s.Pod.Annotations)
	}
	if errs := psaEvaluator.EvaluatePod(psaapi.LevelVersion{Level: psaapi.LevelBaseline, Version: psaapi.LatestVersion()}, &s.Pod.ObjectMeta, &s.Pod.Spec); !allowed(errs) {
		t.Errorf("the pod is not Pod Security baseline: %+v", errs)
	}
	spec := s.Request.Spec
	if spec.Mode != runspec.ModeCheck || spec.Build.Name != "17" || spec.Check.Source["uri"] != "https://ci:((token))@git.example.com/r.git" || !spec.SuppliedCredentials {
		t.Errorf("request spec %+v", spec)
	}
	var ctx runspec.Build
	if err := json.Unmarshal(s.Request.Context, &ctx); err != nil || !ctx.Check || ctx.ID != 17 {
		t.Errorf("request context %s (%v); want the check build's", s.Request.Context, err)
	}
	if len(s.Request.Credentials) != 0 || len(s.Credentials) != 1 || s.Credentials[0].Var != "token" {
		t.Errorf("request credentials %v, credentials %+v; want none given and token to give", s.Request.Credentials, s.Credentials)
	}
	// The same check of another build is the same session; on other nodes, another.
	again, err := checkBuild(t, gitCheck("big"), translate.Options{ServiceAccount: "builds"}).CheckSession()
	if err != nil || again.Hash != s.Hash {
		t.Errorf("the same check compiled again is session %s (%v); want %s", again.Hash, err, s.Hash)
	}
	other, err := checkBuild(t, gitCheck(), translate.Options{ServiceAccount: "builds"}).CheckSession()
	if err != nil || other.Hash == s.Hash {
		t.Errorf("the check on other nodes is session %s (%v); want another than %s", other.Hash, err, s.Hash)
	}
}

// TestNoCheckSession: what cannot run in a check session says why.
func TestNoCheckSession(t *testing.T) {
	job, err := translateFile(t, "testdata/hooks/pipeline.yml", "test", translate.Options{SuppliedCredentials: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := job.CheckSession(); err == nil || !strings.Contains(err.Error(), "steps, not one check") {
		t.Errorf("a job's build: %v; want its steps counted", err)
	}
	opts := translate.Options{Team: "main", Pipeline: "app", Job: "check-repo", Build: "17", Check: true}
	r, err := translate.Translate(gitCheck(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.CheckSession(); err == nil || !strings.Contains(err.Error(), "namespace's Secrets") {
		t.Errorf("a check reading the namespace's Secrets: %v", err)
	}
}

// TestCheckSessionIdentity: a check whose tag maps to a ServiceAccount runs its session's
// pod as that account, with the account's token projected into its container and the
// variable that says where, as the step's own pod would; the same check without the tag
// has neither.
func TestCheckSessionIdentity(t *testing.T) {
	id := translate.Identity{ByTag: map[string]string{"big": "repo-reader"}, Audience: "vault"}
	for _, tc := range []struct {
		tags    []string
		account string
	}{{[]string{"big"}, "repo-reader"}, {nil, "builds"}} {
		r := checkBuild(t, gitCheck(tc.tags...), translate.Options{ServiceAccount: "builds", Identity: id})
		s, err := r.CheckSession()
		if err != nil {
			t.Fatal(err)
		}
		pod := s.Pod.Spec
		var token *corev1.ServiceAccountTokenProjection
		for _, v := range pod.Volumes {
			if v.Projected != nil {
				token = v.Projected.Sources[0].ServiceAccountToken
			}
		}
		mounted := slices.ContainsFunc(pod.Containers[0].VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == translate.IdentityTokenDir })
		env := slices.ContainsFunc(pod.Containers[0].Env, func(e corev1.EnvVar) bool {
			return e.Name == translate.IdentityTokenEnv && e.Value == translate.IdentityTokenPath
		})
		if pod.ServiceAccountName != tc.account {
			t.Errorf("tags %v: the session runs as %q; want %s", tc.tags, pod.ServiceAccountName, tc.account)
		}
		want := tc.tags != nil
		if (token != nil) != want || mounted != want || env != want || (want && token.Audience != "vault") {
			t.Errorf("tags %v: token %+v, mounted %v, env %v; want them %v", tc.tags, token, mounted, env, want)
		}
		if *pod.AutomountServiceAccountToken {
			t.Errorf("tags %v: the account's token is automounted", tc.tags)
		}
	}
}
