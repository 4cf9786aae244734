package webcmd

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"code.cloudfoundry.org/lager/v3/lagertest"
	"github.com/concourse/concourse/atc/db/dbfakes"
	"github.com/concourse/concourse/atc/engine/enginefakes"
	"github.com/concourse/concourse/atc/worker"
	"github.com/google/go-cmp/cmp"

	"github.com/concourse-tekton/concourse-tekton/atc/tektonengine"
	"github.com/concourse-tekton/concourse-tekton/atc/tektonworker"
	"github.com/concourse-tekton/concourse-tekton/translate"
)

func TestTektonFlags(t *testing.T) {
	want := TektonFlags{
		Namespace:           "ci",
		RunnerImage:         "ghcr.io/concourse-tekton/runner:dev",
		DefaultTaskImage:    "busybox:1.37",
		ResourceImages:      []string{"mock=e2e.invalid/mock-resource:v1", "git=e2e.invalid/git-resource:v1"},
		NodeSelectors:       []string{"gpu=accelerator=nvidia", "arm=kubernetes.io/arch=arm64"},
		BuildVolumeSize:     "1Gi",
		RunnerImageVolume:   "auto",
		HeartbeatInterval:   30 * time.Second,
		GardenBindIP:        "127.0.0.1",
		BaggageclaimBindIP:  "127.0.0.1",
		GCInterval:          10 * time.Minute,
		TagServiceAccounts:  []string{"aws=deployer", "gcp=gke"},
		TeamServiceAccounts: []string{"ml=ml-builder"},
		IdentityAudience:    "sts.amazonaws.com",
		IdentityExpiration:  24 * time.Hour,
	}
	t.Run("flags", func(t *testing.T) {
		cmd, _, err := parse(t, "web", "--tekton-namespace", "ci", "--tekton-runner-image", "ghcr.io/concourse-tekton/runner:dev",
			"--tekton-default-task-image", "busybox:1.37", "--tekton-resource-image", "mock=e2e.invalid/mock-resource:v1", "--tekton-resource-image", "git=e2e.invalid/git-resource:v1",
			"--tekton-node-selector", "gpu=accelerator=nvidia", "--tekton-node-selector", "arm=kubernetes.io/arch=arm64",
			"--tekton-tag-service-account", "aws=deployer", "--tekton-tag-service-account", "gcp=gke", "--tekton-team-service-account", "ml=ml-builder")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, cmd.Web.Tekton, cmp.AllowUnexported(TektonFlags{})); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
	t.Run("environment", func(t *testing.T) {
		t.Setenv("CONCOURSE_TEKTON_NAMESPACE", "ci")
		t.Setenv("CONCOURSE_TEKTON_RUNNER_IMAGE", "ghcr.io/concourse-tekton/runner:dev")
		t.Setenv("CONCOURSE_TEKTON_DEFAULT_TASK_IMAGE", "busybox:1.37")
		t.Setenv("CONCOURSE_TEKTON_RESOURCE_IMAGE", "mock=e2e.invalid/mock-resource:v1,git=e2e.invalid/git-resource:v1")
		t.Setenv("CONCOURSE_TEKTON_NODE_SELECTOR", "gpu=accelerator=nvidia,arm=kubernetes.io/arch=arm64")
		t.Setenv("CONCOURSE_TEKTON_TAG_SERVICE_ACCOUNT", "aws=deployer,gcp=gke")
		t.Setenv("CONCOURSE_TEKTON_TEAM_SERVICE_ACCOUNT", "ml=ml-builder")
		cmd, _, err := parse(t, "web")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, cmd.Web.Tekton, cmp.AllowUnexported(TektonFlags{})); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
}

// TestTektonRunnerImageVolume: builds mount the runner's image where the cluster does
// unless told otherwise; the flag alone always mounts it.
func TestTektonRunnerImageVolume(t *testing.T) {
	for _, tt := range []struct {
		args        []string
		env         string
		auto, mount bool
	}{
		{nil, "", true, false},
		{[]string{"--tekton-runner-image-volume"}, "", false, true},
		{[]string{"--tekton-runner-image-volume=true"}, "", false, true},
		{[]string{"--tekton-runner-image-volume=false"}, "", false, false},
		{[]string{"--tekton-runner-image-volume=auto"}, "", true, false},
		{nil, "false", false, false},
	} {
		if tt.env != "" {
			t.Setenv("CONCOURSE_TEKTON_RUNNER_IMAGE_VOLUME", tt.env)
		}
		cmd, _, err := parse(t, append([]string{"web"}, tt.args...)...)
		if err != nil {
			t.Fatalf("%v: %v", tt.args, err)
		}
		f := &cmd.Web.Tekton
		opts, err := f.Options()
		if err != nil {
			t.Fatal(err)
		}
		if auto := f.settings().MountRunnerWhereSupported(); auto != tt.auto || opts.RunnerImageVolume != tt.mount {
			t.Errorf("%v %s: where supported %t, always %t; want %t, %t", tt.args, tt.env, auto, opts.RunnerImageVolume, tt.auto, tt.mount)
		}
	}
	if _, _, err := parse(t, "web", "--tekton-runner-image-volume=sometimes"); err == nil || !strings.Contains(err.Error(), "sometimes") {
		t.Errorf("--tekton-runner-image-volume=sometimes: err = %v", err)
	}
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
		{[]string{"--tekton-targets", "/targets.yml"}, true},
		{[]string{"--tekton-tag", "gpu"}, false},
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
	f := TektonFlags{RunnerImage: "r", DefaultTaskImage: "d", ResourceImages: []string{"mock=m"}, NodeSelectors: []string{"gpu=accelerator=nvidia", "gpu=zone=b"}, ServiceAccount: "builder", StorageClass: "fast", BuildVolumeSize: "2Gi", UserNamespaces: true, RunnerImageVolume: "true", ImageRegistry: "10.0.0.1:5000/"}
	got, err := f.Options()
	if err != nil {
		t.Fatal(err)
	}
	want := translate.Options{
		RunnerImage: "r", DefaultTaskImage: "d", ResourceImages: map[string]string{"mock": "m"}, ServiceAccount: "builder", StorageClass: "fast", BuildVolumeSize: "2Gi", UserNamespaces: true, RunnerImageVolume: true,
		NodeSelectors: map[string]map[string]string{"gpu": {"accelerator": "nvidia", "zone": "b"}},
		ImageRegistry: "10.0.0.1:5000",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// --disable-redact-secrets reaches the builds.
	f.revealSecrets = true
	if got, err := f.Options(); err != nil || !got.RevealSecrets {
		t.Errorf("with --disable-redact-secrets: RevealSecrets %t, %v; want true", got.RevealSecrets, err)
	}
}

// TestTektonOptionsErrors: each mistake is said with its --tekton-* flag, all of them
// at once, before any cluster is asked.
func TestTektonOptionsErrors(t *testing.T) {
	cmd, _, err := parse(t, "web", "--tekton-namespace", "ci", "--tekton-resource-image", "mock=", "--tekton-node-selector", "gpu=accelerator",
		"--tekton-image-registry", "https://r", "--tekton-build-volume-size", "lots")
	if err != nil {
		t.Fatal(err)
	}
	_, err = cmd.Web.Tekton.openTekton()
	want := `invalid --tekton-resource-image "mock=": use TYPE=IMAGE
invalid --tekton-node-selector "gpu=accelerator": use TAG=LABEL=VALUE
invalid --tekton-build-volume-size "lots": give a size such as 1Gi or 500Mi
invalid --tekton-image-registry "https://r": give HOST[:PORT][/PATH], without a scheme`
	if err == nil || err.Error() != want {
		t.Errorf("error %v\nwant %s", err, want)
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
	if got := cmd.StepperFactory(logger, fallback, ATC{Workers: workers, ExternalURL: "http://ci"}, nil, nil); got != fallback {
		t.Errorf("without --tekton-* flags: %T, want Concourse's own", got)
	}

	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd.Tekton = TektonFlags{Kubeconfig: path, ResourceImages: []string{"mock=e2e.invalid/mock-resource:v1"}, HeartbeatInterval: time.Second, GCInterval: time.Minute,
		GardenBindIP: "127.0.0.1", BaggageclaimBindIP: "127.0.0.1"}
	tk, err := cmd.Tekton.openTekton()
	if err != nil {
		t.Fatal(err)
	}
	volumesDir := t.TempDir()
	if err := tk.listen(lagertest.NewTestLogger("web"), &cmd.Tekton, volumesDir); err != nil {
		t.Fatal(err)
	}
	defer tk.close()
	cmd.tekton = tk
	checks := &tektonengine.CheckConfig{DefaultTimeout: time.Hour}
	pipelines := &tektonengine.SetPipelineConfig{TeamFactory: new(dbfakes.FakeTeamFactory)}
	containers, volumes := new(dbfakes.FakeContainerRepository), new(dbfakes.FakeVolumeRepository)
	atc := ATC{Workers: workers, Containers: containers, Volumes: volumes, WorkerPool: &worker.Pool{}, ExternalURL: "http://ci"}
	f, ok := cmd.StepperFactory(logger, fallback, atc, checks, pipelines).(*tektonengine.StepperFactory)
	if !ok {
		t.Fatal("with --tekton-kubeconfig: not the Tekton engine")
	}
	if f.Checks != checks || f.Fallback != fallback {
		t.Error("check builds do not run on Tekton, with Concourse's own engine as the fallback")
	}
	if f.SetPipelines != pipelines {
		t.Error("set_pipeline steps do not get the ATC's teams and builds")
	}
	if f.Containers != workers {
		t.Error("the steps' containers are not recorded on the ATC's workers")
	}
	pool, ok := f.Runs.(*tektonengine.Pool)
	if !ok || len(pool.Workers) != 1 || pool.Workers[0].Name != "tekton-from-context" || len(pool.Workers[0].Tags) != 0 {
		t.Fatalf("runs %+v; want a pool of the one untagged worker", f.Runs)
	}
	reg := cmd.tekton.targets[0].registrar
	if reg == nil || reg.Worker.Name != "tekton-from-context" || reg.Workers != workers || reg.Interval != time.Second || len(reg.Worker.Tags) != 0 {
		t.Fatalf("registrar %+v; want worker tekton-from-context, saved by the ATC's worker factory", reg)
	}
	// Its Garden server (fly intercept) listens where the worker says, and its
	// containers are reported to the ATC's records.
	if addr := cmd.tekton.targets[0].garden.Addr().String(); reg.Worker.GardenAddr != addr || !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Errorf("worker's Garden address %q, want the listener's %s", reg.Worker.GardenAddr, addr)
	}
	rep := cmd.tekton.targets[0].reporter
	if rep == nil || rep.Records != containers || rep.Worker != "tekton-from-context" {
		t.Fatalf("reporter %+v; want the worker's containers reported to the ATC's records", rep)
	}
	if c, ok := rep.Checks.(tektonworker.TargetCheckRuns); !ok || c.Target != cmd.tekton.targets[0].target {
		t.Errorf("reporter's check runs %#v; want the target's, deleted when their containers go", rep.Checks)
	}
	// So does its baggageclaim (fly execute's artifacts), its volumes in a directory of
	// their own, reported too; the engine keeps artifacts on the ATC's workers.
	if addr := cmd.tekton.targets[0].baggageclaim.Addr().String(); reg.Worker.BaggageclaimURL != "http://"+addr || !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Errorf("worker's baggageclaim URL %q, want the listener's %s", reg.Worker.BaggageclaimURL, addr)
	}
	if v := cmd.tekton.targets[0].volumes; v == nil || v.Dir != filepath.Join(volumesDir, "tekton-from-context") || rep.Volumes != v || rep.VolumeRecords != volumes {
		t.Errorf("volumes %+v, reported %+v; want those of %s/tekton-from-context, reported to the ATC's records", v, rep, volumesDir)
	}
	if _, ok := f.Artifacts.(tektonengine.PoolArtifacts); !ok {
		t.Errorf("artifacts %#v; want those of the ATC's worker pool", f.Artifacts)
	}
	if sw := cmd.tekton.targets[0].sweeper; sw == nil || sw.Interval != time.Minute || sw.Target != cmd.tekton.targets[0].target || sw.Options.Defaults.MaxBuilds != 1 || sw.Options.FailedGrace != 120*time.Hour || sw.Options.KeepPodsOf != tektonengine.AnnotationCheck {
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

// TestTargets: --tekton-tag and a --tekton-targets file make several workers, each with
// its tags, registrar, sweeper and compile options (the flags' unless the file says;
// --tekton-node-selector's on every one).
func TestTargets(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(path, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "targets.yml")
	if err := os.WriteFile(file, []byte(`
- namespace: gpu
  kubeconfig: `+path+`
  tags: [gpu, big]
  storage_class: fast
- worker: arm
  kubeconfig: `+path+`
  namespace: arm
  tags: [arm]
  team: embedded
  image_registry: registry.arm:5000/ci/
`), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd, _, err := parse(t, "web", "--tekton-kubeconfig", path, "--tekton-tag", "main", "--tekton-team", "ops", "--tekton-targets", file,
		"--tekton-storage-class", "standard", "--tekton-image-registry", "10.0.0.1:5000", "--tekton-node-selector", "gpu=accelerator=nvidia")
	if err != nil {
		t.Fatal(err)
	}
	web := cmd.Web
	if !web.Tekton.Enabled() {
		t.Fatal("not enabled")
	}
	tk, err := web.Tekton.openTekton()
	if err != nil {
		t.Fatal(err)
	}
	web.tekton = tk
	f := web.StepperFactory(lagertest.NewTestLogger("web"), new(enginefakes.FakeStepperFactory), ATC{Workers: new(dbfakes.FakeWorkerFactory), ExternalURL: "http://ci"}, nil, nil).(*tektonengine.StepperFactory)
	type worker struct {
		Name, Namespace, StorageClass, Registry string
		Team, RegisteredTeam                    string
		Tags, RegisteredTags                    []string
		NodeSelectors                           map[string]map[string]string
		Swept                                   bool
	}
	var got []worker
	for i, w := range f.Runs.(*tektonengine.Pool).Workers {
		tt := tk.targets[i]
		got = append(got, worker{w.Name, w.Target.Namespace, tt.options.StorageClass, tt.options.ImageRegistry, w.Team, tt.registrar.Worker.Team, w.Tags, tt.registrar.Worker.Tags, tt.options.NodeSelectors, tt.sweeper != nil && tt.sweeper.Target == w.Target})
	}
	gpu := map[string]map[string]string{"gpu": {"accelerator": "nvidia"}}
	want := []worker{
		{"tekton-from-context", "from-context", "standard", "10.0.0.1:5000", "ops", "ops", []string{"main"}, []string{"main"}, gpu, true},
		{"tekton-gpu", "gpu", "fast", "10.0.0.1:5000", "", "", []string{"gpu", "big"}, []string{"gpu", "big"}, gpu, true},
		{"arm", "arm", "standard", "registry.arm:5000/ci", "embedded", "embedded", []string{"arm"}, []string{"arm"}, gpu, true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("workers (-want +got):\n%s", diff)
	}
}

// TestTargetsErrors: a bad --tekton-targets file or two targets that are one say where.
func TestTargetsErrors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(path, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, file, want string
	}{
		{"empty", "", "targets.yml:1:1: no targets"},
		{"not a list", "worker: a\n", "targets.yml:1:1: want a list of targets"},
		{"unknown field", "- namespace: a\n  tag: [x]\n", "targets.yml:2:3: targets[0].tag: unknown field"},
		{"wrong type", "- namespace: a\n  tags: x\n", "targets.yml:2:9: targets[0].tags: cannot unmarshal !!str `x` into []string"},
		{"bad namespace", "- namespace: A_B\n", "targets.yml:1:14: targets[0].namespace: \"A_B\""},
		{"bad tag", "- namespace: a\n  tags: [\"x y\"]\n", "targets.yml:2:9: targets[0].tags: \"x y\" is not a tag"},
		{"bad size", "- namespace: a\n  build_volume_size: lots\n", "targets.yml:2:22: targets[0].build_volume_size: \"lots\""},
		{"in-cluster and a kubeconfig", "- namespace: a\n  kubeconfig: /k\n  in_cluster: true\n", "targets.yml:3:15: targets[0].in_cluster: the pod's service account"},
		{"a worker's name twice", "- namespace: a\n  kubeconfig: " + path + "\n  worker: tekton-from-context\n", "targets.yml:1:3: targets[0]: worker tekton-from-context is --tekton-*'s name already"},
		{"a namespace twice", "- namespace: from-context\n  kubeconfig: " + path + "\n  worker: other\n", "targets.yml:1:3: targets[0]: namespace from-context of https://127.0.0.1:6443 is worker tekton-from-context already"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(dir, "targets.yml")
			if err := os.WriteFile(file, []byte(tt.file), 0o600); err != nil {
				t.Fatal(err)
			}
			f := TektonFlags{Kubeconfig: path, Targets: file}
			_, err := f.openTekton()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want it to say %q", err, tt.want)
			}
		})
	}
	if _, err := (&TektonFlags{Kubeconfig: path, Tags: []string{"a b"}}).openTekton(); err == nil || !strings.Contains(err.Error(), `--tekton-tag "a b"`) {
		t.Errorf("--tekton-tag 'a b': %v", err)
	}
}

// TestListenPorts: with --tekton-garden-bind-port and --tekton-baggageclaim-bind-port, the
// targets' servers listen on those ports and the ones after, in the targets' order, so
// that every web node of an installation registers its workers with the same addresses;
// ports that do not fit are refused.
func TestListenPorts(t *testing.T) {
	base := freeRun(t, 4)
	f := &TektonFlags{GardenBindIP: "127.0.0.1", BaggageclaimBindIP: "127.0.0.1", GardenBindPort: base, BaggageclaimBindPort: base + 2}
	tk := &tekton{targets: []*tektonTarget{{worker: "tekton-a"}, {worker: "tekton-b"}}}
	if err := tk.listen(lagertest.NewTestLogger("web"), f, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	defer tk.close()
	for i, target := range tk.targets {
		garden, bc := target.garden.Addr().String(), target.baggageclaim.Addr().String()
		if want := fmt.Sprintf("127.0.0.1:%d", base+i); garden != want {
			t.Errorf("%s's Garden listens on %s; want %s", target.worker, garden, want)
		}
		if want := fmt.Sprintf("127.0.0.1:%d", base+2+i); bc != want {
			t.Errorf("%s's baggageclaim listens on %s; want %s", target.worker, bc, want)
		}
	}
	// A second web node on the same host cannot take them: it says which flags.
	other := &tekton{targets: []*tektonTarget{{worker: "tekton-a"}}}
	if err := other.listen(lagertest.NewTestLogger("web"), f, t.TempDir()); err == nil || !strings.Contains(err.Error(), "--tekton-garden-bind-port") {
		other.close()
		t.Errorf("ports taken: %v; want an error naming --tekton-garden-bind-port", err)
	}
	f.GardenBindPort = 65535
	tk2 := &tekton{targets: []*tektonTarget{{worker: "tekton-a"}, {worker: "tekton-b"}}}
	if err := tk2.listen(lagertest.NewTestLogger("web"), f, t.TempDir()); err == nil || !strings.Contains(err.Error(), "--tekton-garden-bind-port 65535: not a port for 2 namespaces") {
		tk2.close()
		t.Errorf("ports past 65535: %v; want refused", err)
	}
}

// freeRun finds n consecutive ports free on the loopback address.
func freeRun(t *testing.T, n int) int {
	t.Helper()
	for try := 0; try < 50; try++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		base := l.Addr().(*net.TCPAddr).Port
		l.Close()
		ok := base+n <= 65536
		for p := base; ok && p < base+n; p++ {
			if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p)); err != nil {
				ok = false
			} else {
				l.Close()
			}
		}
		if ok {
			return base
		}
	}
	t.Fatalf("no %d consecutive free ports", n)
	return 0
}
