package translate_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/translate"
)

// TestIdentity: a step whose tags map to a ServiceAccount (or a task of a team that maps
// to one) runs as that account, with its token projected into that step alone, for the
// audience and lifetime given (EKS's by default); the other steps of the build run as the
// run's account, without a token; a get runs as one only when its own tags map; a step
// whose tags map to two accounts is refused at its position.
func TestIdentity(t *testing.T) {
	file := filepath.Join(t.TempDir(), "p.yml")
	pipeline := `
resources: [{name: r, type: git, source: {uri: u}}]
jobs:
- name: deploy
  plan:
  - get: r
  - get: r2
    resource: r
    tags: [aws]
  - task: plan
    config: {platform: linux, image_resource: {type: registry-image, source: {repository: busybox}}, run: {path: "true"}}
  - task: apply
    tags: [aws]
    config: {platform: linux, image_resource: {type: registry-image, source: {repository: busybox}}, run: {path: "true"}}
`
	if err := os.WriteFile(file, []byte(pipeline), 0o644); err != nil {
		t.Fatal(err)
	}
	type step struct{ account, audience string }
	for _, tc := range []struct {
		name string
		id   translate.Identity
		want map[string]step // by PipelineTask: what it runs as ("" the run's, no token)
	}{
		{"by tag", translate.Identity{ByTag: map[string]string{"aws": "deployer"}},
			map[string]step{"get-r": {}, "get-r2": {"deployer", "sts.amazonaws.com"}, "task-plan": {}, "task-apply": {"deployer", "sts.amazonaws.com"}}},
		{"by team, a tag over it", translate.Identity{ByTag: map[string]string{"aws": "deployer"}, ByTeam: map[string]string{"main": "team-main", "other": "team-other"}, Audience: "vault"},
			map[string]step{"get-r": {}, "get-r2": {"deployer", "vault"}, "task-plan": {"team-main", "vault"}, "task-apply": {"deployer", "vault"}}},
		{"none", translate.Identity{}, map[string]step{"get-r": {}, "get-r2": {}, "task-plan": {}, "task-apply": {}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := translateFile(t, file, "deploy", translate.Options{Identity: tc.id, ServiceAccount: "builder"})
			if err != nil {
				t.Fatal(err)
			}
			validate(t, r)
			if got := r.PipelineRun.Spec.TaskRunTemplate.ServiceAccountName; got != "builder" {
				t.Errorf("the run's account %q; want builder", got)
			}
			tasks := map[string]string{}
			for _, pt := range r.Pipeline.Spec.Tasks {
				tasks[pt.Name] = pt.TaskRef.Name
			}
			for name, want := range tc.want {
				if _, ok := tasks[name]; !ok {
					t.Fatalf("no PipelineTask %s in %v", name, tasks)
				}
				account := ""
				for _, s := range r.PipelineRun.Spec.TaskRunSpecs {
					if s.PipelineTaskName == name {
						account = s.ServiceAccountName
					}
				}
				var task *v1.Task
				for _, tk := range r.Tasks {
					if tk.Name == tasks[name] {
						task = tk
					}
				}
				if task == nil {
					t.Fatalf("no Task %s", tasks[name])
				}
				var projected *corev1.ServiceAccountTokenProjection
				for _, v := range task.Spec.Volumes {
					if v.Projected != nil {
						projected = v.Projected.Sources[0].ServiceAccountToken
					}
				}
				var mounted, env bool
				for _, s := range task.Spec.Steps {
					for _, m := range s.VolumeMounts {
						mounted = mounted || (s.Name == runspec.StepRun && m.MountPath == translate.IdentityTokenDir)
					}
					for _, e := range s.Env {
						env = env || (s.Name == runspec.StepRun && e.Name == translate.IdentityTokenEnv && e.Value == translate.IdentityTokenPath)
					}
				}
				switch {
				case want.account == "":
					if account != "" || projected != nil || mounted || env {
						t.Errorf("%s runs as %q with a token (%v, mounted %v); want the run's account, no token", name, account, projected, mounted)
					}
				default:
					if account != want.account || projected == nil || projected.Audience != want.audience || !mounted || !env {
						t.Errorf("%s runs as %q, token %+v, mounted %v, env %v; want %s with a token for %s", name, account, projected, mounted, env, want.account, want.audience)
					} else if *projected.ExpirationSeconds != translate.DefaultIdentityExpiration {
						t.Errorf("%s's token lives %ds; want %d", name, *projected.ExpirationSeconds, translate.DefaultIdentityExpiration)
					}
				}
			}
		})
	}

	// Two tags, two accounts: refused, at the step.
	two := strings.Replace(pipeline, "tags: [aws]\n    config", "tags: [aws, gcp]\n    config", 1)
	if err := os.WriteFile(file, []byte(two), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := translateFile(t, file, "deploy", translate.Options{Identity: translate.Identity{ByTag: map[string]string{"aws": "deployer", "gcp": "gke-deployer"}}})
	if err == nil || !strings.Contains(err.Error(), `step "apply"`) || !strings.Contains(err.Error(), "its tags aws and gcp map to two service accounts, deployer and gke-deployer") {
		t.Errorf("two accounts: %v; want refused at step apply", err)
	}
}
