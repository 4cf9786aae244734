package images

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// PushPrivate pushes to ref, in a registry that wants credentials, with user and
// password, the image of the tarball base with env (NAME=VALUE) added to its environment,
// and checks that the registry refuses it to an anonymous reader. The image is the
// tests' own, not the node's base image: the kubelet remembers which credentials pulled
// an image, and would then want them of every pod that runs it
// (KubeletEnsureSecretPulledImages), other tests' pods included.
func PushPrivate(ctx context.Context, base, ref, user, password, env string) error {
	img, err := tarball.ImageFromPath(base, nil)
	if err != nil {
		return fmt.Errorf("reading %s: %w", base, err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cfg = cfg.DeepCopy()
	cfg.Config.Env = append(cfg.Config.Env, env)
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return err
	}
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		return err
	}
	if err := remote.Write(r, img, remote.WithAuth(&authn.Basic{Username: user, Password: password}), remote.WithContext(ctx)); err != nil {
		return fmt.Errorf("pushing %s: %w", ref, err)
	}
	if _, err := remote.Head(r, remote.WithContext(ctx)); err == nil {
		return fmt.Errorf("%s is served without credentials: a test of pulls with them would prove nothing", ref)
	}
	return nil
}
