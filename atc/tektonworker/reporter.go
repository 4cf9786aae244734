package tektonworker

import (
	"context"
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
}

var _ ContainerRecords = db.ContainerRepository(nil)

// Handles lists a target's containers: *tektonrun.Client's ContainerHandles.
type Handles interface {
	ContainerHandles(context.Context) ([]string, error)
}

// Reporter reports a target's containers (its steps' pods, by TaskRun: see Garden) to
// the ATC at an interval, as a worker reports its Garden containers: the records of
// containers whose pods are gone (their builds swept) are removed, those of the
// containers the collector no longer wants first (the build is no longer
// interceptible). It never destroys a pod: the target's sweeper does.
type Reporter struct {
	Worker  string
	Handles Handles
	Records ContainerRecords
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
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Report reports once. When the target cannot be listed nothing is reported, as a
// worker that cannot be reached reports nothing: its containers are not missing.
func (r *Reporter) Report(ctx context.Context) error {
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
