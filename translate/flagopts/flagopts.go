package flagopts

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/concourse-tekton/concourse-tekton/translate"
)

// The settings' names, as the CLI spells their flags after -- (its node selectors are
// --tag) and the web node after --tekton-. Errors name a setting's flag as the command
// spells it (Options' flag).
const (
	RunnerImageVolume = "runner-image-volume"
	ResourceImage     = "resource-image"
	NodeSelector      = "node-selector"
	BuildVolumeSize   = "build-volume-size"
	ImageRegistry     = "image-registry"
	DefaultTaskImage  = "default-task-image"
	TagAccount        = "tag-service-account"
	TeamAccount       = "team-service-account"
	IdentityAudience  = "identity-audience"
	IdentityLifetime  = "identity-expiration"
)

// RunnerVolume says whether builds mount the runner's image into each step pod as a
// volume (translate.Options.RunnerImageVolume) or copy the runner in with a container of
// its own.
type RunnerVolume string

const (
	// RunnerVolumeAuto mounts it where the cluster is known to mount images, which the
	// backend asks the cluster (tektonrun.Backend.MountRunnerWhereSupported); the empty
	// RunnerVolume is the same.
	RunnerVolumeAuto RunnerVolume = "auto"
	// RunnerVolumeAlways mounts it: the cluster must mount images.
	RunnerVolumeAlways RunnerVolume = "true"
	// RunnerVolumeNever copies the runner in, which works on every cluster.
	RunnerVolumeNever RunnerVolume = "false"
)

// Flags are the shared settings, each as its flag gives it.
type Flags struct {
	RunnerImage  string
	RunnerVolume RunnerVolume
	// DefaultTaskImage is the image of a task that names none
	// (translate.Options.DefaultTaskImage).
	DefaultTaskImage string
	// ResourceImages are TYPE=IMAGE: the image of a base resource type, laid over
	// translate.DefaultResourceImages.
	ResourceImages []string
	// NodeSelectors are TAG=LABEL=VALUE: a step with the worker tag TAG runs on nodes
	// with the label LABEL=VALUE (translate.Options.NodeSelectors).
	NodeSelectors   []string
	ServiceAccount  string
	StorageClass    string
	BuildVolumeSize string
	UserNamespaces  bool
	// ImageRegistry is HOST[:PORT][/PATH], without a scheme; a trailing / is dropped.
	ImageRegistry       string
	ImageRegistrySecret string
	// TagAccounts are TAG=ACCOUNT, TeamAccounts TEAM=ACCOUNT: the ServiceAccounts whose
	// tokens steps run with (translate.Options.Identity), for IdentityAudience and
	// IdentityExpiration (zero: the defaults).
	TagAccounts        []string
	TeamAccounts       []string
	IdentityAudience   string
	IdentityExpiration time.Duration
}

