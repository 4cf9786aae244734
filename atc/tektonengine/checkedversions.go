package tektonengine

import (
	"context"

	"github.com/concourse/concourse/atc"
)

// versionsRun is a Run that gives every version its check found, where Run's
// CheckedVersion gives only the latest. The runs of NewRuns are.
type versionsRun interface {
	// CheckedVersions are the versions the check of the run found, oldest first (none:
	// it found none), once the run has ended: every one its script printed.
	CheckedVersions(ctx context.Context) ([]map[string]string, error)
}

var _ versionsRun = (*backendRun)(nil)

func (r *backendRun) CheckedVersions(ctx context.Context) ([]map[string]string, error) {
	res, err := r.build.Wait(ctx)
	if err != nil {
		return nil, err
	}
	versions := make([]map[string]string, len(res.Versions))
	for i, v := range res.Versions {
		versions[i] = v
	}
	return versions, nil
}

// checkedVersions are the versions the check of an ended run found, oldest first: all of
// them from a versionsRun, else the latest.
func checkedVersions(ctx context.Context, run Run) ([]atc.Version, error) {
	var found []map[string]string
	if w, ok := run.(workerRun); ok {
		run = w.Run // a Pool's run is the run of one of its workers
	}
	if vr, ok := run.(versionsRun); ok {
		var err error
		if found, err = vr.CheckedVersions(ctx); err != nil {
			return nil, err
		}
	} else {
		latest, err := run.CheckedVersion(ctx)
		if err != nil {
			return nil, err
		}
		if latest != nil {
			found = append(found, latest)
		}
	}
	versions := make([]atc.Version, 0, len(found))
	for _, v := range found {
		versions = append(versions, atc.Version(v))
	}
	return versions, nil
}
