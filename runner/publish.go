package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// publishing is where a publish step pushes an image artifact: the build's registry, the
// namespace of the build (the repository's last path element) and the tag (the
// publishing TaskRun's name, which ties the image to its build).
type publishing struct {
	registry  string
	namespace string
	tag       string
	// tool is the image tool (runspec.ImageTool; tests move it) and auth the directory of
	// the registry's Docker config.
	tool, auth string
	scratch    string
}

// runPublish pushes an artifact that holds an image to the build's registry, and writes
// the reference that names it by digest as the image result, which the task that runs
// it takes as its image. Concourse runs such an artifact straight from the worker's
// volume; a pod can only run what its node pulls.
func runPublish(ctx context.Context, s *step) (bool, error) {
	p, to := s.spec.Publish, s.opts.publishing
	if to.registry == "" {
		return false, fmt.Errorf("the task's image is the artifact %q, which must be pushed to an image registry the cluster pulls from, and the build has none: give its target one (--image-registry)", p.Artifact)
	}
	volPath, found, err := s.state.Artifact(s.spec.Scope, p.Artifact)
	if err != nil {
		return false, err
	}
	if !found {
		// Concourse's words (exec.MissingTaskImageSourceError).
		return false, fmt.Errorf("missing image artifact source: %s\n\nmake sure there's a corresponding 'get' step, or a task that produces it as an output", p.Artifact)
	}
	scratch, err := os.MkdirTemp(to.scratch, "publish-")
	if err != nil {
		return false, fmt.Errorf("publishing image artifact %q: %w", p.Artifact, err)
	}
	defer os.RemoveAll(scratch)
	repository := strings.TrimSuffix(to.registry, "/") + "/" + to.namespace
	cmd := exec.CommandContext(ctx, to.tool, "publish", "--dir", filepath.Join(s.paths.Volume, volPath),
		"--repository", repository, "--tag", to.tag, "--scratch", scratch)
	cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+to.auth, "TMPDIR="+scratch)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctxErr := context.Cause(ctx); ctxErr != nil {
			return false, ctxErr
		}
		msg := strings.TrimSpace(stderr.String())
		var exit *exec.ExitError
		if msg == "" || !errors.As(err, &exit) {
			msg = err.Error()
		}
		return false, fmt.Errorf("publishing image artifact %q to %s: %s", p.Artifact, repository, msg)
	}
	ref := strings.TrimSpace(stdout.String())
	if ref == "" || strings.ContainsAny(ref, " \n") {
		return false, fmt.Errorf("publishing image artifact %q: the image tool printed %q, not a reference", p.Artifact, ref)
	}
	return true, s.writeResult(runspec.ResultImage, []byte(ref))
}