// Options are the translate options the settings give. flag spells a setting's flag as
// the command does (flag(NodeSelector) is "--tag" for the CLI). Every setting that is
// not what it takes is reported, in one error.
func (f Flags) Options(flag func(setting string) string) (translate.Options, error) {
	opts := translate.Options{
		RunnerImage:         f.RunnerImage,
		RunnerImageVolume:   f.RunnerVolume == RunnerVolumeAlways,
		DefaultTaskImage:    f.DefaultTaskImage,
		ResourceImages:      map[string]string{},
		NodeSelectors:       map[string]map[string]string{},
		ServiceAccount:      f.ServiceAccount,
		StorageClass:        f.StorageClass,
		BuildVolumeSize:     f.BuildVolumeSize,
		UserNamespaces:      f.UserNamespaces,
		ImageRegistry:       strings.TrimSuffix(f.ImageRegistry, "/"),
		ImageRegistrySecret: f.ImageRegistrySecret,
	}
	var errs []error
	invalid := func(setting, value, how string, args ...any) {
		errs = append(errs, fmt.Errorf("invalid %s %q: %s", flag(setting), value, fmt.Sprintf(how, args...)))
	}
	switch f.RunnerVolume {
	case "", RunnerVolumeAuto, RunnerVolumeAlways, RunnerVolumeNever:
	default:
		invalid(RunnerImageVolume, string(f.RunnerVolume), "use auto, true or false")
	}
	for _, ri := range f.ResourceImages {
		typ, img, ok := strings.Cut(ri, "=")
		if !ok || typ == "" || img == "" {
			invalid(ResourceImage, ri, "use TYPE=IMAGE")
			continue
		}
		opts.ResourceImages[typ] = img
	}
	for _, ns := range f.NodeSelectors {
		tag, label, ok := strings.Cut(ns, "=")
		key, value, ok2 := strings.Cut(label, "=")
		if !ok || !ok2 || tag == "" || key == "" {
			invalid(NodeSelector, ns, "use TAG=LABEL=VALUE")
			continue
		}
		if bad := validation.IsQualifiedName(key); len(bad) > 0 {
			invalid(NodeSelector, ns, "the label %q: %s", key, bad[0])
			continue
		}
		if bad := validation.IsValidLabelValue(value); len(bad) > 0 {
			invalid(NodeSelector, ns, "the label's value %q: %s", value, bad[0])
			continue
		}
		if opts.NodeSelectors[tag] == nil {
			opts.NodeSelectors[tag] = map[string]string{}
		}
		opts.NodeSelectors[tag][key] = value
	}
	accounts := func(setting string, pairs []string, what string) map[string]string {
		m := map[string]string{}
		for _, pair := range pairs {
			key, sa, ok := strings.Cut(pair, "=")
			if !ok || key == "" || sa == "" {
				invalid(setting, pair, "use %s=SERVICE_ACCOUNT", what)
				continue
			}
			if bad := validation.IsDNS1123Subdomain(sa); len(bad) > 0 {
				invalid(setting, pair, "the service account %q: %s", sa, bad[0])
				continue
			}
			if other, ok := m[key]; ok && other != sa {
				invalid(setting, pair, "%s %s maps to %s already", strings.ToLower(what), key, other)
				continue
			}
			m[key] = sa
		}
		if len(m) == 0 {
			return nil
		}
		return m
	}
	opts.Identity = translate.Identity{
		ByTag:    accounts(TagAccount, f.TagAccounts, "TAG"),
		ByTeam:   accounts(TeamAccount, f.TeamAccounts, "TEAM"),
		Audience: f.IdentityAudience,
	}
	if d := f.IdentityExpiration; d != 0 {
		if d < 10*time.Minute || d%time.Second != 0 {
			invalid(IdentityLifetime, d.String(), "give whole seconds, 10m at least (Kubernetes' least for a projected token)")
		}
		opts.Identity.ExpirationSeconds = int64(d / time.Second)
	}
	if s := f.BuildVolumeSize; s != "" {
		if _, err := resource.ParseQuantity(s); err != nil {
			invalid(BuildVolumeSize, s, "give a size such as 1Gi or 500Mi")
		}
	}
	if img := f.DefaultTaskImage; strings.Contains(img, "://") || strings.ContainsAny(img, " \t\n") {
		invalid(DefaultTaskImage, img, "give an image reference such as busybox:1.37, without a scheme")
	}
	if r := f.ImageRegistry; strings.Contains(r, "://") || strings.ContainsAny(r, " @") || strings.HasPrefix(r, "/") {
		invalid(ImageRegistry, r, "give HOST[:PORT][/PATH], without a scheme")
	}
	return opts, errors.Join(errs...)
}

// MountRunnerWhereSupported tells whether the builds' backend is to mount the runner's
// image where the cluster does (tektonrun.Backend.MountRunnerWhereSupported): with
// RunnerVolumeAuto, or none said.
func (f Flags) MountRunnerWhereSupported() bool {
	return f.RunnerVolume == RunnerVolumeAuto || f.RunnerVolume == ""
}

// Prefixed spells each setting's flag as prefix and the setting's name: the web node's
// Prefixed("--tekton-").
func Prefixed(prefix string) func(setting string) string {
	return func(setting string) string { return prefix + setting }
}
