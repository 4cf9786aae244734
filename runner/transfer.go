package runner

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/concourse-tekton/concourse-tekton/internal/tarstream"
	"github.com/concourse-tekton/concourse-tekton/runner/state"
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// hold waits until it is stopped (SIGTERM, when its pod is deleted) or timeout passes:
// the main process of a transfer pod, which its starter execs into.
func hold(ctx context.Context, timeout time.Duration) int {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	<-ctx.Done()
	return 0
}

// receive unpacks the tar stream in into dir, a directory of the build volume under
// volumes/, and registers it as the artifact name in the root scope.
func receive(volume, dir, name string, in io.Reader) error {
	clean := path.Clean(dir)
	if name == "" || clean != dir || !strings.HasPrefix(clean, runspec.VolumesDir+"/") {
		return fmt.Errorf("receive needs --name and a --dir under %s/, got %q", runspec.VolumesDir, dir)
	}
	if err := tarstream.Extract(bufio.NewReaderSize(in, 1<<20), filepath.Join(volume, filepath.FromSlash(clean))); err != nil {
		return fmt.Errorf("unpacking artifact %s: %w", name, err)
	}
	return state.New(volume).RegisterArtifact(nil, name, clean)
}

// send writes the artifact name of the root scope to out as a tar stream.
func send(volume, name string, out io.Writer) error {
	rel, found, err := state.New(volume).Artifact(nil, name)
	if err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("the build has no artifact %q", name)
	}
	w := bufio.NewWriterSize(out, 1<<20)
	if err := tarstream.Write(w, filepath.Join(volume, filepath.FromSlash(rel)), nil); err != nil {
		return fmt.Errorf("sending artifact %s: %w", name, err)
	}
	return w.Flush()
}
