package tektonworker

import (
	"context"

	"github.com/concourse-tekton/concourse-tekton/atc/tektonengine"
	"github.com/concourse-tekton/concourse-tekton/tektonrun"
)

// TargetCheckRuns are the check runs of a target.
type TargetCheckRuns struct {
	Target *tektonrun.Target
}

var _ CheckRuns = TargetCheckRuns{}

// DeleteCheckRun is tektonengine.DeleteCheckRun on the target.
func (c TargetCheckRuns) DeleteCheckRun(ctx context.Context, taskRun string) (bool, error) {
	return tektonengine.DeleteCheckRun(ctx, c.Target, taskRun)
}
