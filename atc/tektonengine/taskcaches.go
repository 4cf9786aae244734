package tektonengine

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"code.cloudfoundry.org/lager/v3"
	"github.com/concourse/concourse/atc/db"
)

// TaskCaches are the ATC's records of jobs' task caches: Concourse's task_caches table,
// a record per job, step and cache path. A worker keeps a task cache only while its
// record exists; the ATC deletes records when a user clears them (fly clear-task-cache)
// and when a job is paused or its pipeline archived. Here the caches live on a job's
// build volumes: each build's tasks are told the records (BuildRef.TaskCaches), start
// empty the caches whose records are gone, and report the caches they used, which are
// then recorded.
type TaskCaches interface {
	// Records are the job's records: by step name, the ID of each cache path's record.
	Records(ctx context.Context, jobID int) (map[string]map[string]int, error)
	// Record records the caches (paths by step name) a build used, as used now: a cache
	// unused for its TTL loses its record (Concourse's task cache collector).
	Record(ctx context.Context, jobID int, caches map[string][]string) error
}

// DBTaskCaches are the task caches of the ATC's database.
type DBTaskCaches struct {
	// Conn reads a job's records, which TaskCacheFactory cannot list.
	Conn    db.DbConn
	Factory db.TaskCacheFactory
	// TTL is how long a cache may go unused before its record is collected
	// (--default-task-cache-ttl; 0: never).
	TTL time.Duration
}

var _ TaskCaches = DBTaskCaches{}

func (c DBTaskCaches) Records(ctx context.Context, jobID int) (map[string]map[string]int, error) {
	rows, err := c.Conn.QueryContext(ctx, `SELECT id, step_name, path FROM task_caches WHERE job_id = $1`, jobID)
	if err != nil {
		return nil, fmt.Errorf("reading the job's task caches: %w", err)
	}
	defer rows.Close()
	records := map[string]map[string]int{}
	for rows.Next() {
		var id int
		var step, path string
		if err := rows.Scan(&id, &step, &path); err != nil {
			return nil, fmt.Errorf("reading the job's task caches: %w", err)
		}
		if records[step] == nil {
			records[step] = map[string]int{}
		}
		records[step][path] = id
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the job's task caches: %w", err)
	}
	return records, nil
}

func (c DBTaskCaches) Record(_ context.Context, jobID int, caches map[string][]string) error {
	for _, step := range slices.Sorted(maps.Keys(caches)) {
		for _, path := range caches[step] {
			if _, err := c.Factory.FindOrCreate(jobID, step, path, c.TTL); err != nil {
				return fmt.Errorf("recording the task cache %s of step %s: %w", path, step, err)
			}
		}
	}
	return nil
}

// taskCacheRecords are the records of the build's job's task caches, when the factory
// records them and the build is a job's (nil otherwise). The build runs without them
// when they cannot be read: its caches are then kept as they are.
func (s *buildStep) taskCacheRecords(ctx context.Context, logger lager.Logger) map[string]map[string]int {
	if s.factory.TaskCaches == nil || s.build.JobID() == 0 {
		return nil
	}
	records, err := s.factory.TaskCaches.Records(ctx, s.build.JobID())
	if err != nil {
		logger.Error("failed-to-read-task-caches", err)
		return nil
	}
	return records
}

// recordTaskCaches records the task caches the run's tasks used, once it has ended. A
// cache left without a record is cleared by the job's next build (its stamp says it had
// none): losing it costs a cache miss, so a failure is logged, not the build's.
func (s *buildStep) recordTaskCaches(ctx context.Context, logger lager.Logger, run Run) {
	if s.factory.TaskCaches == nil || s.build.JobID() == 0 {
		return
	}
	caches, err := run.TaskCaches(ctx)
	if err == nil && len(caches) > 0 {
		err = s.factory.TaskCaches.Record(ctx, s.build.JobID(), caches)
	}
	if err != nil {
		logger.Error("failed-to-record-task-caches", err)
	}
}
