package flagopts

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/concourse-tekton/concourse-tekton/translate"
)

func TestOptions(t *testing.T) {
	f := Flags{
		RunnerImage:         "r",
		RunnerVolume:        RunnerVolumeAlways,
		DefaultTaskImage:    "busybox:1.37",
		ResourceImages:      []string{"mock=m", "git=g:1", "mock=m2"},
		NodeSelectors:       []string{"gpu=accelerator=nvidia", "gpu=zone=b", "arm=kubernetes.io/arch=arm64", "any=pool="},
		ServiceAccount:      "builder",
		StorageClass:        "fast",
		BuildVolumeSize:     "2Gi",
		UserNamespaces:      true,
		ImageRegistry:       "10.0.0.1:5000/ci/",
		ImageRegistrySecret: "push",
		TagAccounts:         []string{"aws=deployer", "gcp=gke-deployer", "aws=deployer"},
		TeamAccounts:        []string{"ml=ml-builder"},
		IdentityAudience:    "vault",
		IdentityExpiration:  time.Hour,
	}
	got, err := f.Options(Prefixed("--"))
	if err != nil {
		t.Fatal(err)
	}
	want := translate.Options{
		RunnerImage:       "r",
		RunnerImageVolume: true,
		DefaultTaskImage:  "busybox:1.37",
		ResourceImages:    map[string]string{"mock": "m2", "git": "g:1"},
		NodeSelectors: map[string]map[string]string{
			"gpu": {"accelerator": "nvidia", "zone": "b"},
			"arm": {"kubernetes.io/arch": "arm64"},
			"any": {"pool": ""},
		},
		ServiceAccount:      "builder",
		StorageClass:        "fast",
		BuildVolumeSize:     "2Gi",
		UserNamespaces:      true,
		ImageRegistry:       "10.0.0.1:5000/ci",
		ImageRegistrySecret: "push",
		Identity: translate.Identity{ByTag: map[string]string{"aws": "deployer", "gcp": "gke-deployer"}, ByTeam: map[string]string{"ml": "ml-builder"},
			Audience: "vault", ExpirationSeconds: 3600},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestRunnerVolume: auto (or nothing said) leaves the choice to the backend; true always
// mounts the runner's image, false never.
func TestRunnerVolume(t *testing.T) {
	for _, tt := range []struct {
		v           RunnerVolume
		auto, mount bool
	}{
		{"", true, false},
		{RunnerVolumeAuto, true, false},
		{RunnerVolumeAlways, false, true},
		{RunnerVolumeNever, false, false},
	} {
		f := Flags{RunnerVolume: tt.v}
		opts, err := f.Options(Prefixed("--"))
		if err != nil {
			t.Fatal(err)
		}
		if f.MountRunnerWhereSupported() != tt.auto || opts.RunnerImageVolume != tt.mount {
			t.Errorf("%q: where supported %t, always %t; want %t, %t", tt.v, f.MountRunnerWhereSupported(), opts.RunnerImageVolume, tt.auto, tt.mount)
		}
	}
}

// TestOptionsErrors: each mistake is said with the flag as the command spells it, all of
// them at once.
func TestOptionsErrors(t *testing.T) {
	cli := func(setting string) string {
		if setting == NodeSelector {
			return "--tag"
		}
		return "--" + setting
	}
	for _, tt := range []struct {
		name string
		f    Flags
		want []string
	}{
		{"a resource image without =", Flags{ResourceImages: []string{"x"}}, []string{`invalid --resource-image "x": use TYPE=IMAGE`}},
		{"a resource image without an image", Flags{ResourceImages: []string{"mock="}}, []string{`invalid --resource-image "mock=": use TYPE=IMAGE`}},
		{"a node selector without a value", Flags{NodeSelectors: []string{"gpu=accelerator"}}, []string{`invalid --tag "gpu=accelerator": use TAG=LABEL=VALUE`}},
		{"a node selector without a tag", Flags{NodeSelectors: []string{"=a=b"}}, []string{`invalid --tag "=a=b": use TAG=LABEL=VALUE`}},
		{"a label that is not one", Flags{NodeSelectors: []string{"gpu=a b=c"}}, []string{`invalid --tag "gpu=a b=c": the label "a b": name part must consist of`}},
		{"a label value that is not one", Flags{NodeSelectors: []string{"gpu=a=b c"}}, []string{`invalid --tag "gpu=a=b c": the label's value "b c": a valid label must be`}},
		{"a size that is not one", Flags{BuildVolumeSize: "lots"}, []string{`invalid --build-volume-size "lots": give a size such as 1Gi`}},
		{"a registry with a scheme", Flags{ImageRegistry: "https://r"}, []string{`invalid --image-registry "https://r": give HOST[:PORT][/PATH], without a scheme`}},
		{"a registry with a user", Flags{ImageRegistry: "u@r"}, []string{`invalid --image-registry "u@r"`}},
		{"a registry that is a path", Flags{ImageRegistry: "/r"}, []string{`invalid --image-registry "/r"`}},
		{"a default task image with a scheme", Flags{DefaultTaskImage: "docker:///busybox"}, []string{`invalid --default-task-image "docker:///busybox": give an image reference such as busybox:1.37, without a scheme`}},
		{"a default task image with a space", Flags{DefaultTaskImage: "busybox 1"}, []string{`invalid --default-task-image "busybox 1"`}},
		{"a runner volume that is none", Flags{RunnerVolume: "sometimes"}, []string{`invalid --runner-image-volume "sometimes": use auto, true or false`}},
		{"a tag's account without =", Flags{TagAccounts: []string{"aws"}}, []string{`invalid --tag-service-account "aws": use TAG=SERVICE_ACCOUNT`}},
		{"an account that is none", Flags{TeamAccounts: []string{"ml=Not_One"}}, []string{`invalid --team-service-account "ml=Not_One": the service account "Not_One"`}},
		{"a tag with two accounts", Flags{TagAccounts: []string{"aws=a", "aws=b"}}, []string{`invalid --tag-service-account "aws=b": tag aws maps to a already`}},
		{"a token's life too short", Flags{IdentityExpiration: time.Minute}, []string{`invalid --identity-expiration "1m0s": give whole seconds, 10m at least`}},
		{"several", Flags{ResourceImages: []string{"x"}, ImageRegistry: "http://r"}, []string{`invalid --resource-image "x"`, `invalid --image-registry "http://r"`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.f.Options(cli)
			if err == nil {
				t.Fatalf("no error; want %q", tt.want)
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(tt.want) {
				t.Fatalf("error %q; want %d lines", err, len(tt.want))
			}
			for i, want := range tt.want {
				if !strings.HasPrefix(lines[i], want) {
					t.Errorf("error line %q; want it to start with %q", lines[i], want)
				}
			}
		})
	}
	if _, err := (Flags{ResourceImages: []string{"x"}}).Options(Prefixed("--tekton-")); err == nil || err.Error() != `invalid --tekton-resource-image "x": use TYPE=IMAGE` {
		t.Errorf("the web node's spelling: %v", err)
	}
}
