package tektonworker

import (
	"context"
	"errors"
	"time"

	"code.cloudfoundry.org/lager/v3"
	"github.com/concourse/concourse/atc/db"
)

// ContainerRecords are the ATC's records of its workers' containers, as a worker's
// reports update them: db.ContainerRepository.
type ContainerRecords interface {
	// UpdateContainersMissingSince marks the worker's containers that are not reported
	// as missing (the web node's collector removes them once missing for its
	// --gc-missing-grace-period) and clears the mark of those reported.
	UpdateContainersMissingSince(workerName string, reportedHandles []string) error
	// RemoveDestroyingContainers removes the worker's containers that the collector
	// marked for destruction and that are not reported: they are gone.
	RemoveDestroyingContainers(workerName string, handlesToIgnore []string) (int, error)
	// FindDestroyingContainers lists the worker's containers that the collector marked
	// for destruction: a worker destroys them.
	FindDestroyingContainers(workerName string) ([]string, error)
}

// CheckRuns deletes the run of a check build whose container (a TaskRun, by name) the
// ATC no longer wants, and says whether it was one: *TargetCheckRuns. Other containers'
// runs it leaves alone.
type CheckRuns interface {
	DeleteCheckRun(ctx context.Context, taskRun string) (bool, error)
}

var _ ContainerRecords = db.ContainerRepository(nil)

// VolumeRecords are the ATC's records of its workers' volumes, as a worker's reports
// update them: db.VolumeRepository.
type VolumeRecords interface {
	// GetDestroyingVolumes lists the worker's volumes that the collector marked for
	// destruction (orphaned, failed, unknown): the worker destroys them.
	GetDestroyingVolumes(workerName string) ([]string, error)
	// DestroyUnknownVolumes records the reported volumes the database does not know as
	// destroying, so that the next report destroys them.
	DestroyUnknownVolumes(workerName string, reportedHandles []string) (int, error)
	// UpdateVolumesMissingSince marks the worker's volumes that are not reported as
	// missing (removed once missing for --gc-missing-grace-period) and clears the mark
	// of those reported.
	UpdateVolumesMissingSince(workerName string, reportedHandles []string) error
	// RemoveDestroyingVolumes removes the worker's destroying volumes that are not
	// reported: they are gone.
	RemoveDestroyingVolumes(workerName string, handlesToIgnore []string) (int, error)
}

var _ VolumeRecords = db.VolumeRepository(nil)

// VolumeStore is a worker's own volumes: *Volumes.
type VolumeStore interface {
	VolumeHandles(context.Context) ([]string, error)
	DestroyVolumes(ctx context.Context, handles []string) error
}

var _ VolumeStore = (*Volumes)(nil)

// Handles lists a target's containers: *tektonrun.Client's ContainerHandles.
type Handles interface {
	ContainerHandles(context.Context) ([]string, error)
}

// Reporter reports a target's containers (its steps' pods, by TaskRun: see Garden) to
// the ATC at an interval, as a worker reports its Garden containers: the records of
// containers whose pods are gone (their builds swept) are removed, those of the
// containers the collector no longer wants first (the build is no longer
// interceptible). It never destroys a pod: the target's sweeper does.
// With Volumes, it also sweeps and reports the worker's own volumes, as a worker's
// volume sweeper and reporter do: those the ATC's collector marked for destruction are
// destroyed, then the rest reported (VolumeRecords).
type Reporter struct {
	Worker string
	// Handles and Records: the target's containers, and the ATC's records of them (nil:
	// none reported).
	Handles Handles
	Records ContainerRecords
	// Checks, when set, deletes the runs of check builds whose containers the ATC marked
	// destroying, as a worker destroys them; the runs of job and one-off builds stay
	// for the sweeper.
	Checks CheckRuns
	// Volumes and VolumeRecords: the worker's volumes, and the ATC's records of them
	// (nil: the worker has none).
	Volumes       VolumeStore
	VolumeRecords VolumeRecords

	// notChecks are the destroying containers Checks said are no check's: a job build's
	// stays destroying for as long as its pods are kept, and is not asked about again.
	notChecks map[string]bool
	// Interval between reports (zero: DefaultInterval).
	Interval time.Duration
	Logger   lager.Logger
}

// Run reports until ctx ends; a report that fails is logged, and the next tries again.
func (r *Reporter) Run(ctx context.Context) error {
	interval := r.Interval
	if interval <= 0 {
		interval = DefaultInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := r.Report(ctx); err != nil && ctx.Err() == nil {
			r.Logger.Error("failed-to-report-containers", err)
		}
		if err := r.ReportVolumes(ctx); err != nil && ctx.Err() == nil {
			r.Logger.Error("failed-to-report-volumes", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Report reports the containers once (nothing without Handles). When the target cannot be
// listed nothing is reported, as a worker that cannot be reached reports nothing: its
// containers are not missing.
func (r *Reporter) Report(ctx context.Context) error {
	if r.Handles == nil || r.Records == nil {
		return nil
	}
	if r.Checks != nil {
		destroying, err := r.Records.FindDestroyingContainers(r.Worker)
		if err != nil {
			return err
		}
		known := r.notChecks
		r.notChecks = map[string]bool{}
		for _, h := range destroying {
			if known[h] {
				r.notChecks[h] = true
				continue
			}
			check, err := r.Checks.DeleteCheckRun(ctx, h)
			switch {
			case err != nil:
				r.Logger.Error("failed-to-delete-check-run", err, lager.Data{"handle": h})
			case !check:
				r.notChecks[h] = true
			}
		}
	}
	handles, err := r.Handles.ContainerHandles(ctx)
	if err != nil {
		return err
	}
	if handles == nil {
		handles = []string{}
	}
	if err := r.Records.UpdateContainersMissingSince(r.Worker, handles); err != nil {
		return err
	}
	removed, err := r.Records.RemoveDestroyingContainers(r.Worker, handles)
	if err != nil {
		return err
	}
	r.Logger.Debug("reported-containers", lager.Data{"containers": len(handles), "removed": removed})
	return nil
}

// ReportVolumes destroys the volumes the ATC no longer wants, then reports the others,
// once (nothing without Volumes). The volumes are reported only once listed: a store that
// cannot be read reports nothing, so that none is taken for missing.
func (r *Reporter) ReportVolumes(ctx context.Context) error {
	if r.Volumes == nil || r.VolumeRecords == nil {
		return nil
	}
	destroying, err := r.VolumeRecords.GetDestroyingVolumes(r.Worker)
	if err != nil {
		return err
	}
	// One that cannot be destroyed is reported: it is tried again next time.
	destroyErr := r.Volumes.DestroyVolumes(ctx, destroying)
	handles, err := r.Volumes.VolumeHandles(ctx)
	if err != nil {
		return errors.Join(destroyErr, err)
	}
	unknown, err := r.VolumeRecords.DestroyUnknownVolumes(r.Worker, handles)
	if err != nil {
		return errors.Join(destroyErr, err)
	}
	if err := r.VolumeRecords.UpdateVolumesMissingSince(r.Worker, handles); err != nil {
		return errors.Join(destroyErr, err)
	}
	removed, err := r.VolumeRecords.RemoveDestroyingVolumes(r.Worker, handles)
	if err != nil {
		return errors.Join(destroyErr, err)
	}
	r.Logger.Debug("reported-volumes", lager.Data{"volumes": len(handles), "destroyed": len(destroying), "unknown": unknown, "removed": removed})
	return destroyErr
}
