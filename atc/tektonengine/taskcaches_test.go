package tektonengine

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/concourse/concourse/atc/db"
	"github.com/concourse/concourse/atc/db/dbfakes"
	"github.com/google/go-cmp/cmp"

	"github.com/concourse-tekton/concourse-tekton/concourse/event"
)

// fakeTaskCaches are task cache records in memory.
type fakeTaskCaches struct {
	records    map[string]map[string]int
	recordsErr error
	recordErr  error

	mu       sync.Mutex
	read     []int
	recorded []recordedCaches
}

type recordedCaches struct {
	jobID  int
	caches map[string][]string
}

func (f *fakeTaskCaches) Records(_ context.Context, jobID int) (map[string]map[string]int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.read = append(f.read, jobID)
	return f.records, f.recordsErr
}

func (f *fakeTaskCaches) Record(_ context.Context, jobID int, caches map[string][]string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.recorded = append(f.recorded, recordedCaches{jobID: jobID, caches: caches})
	return f.recordErr
}

// TestTaskCacheRecords runs job and one-off builds with the ATC's task cache records: a
// job build starts with its job's records and, however it ends, records the caches its
// tasks used; trouble with the records is logged, never the build's.
func TestTaskCacheRecords(t *testing.T) {
	records := map[string]map[string]int{"unit": {".cache": 4}}
	used := map[string][]string{"unit": {".cache", "new"}}
	oneOff := jobBuild(taskPlan)
	oneOff.JobIDReturns(0)
	oneOff.JobNameReturns("")
	tests := []struct {
		name         string
		build        *dbfakes.FakeBuild
		caches       *fakeTaskCaches
		status       event.BuildStatus
		runCachesErr error
		wantRef      map[string]map[string]int
		wantRead     []int
		wantRecorded []recordedCaches
		wantStatus   db.BuildStatus
	}{
		{
			name: "a job build", build: jobBuild(taskPlan), caches: &fakeTaskCaches{records: records}, status: event.BuildStatusSucceeded,
			wantRef: records, wantRead: []int{2}, wantRecorded: []recordedCaches{{2, used}}, wantStatus: db.BuildStatusSucceeded,
		},
		{
			name: "a failed job build records its caches too", build: jobBuild(taskPlan), caches: &fakeTaskCaches{records: records}, status: event.BuildStatusFailed,
			wantRef: records, wantRead: []int{2}, wantRecorded: []recordedCaches{{2, used}}, wantStatus: db.BuildStatusFailed,
		},
		{
			name: "none recorded yet", build: jobBuild(taskPlan), caches: &fakeTaskCaches{records: map[string]map[string]int{}}, status: event.BuildStatusSucceeded,
			wantRef: map[string]map[string]int{}, wantRead: []int{2}, wantRecorded: []recordedCaches{{2, used}}, wantStatus: db.BuildStatusSucceeded,
		},
		{
			name: "records that cannot be read: the build runs without", build: jobBuild(taskPlan), caches: &fakeTaskCaches{recordsErr: errors.New("db down")}, status: event.BuildStatusSucceeded,
			wantRead: []int{2}, wantRecorded: []recordedCaches{{2, used}}, wantStatus: db.BuildStatusSucceeded,
		},
		{
			name: "caches that cannot be recorded", build: jobBuild(taskPlan), caches: &fakeTaskCaches{records: records, recordErr: errors.New("db down")}, status: event.BuildStatusSucceeded,
			wantRef: records, wantRead: []int{2}, wantRecorded: []recordedCaches{{2, used}}, wantStatus: db.BuildStatusSucceeded,
		},
		{
			name: "a run whose caches cannot be read", build: jobBuild(taskPlan), caches: &fakeTaskCaches{records: records}, status: event.BuildStatusSucceeded, runCachesErr: errors.New("apiserver down"),
			wantRef: records, wantRead: []int{2}, wantStatus: db.BuildStatusSucceeded,
		},
		{
			name: "a one-off build has none", build: oneOff, caches: &fakeTaskCaches{records: records}, status: event.BuildStatusSucceeded,
			wantStatus: db.BuildStatusSucceeded,
		},
		{
			name: "a web node that records none", build: jobBuild(taskPlan), status: event.BuildStatusSucceeded,
			wantStatus: db.BuildStatusSucceeded,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := newRun(tt.status, cat(taskHead, []event.Event{finishTask(0, 103)})...)
			run.caches, run.cachesErr = used, tt.runCachesErr
			runs := &fakeRuns{run: run}
			f := &StepperFactory{Runs: runs}
			if tt.caches != nil {
				f.TaskCaches = tt.caches
			}
			runEngine(t, tt.build, f, nil)
			if got := finished(tt.build); got != tt.wantStatus {
				t.Errorf("build %s, want %s", got, tt.wantStatus)
			}
			if diff := cmp.Diff(tt.wantRef, runs.refs[0].TaskCaches); diff != "" {
				t.Errorf("the run's records (-want +got):\n%s", diff)
			}
			if tt.caches == nil {
				return
			}
			if diff := cmp.Diff(tt.wantRead, tt.caches.read); diff != "" {
				t.Errorf("records read of jobs (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantRecorded, tt.caches.recorded, cmp.AllowUnexported(recordedCaches{})); diff != "" {
				t.Errorf("caches recorded (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDBTaskCachesRecord records caches through Concourse's TaskCacheFactory: one record
// per step and path, the steps in order, each with the TTL (--default-task-cache-ttl) that
// its record lives unused; the first failure stops it and says which.
func TestDBTaskCachesRecord(t *testing.T) {
	factory := new(dbfakes.FakeTaskCacheFactory)
	c := DBTaskCaches{Factory: factory, TTL: 90 * time.Minute}
	if err := c.Record(context.Background(), 2, map[string][]string{"b": {"y", "x"}, "a": {"z"}}); err != nil {
		t.Fatal(err)
	}
	type call struct {
		job        int
		step, path string
		ttl        time.Duration
	}
	var got []call
	for i := range factory.FindOrCreateCallCount() {
		job, step, path, ttl := factory.FindOrCreateArgsForCall(i)
		got = append(got, call{job, step, path, ttl})
	}
	if diff := cmp.Diff([]call{{2, "a", "z", 90 * time.Minute}, {2, "b", "y", 90 * time.Minute}, {2, "b", "x", 90 * time.Minute}}, got, cmp.AllowUnexported(call{})); diff != "" {
		t.Errorf("FindOrCreate calls (-want +got):\n%s", diff)
	}
	factory.FindOrCreateReturns(nil, errors.New("db down"))
	err := c.Record(context.Background(), 2, map[string][]string{"a": {"z"}})
	if err == nil || err.Error() != "recording the task cache z of step a: db down" {
		t.Errorf("Record: %v, want it to say which cache it could not record", err)
	}
}
