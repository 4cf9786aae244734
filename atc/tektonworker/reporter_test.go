package tektonworker

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"code.cloudfoundry.org/lager/v3/lagertest"
)

type handles struct {
	list []string
	err  error
}

func (h handles) ContainerHandles(context.Context) ([]string, error) { return h.list, h.err }

// records keeps what the reporter told it.
type records struct {
	missing, removed [][]string
	worker           string
	destroying       []string
}

func (r *records) FindDestroyingContainers(string) ([]string, error) { return r.destroying, nil }

// checkRuns records the runs it was asked to delete.
type checkRuns struct{ deleted []string }

func (c *checkRuns) DeleteCheckRun(_ context.Context, taskRun string) (bool, error) {
	c.deleted = append(c.deleted, taskRun)
	return strings.HasPrefix(taskRun, "check-"), nil
}

func (r *records) UpdateContainersMissingSince(worker string, reported []string) error {
	r.worker = worker
	r.missing = append(r.missing, reported)
	return nil
}

func (r *records) RemoveDestroyingContainers(worker string, ignore []string) (int, error) {
	r.worker = worker
	r.removed = append(r.removed, ignore)
	return 0, nil
}

// TestReporter reports the target's containers as a worker reports its own: the
// missing marks and the destroyed containers go by what is there; a target that cannot
// be listed reports nothing (its containers are not missing), and none is an empty
// report, not a missing one.
func TestReporter(t *testing.T) {
	rec := &records{}
	r := &Reporter{Worker: "tekton-ci", Handles: handles{list: []string{"a", "b"}}, Records: rec, Logger: lagertest.NewTestLogger("report")}
	if err := r.Report(context.Background()); err != nil {
		t.Fatal(err)
	}
	if rec.worker != "tekton-ci" || len(rec.missing) != 1 || !slices.Equal(rec.missing[0], []string{"a", "b"}) || !slices.Equal(rec.removed[0], []string{"a", "b"}) {
		t.Errorf("reported %+v; want a and b for tekton-ci", rec)
	}

	r.Handles = handles{err: errors.New("connection refused")}
	if err := r.Report(context.Background()); err == nil || len(rec.missing) != 1 || len(rec.removed) != 1 {
		t.Errorf("unreachable target: %v, %+v; want an error and nothing reported", err, rec)
	}

	r.Handles = handles{}
	if err := r.Report(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := rec.missing[1]; got == nil || len(got) != 0 {
		t.Errorf("no containers reported as %#v; want an empty list", got)
	}
}

// TestReporterDestroysCheckRuns: the containers the ATC marked destroying are destroyed
// as a worker destroys them: their check runs are asked to go (CheckRuns leaves other
// runs alone), before the containers are reported.
func TestReporterDestroysCheckRuns(t *testing.T) {
	rec := &records{destroying: []string{"check-1-pod-tr", "job-1-task-tr"}}
	checks := &checkRuns{}
	r := &Reporter{Worker: "tekton-ci", Handles: handles{list: []string{"job-1-task-tr"}}, Records: rec, Checks: checks, Logger: lagertest.NewTestLogger("report")}
	if err := r.Report(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(checks.deleted, []string{"check-1-pod-tr", "job-1-task-tr"}) || len(rec.removed) != 1 {
		t.Errorf("deleted %v, reported %+v; want both asked, then the report", checks.deleted, rec)
	}
	// A job build's container stays destroying while its pods are kept: it is not a
	// check's, and is asked about once.
	rec.destroying = []string{"job-1-task-tr", "check-2-pod-tr"}
	if err := r.Report(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(checks.deleted, []string{"check-1-pod-tr", "job-1-task-tr", "check-2-pod-tr"}) {
		t.Errorf("asked about %v; want job-1-task-tr once", checks.deleted)
	}
}
