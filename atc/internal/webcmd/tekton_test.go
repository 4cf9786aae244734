package webcmd

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"code.cloudfoundry.org/lager/v3/lagertest"
	"github.com/concourse/concourse/atc/db/dbfakes"
	"github.com/concourse/concourse/atc/engine/enginefakes"
	"github.com/google/go-cmp/cmp"

	"github.com/concourse-tekton/concourse-tekton/atc/tektonengine"
	"github.com/concourse-tekton/concourse-tekton/translate"
)

func TestTektonFlags(t *testing.T) {
	want := TektonFlags{
		Namespace:         "ci",
		RunnerImage:       "ghcr.io/concourse-tekton/runner:dev",
		ResourceImages:    map[string]string{"mock": "e2e.invalid/mock-resource:v1", "git": "e2e.invalid/git-resource:v1"},
		BuildVolumeSize:   "1Gi",
		HeartbeatInterval: 30 * time.Second,
		GCInterval:        10 * time.Minute,
	}
	t.Run("flags", func(t *testing.T) {
		cmd, _, err := parse(t, "web", "--tekton-namespace", "ci", "--tekton-runner-image", "ghcr.io/concourse-tekton/runner:dev",
			"--tekton-resource-image", "mock=e2e.invalid/mock-resource:v1", "--tekton-resource-image", "git=e2e.invalid/git-resource:v1")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, cmd.Web.Tekton); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
	t.Run("environment", func(t *testing.T) {
		t.Setenv("CONCOURSE_TEKTON_NAMESPACE", "ci")
		t.Setenv("CONCOURSE_TEKTON_RUNNER_IMAGE", "ghcr.io/concourse-tekton/runner:dev")
		t.Setenv("CONCOURSE_TEKTON_RESOURCE_IMAGE", "mock=e2e.invalid/mock-resource:v1,git=e2e.invalid/git-resource:v1")
		cmd, _, err := parse(t, "web")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, cmd.Web.Tekton); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
}

func TestTektonEnabled(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want bool
	}{
		{nil, false},
		{[]string{"--tekton-runner-image", "r"}, false},
		{[]string{"--tekton-namespace", "ci"}, true},
		{[]string{"--tekton-kubeconfig", "/k"}, true},
		{[]string{"--tekton-context", "lab"}, true},
		{[]string{"--tekton-in-cluster"}, true},
	} {
		cmd, _, err := parse(t, append([]string{"web"}, tt.args...)...)
		if err != nil {
			t.Fatal(err)
		}
		if got := cmd.Web.Tekton.Enabled(); got != tt.want {
			t.Errorf("%v: enabled %t, want %t", tt.args, got, tt.want)
		}
	}
}

func TestTektonOptions(t *testing.T) {
	f := TektonFlags{RunnerImage: "r", ResourceImages: map[string]string{"mock": "m"}, ServiceAccount: "builder", StorageClass: "fast", BuildVolumeSize: "2Gi", UserNamespaces: true}
	got, err := f.Options()
	if err != nil {
		t.Fatal(err)
	}
	want := translate.Options{RunnerImage: "r", ResourceImages: map[string]string{"mock": "m"}, ServiceAccount: "builder", StorageClass: "fast", BuildVolumeSize: "2Gi", UserNamespaces: true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := (&TektonFlags{ResourceImages: map[string]string{"mock": ""}}).Options(); err == nil {
		t.Error("--tekton-resource-image mock= accepted")
	}
}

const kubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: lab
  cluster: {server: "https://127.0.0.1:6443"}
contexts:
- name: lab
  context: {cluster: lab, user: admin, namespace: from-context}
current-context: lab
users:
- name: admin
  user: {token: x}
`

func TestStepperFactory(t *testing.T) {
	logger := lagertest.NewTestLogger("web")
	fallback := new(enginefakes.FakeStepperFactory)
	workers := new(dbfakes.FakeWorkerFactory)

	var cmd WebCommand
	if got := cmd.StepperFactory(logger, fallback, workers, "http://ci", nil, nil); got != fallback {
		t.Errorf("without --tekton-* flags: %T, want Concourse's own", got)
	}

	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd.Tekton = TektonFlags{Kubeconfig: path, ResourceImages: map[string]string{"mock": "e2e.invalid/mock-resource:v1"}, HeartbeatInterval: time.Second, GCInterval: time.Minute}
	tk, err := cmd.Tekton.openTekton()
	if err != nil {
		t.Fatal(err)
	}
	cmd.tekton = tk
	checks := &tektonengine.CheckConfig{DefaultTimeout: time.Hour}
	pipelines := &tektonengine.SetPipelineConfig{TeamFactory: new(dbfakes.FakeTeamFactory)}
	f, ok := cmd.StepperFactory(logger, fallback, workers, "http://ci", checks, pipelines).(*tektonengine.StepperFactory)
	if !ok {
		t.Fatal("with --tekton-kubeconfig: not the Tekton engine")
	}
	if f.Checks != checks || f.Fallback != fallback {
		t.Error("check builds do not run on Tekton, with Concourse's own engine as the fallback")
	}
	if f.SetPipelines != pipelines {
		t.Error("set_pipeline steps do not get the ATC's teams and builds")
	}
	reg := cmd.tekton.registrar
	if reg == nil || reg.Worker.Name != "tekton-from-context" || reg.Workers != workers || reg.Interval != time.Second {
		t.Fatalf("registrar %+v; want worker tekton-from-context, saved by the ATC's worker factory", reg)
	}
	if sw := cmd.tekton.sweeper; sw == nil || sw.Interval != time.Minute || sw.Target != cmd.tekton.target || sw.Options.Defaults.MaxBuilds != 1 || sw.Options.FailedGrace != 120*time.Hour {
		t.Errorf("sweeper %+v; want the namespace swept every minute under the web node's rules", sw)
	}
	images := map[string]string{}
	for _, rt := range reg.Worker.ResourceTypes {
		images[rt.Type] = rt.Image
	}
	if images["mock"] != "e2e.invalid/mock-resource:v1" || images["registry-image"] != translate.DefaultResourceImages["registry-image"] || len(images) != len(translate.DefaultResourceImages) {
		t.Errorf("base resource types %v; want the defaults with the flag's over them", images)
	}
}
