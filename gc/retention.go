package gc

import (
	"time"

	"github.com/concourse-tekton/concourse-tekton/concourse"
)

// Defaults are the target-wide retention settings, Concourse's web flags of the same
// meaning: a job that sets no retention of its own keeps DefaultBuilds builds and the
// builds of the last DefaultDays days; MaxBuilds and MaxDays, when set, cap what any job
// keeps (--max-build-logs-to-retain, --max-days-to-retain-build-logs). Zero is unset.
type Defaults struct {
	DefaultBuilds int
	DefaultDays   int
	MaxBuilds     int
	MaxDays       int
}

// Policy is the retention of one job once the target's defaults and caps are applied:
// Concourse's BuildLogRetentionCalculator. job is the job's own retention
// (concourse.JobConfig.LogRetention; nil: none).
func (d Defaults) Policy(job *concourse.BuildLogRetention) concourse.BuildLogRetention {
	var builds, days, minSucceeded int
	if job != nil {
		builds, days, minSucceeded = job.Builds, job.Days, job.MinimumSucceededBuilds
	}
	if builds == 0 {
		builds = d.DefaultBuilds
	}
	if days == 0 {
		days = d.DefaultDays
	}
	if d.MaxBuilds == 0 && d.MaxDays == 0 {
		return concourse.BuildLogRetention{Builds: builds, MinimumSucceededBuilds: minSucceeded, Days: days}
	}
	var p concourse.BuildLogRetention
	p.Builds = d.MaxBuilds
	if builds > 0 && builds < d.MaxBuilds {
		p.Builds = builds
	}
	p.Days = d.MaxDays
	if days > 0 && days < d.MaxDays {
		p.Days = days
	}
	if minSucceeded >= 0 && minSucceeded <= p.Builds {
		p.MinimumSucceededBuilds = minSucceeded
	}
	return p
}

// Build is what the retention rules know of one build of a job.
type Build struct {
	Name      string
	Running   bool
	Succeeded bool
	// Ended is when it ended (zero: it has not, or it never started).
	Ended time.Time
}

// Verdict is what the rules decide for one build, and why.
type Verdict struct {
	Build  string
	Delete bool
	Reason string
}

// The reasons a build is kept or deleted.
const (
	ReasonRunning     = "running"
	ReasonNoRetention = "its job retains every build (no build_log_retention, no default)"
	ReasonNewest      = "among the job's newest builds (build_log_retention.builds)"
	ReasonSucceeded   = "among the job's newest succeeded builds (build_log_retention.minimum_succeeded_builds)"
	ReasonRecent      = "ended within build_log_retention.days"
	ReasonBeyond      = "beyond the job's build_log_retention"
	ReasonOverBuilds  = "beyond build_log_retention.builds, which the kept succeeded builds fill"
	ReasonCacheSource = "its volume holds the caches the job's next build starts from"
)

// Retain applies a job's retention policy to its builds, newest first, as Concourse's
// build log collector does (atc/gc/build_log_collector.go): running builds are kept; with
// `builds`, the newest succeeded builds up to minimum_succeeded_builds and then the newest
// builds up to `builds` are kept; with `days`, builds that ended within that many days of
// now; the rest are deleted; and if the succeeded builds kept made the count exceed
// `builds`, the oldest of the others kept are deleted until it does not (only when the
// first pass deleted any, as Concourse does). It returns a verdict per build, in the
// order given.
func Retain(builds []Build, p concourse.BuildLogRetention, now time.Time) []Verdict {
	out := make([]Verdict, len(builds))
	if p.Builds == 0 && p.Days == 0 {
		for i, b := range builds {
			out[i] = Verdict{Build: b.Name, Reason: ReasonNoRetention}
			if b.Running {
				out[i].Reason = ReasonRunning
			}
		}
		return out
	}
	retained, succeeded, deleted := 0, 0, false
	var candidates []int
	for i, b := range builds {
		out[i] = Verdict{Build: b.Name}
		if b.Running {
			out[i].Reason = ReasonRunning
			continue
		}
		if p.Builds != 0 {
			if p.MinimumSucceededBuilds != 0 && b.Succeeded && succeeded < p.MinimumSucceededBuilds {
				retained++
				succeeded++
				out[i].Reason = ReasonSucceeded
				continue
			}
			if retained < p.Builds {
				retained++
				candidates = append(candidates, i)
				out[i].Reason = ReasonNewest
				continue
			}
		}
		if p.Days != 0 && (b.Ended.IsZero() || !b.Ended.AddDate(0, 0, p.Days).Before(now)) {
			retained++
			candidates = append(candidates, i)
			out[i].Reason = ReasonRecent
			continue
		}
		out[i].Delete, out[i].Reason = true, ReasonBeyond
		deleted = true
	}
	if deleted && p.Builds != 0 && retained > p.Builds {
		for k := 0; k < retained-p.Builds && k < len(candidates); k++ {
			i := candidates[len(candidates)-1-k]
			out[i].Delete, out[i].Reason = true, ReasonOverBuilds
		}
	}
	return out
}
