package tektonengine

import (
	"context"
	"errors"
	"fmt"
	"io"

	"code.cloudfoundry.org/lager/v3"
	"code.cloudfoundry.org/lager/v3/lagerctx"
	"github.com/concourse/concourse/atc"
	"github.com/concourse/concourse/atc/compression"
	"github.com/concourse/concourse/atc/db"
	"github.com/concourse/concourse/atc/worker"

	"github.com/concourse-tekton/concourse-tekton/tektonrun/podexec"
	"github.com/concourse-tekton/concourse-tekton/translate"
)

// Artifacts moves a one-off build's artifacts (fly execute's) between the ATC's volumes
// and the build's run: the inputs fly uploaded, read when the run starts, and the
// outputs, saved when it has ended, for fly to download.
type Artifacts interface {
	// Open reads the build's artifact input (an upload of fly execute, by its ID) as a
	// tar stream of its contents.
	Open(ctx context.Context, build db.Build, artifactID int) (io.ReadCloser, error)
	// Save stores tar, a tar stream of the contents of the build's output name, as an
	// artifact of the build in a volume on the worker: fly execute -o downloads it.
	Save(ctx context.Context, build db.Build, worker, name string, tar io.Reader) error
}

// PoolArtifacts are the Artifacts of the ATC's workers (their baggageclaims), found
// through its worker pool as Concourse's artifact steps find them.
type PoolArtifacts struct {
	Pool worker.Pool
}

var _ Artifacts = PoolArtifacts{}

// ArtifactVolumeNotFoundError is Concourse's error for an artifact input whose volume
// is gone.
type ArtifactVolumeNotFoundError struct{ Artifact string }

func (e ArtifactVolumeNotFoundError) Error() string {
	return fmt.Sprintf("volume for worker artifact '%s' not found", e.Artifact)
}

func (p PoolArtifacts) Open(ctx context.Context, build db.Build, artifactID int) (io.ReadCloser, error) {
	artifact, err := build.Artifact(artifactID)
	if err != nil {
		return nil, fmt.Errorf("finding worker artifact %d: %w", artifactID, err)
	}
	created, found, err := artifact.Volume(build.TeamID())
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, ArtifactVolumeNotFoundError{artifact.Name()}
	}
	volume, _, found, err := p.Pool.LocateVolume(ctx, created.TeamID(), created.Handle())
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, ArtifactVolumeNotFoundError{artifact.Name()}
	}
	return volume.StreamOut(ctx, ".", compression.NewNoCompression())
}

func (p PoolArtifacts) Save(ctx context.Context, build db.Build, workerName, name string, tar io.Reader) error {
	w, found, err := p.Pool.FindWorker(lagerctx.FromContext(ctx), workerName)
	if err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("worker %s is gone", workerName)
	}
	volume, _, err := w.CreateVolumeForArtifact(ctx, build.TeamID())
	if err != nil {
		return fmt.Errorf("creating a volume on worker %s: %w", workerName, err)
	}
	if err := volume.StreamIn(ctx, ".", compression.NewNoCompression(), 0, tar); err != nil {
		return fmt.Errorf("streaming into volume %s: %w", volume.Handle(), err)
	}
	if _, err := volume.DBVolume().InitializeArtifact(name, build.ID()); err != nil {
		return err
	}
	return nil
}

// artifactOutput is an artifact output step of a plan.
type artifactOutput struct {
	id   atc.PlanID
	name string
}

// artifactOutputs are the plan's artifact outputs, in plan order.
func artifactOutputs(plan atc.Plan) []artifactOutput {
	var outs []artifactOutput
	plan.Each(func(p *atc.Plan) {
		if p.ArtifactOutput != nil {
			outs = append(outs, artifactOutput{id: p.ID, name: p.ArtifactOutput.Name})
		}
	})
	return outs
}

// saveOutputs saves a one-off build's outputs, once its run has ended, as Concourse's
// artifact output steps do: each its steps made becomes an artifact of the build on the
// worker it ran on. One the build never made (its task did not run) is left out. The
// first that cannot be saved is the error, saved on its step.
func (s *buildStep) saveOutputs(ctx context.Context, logger lager.Logger, run Run) error {
	outs := artifactOutputs(s.plan)
	if len(outs) == 0 {
		return nil
	}
	if s.factory.Artifacts == nil {
		err := errors.New("this web node keeps no artifacts: fly execute cannot download the build's outputs")
		s.saveError(logger, outs[0].id, err.Error())
		return err
	}
	names := make([]string, len(outs))
	for i, o := range outs {
		names[i] = o.name
	}
	return run.Outputs(ctx, names, func(name string, tar io.Reader) error {
		err := s.factory.Artifacts.Save(ctx, s.build, run.Worker(), name, tar)
		if err != nil {
			for _, o := range outs {
				if o.name == name {
					s.saveError(logger, o.id, fmt.Sprintf("saving output %s: %v", name, err))
				}
			}
			return err
		}
		logger.Info("saved-output", lager.Data{"name": name, "worker": run.Worker()})
		return nil
	})
}

// artifactSource reads the build's artifact inputs through the factory's Artifacts.
func (s *buildStep) artifactSource() podexec.ArtifactSource {
	if s.factory.Artifacts == nil {
		return nil
	}
	return func(ctx context.Context, in translate.ArtifactInput) (io.ReadCloser, error) {
		return s.factory.Artifacts.Open(ctx, s.build, in.ArtifactID)
	}
}
