package gc

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/concourse-tekton/concourse-tekton/concourse"
)

func TestPolicy(t *testing.T) {
	tests := []struct {
		name     string
		defaults Defaults
		job      *concourse.BuildLogRetention
		want     concourse.BuildLogRetention
	}{
		{name: "nothing set"},
		{name: "the job's", job: &concourse.BuildLogRetention{Builds: 5, Days: 2, MinimumSucceededBuilds: 1},
			want: concourse.BuildLogRetention{Builds: 5, Days: 2, MinimumSucceededBuilds: 1}},
		{name: "default builds", job: &concourse.BuildLogRetention{Days: 3},
			defaults: Defaults{DefaultBuilds: 10}, want: concourse.BuildLogRetention{Builds: 10, Days: 3}},
		{name: "defaults fill what the job leaves unset", defaults: Defaults{DefaultBuilds: 10, DefaultDays: 4},
			job: &concourse.BuildLogRetention{Builds: 2}, want: concourse.BuildLogRetention{Builds: 2, Days: 4}},
		{name: "caps", defaults: Defaults{MaxBuilds: 20, MaxDays: 30},
			job:  &concourse.BuildLogRetention{Builds: 50, Days: 7, MinimumSucceededBuilds: 25},
			want: concourse.BuildLogRetention{Builds: 20, Days: 7}},
		{name: "caps apply to a job with nothing set", defaults: Defaults{MaxBuilds: 20},
			want: concourse.BuildLogRetention{Builds: 20}},
		{name: "within the caps", defaults: Defaults{MaxBuilds: 20, MaxDays: 30},
			job:  &concourse.BuildLogRetention{Builds: 5, Days: 7, MinimumSucceededBuilds: 2},
			want: concourse.BuildLogRetention{Builds: 5, Days: 7, MinimumSucceededBuilds: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.defaults.Policy(tt.job)); diff != "" {
				t.Errorf("Policy (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRetain(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	// b makes build n, ended `ago` before now; s marks it succeeded, r running.
	b := func(n string, ago time.Duration, flags string) Build {
		out := Build{Name: n, Ended: now.Add(-ago)}
		for _, f := range flags {
			switch f {
			case 's':
				out.Succeeded = true
			case 'r':
				out.Running, out.Ended = true, time.Time{}
			}
		}
		return out
	}
	tests := []struct {
		name   string
		policy concourse.BuildLogRetention
		builds []Build
		want   []Verdict
	}{
		{
			name:   "no retention keeps everything",
			builds: []Build{b("2", 0, "r"), b("1", 100*day, "")},
			want:   []Verdict{{Build: "2", Reason: ReasonRunning}, {Build: "1", Reason: ReasonNoRetention}},
		},
		{
			name:   "builds: the newest, running ones not counted",
			policy: concourse.BuildLogRetention{Builds: 2},
			builds: []Build{b("5", 0, "r"), b("4", 0, ""), b("3", 0, "s"), b("2", 0, ""), b("1", 0, "s")},
			want: []Verdict{
				{Build: "5", Reason: ReasonRunning},
				{Build: "4", Reason: ReasonNewest},
				{Build: "3", Reason: ReasonNewest},
				{Build: "2", Delete: true, Reason: ReasonBeyond},
				{Build: "1", Delete: true, Reason: ReasonBeyond},
			},
		},
		{
			name:   "minimum succeeded builds take places first",
			policy: concourse.BuildLogRetention{Builds: 2, MinimumSucceededBuilds: 1},
			builds: []Build{b("4", 0, ""), b("3", 0, ""), b("2", 0, "s"), b("1", 0, "s")},
			want: []Verdict{
				{Build: "4", Reason: ReasonNewest},
				{Build: "3", Delete: true, Reason: ReasonOverBuilds},
				{Build: "2", Reason: ReasonSucceeded},
				{Build: "1", Delete: true, Reason: ReasonBeyond},
			},
		},
		{
			name:   "days",
			policy: concourse.BuildLogRetention{Days: 3},
			builds: []Build{b("3", day, ""), b("2", 3*day-time.Minute, ""), b("1", 3*day+time.Minute, "s")},
			want: []Verdict{
				{Build: "3", Reason: ReasonRecent},
				{Build: "2", Reason: ReasonRecent},
				{Build: "1", Delete: true, Reason: ReasonBeyond},
			},
		},
		{
			name:   "builds and days: recent builds past the count go once anything is deleted",
			policy: concourse.BuildLogRetention{Builds: 1, Days: 3},
			builds: []Build{b("3", day, ""), b("2", day, ""), b("1", 10*day, "")},
			want: []Verdict{
				{Build: "3", Reason: ReasonNewest},
				{Build: "2", Delete: true, Reason: ReasonOverBuilds},
				{Build: "1", Delete: true, Reason: ReasonBeyond},
			},
		},
		{
			name:   "builds and days: all recent, nothing deleted, as Concourse",
			policy: concourse.BuildLogRetention{Builds: 1, Days: 3},
			builds: []Build{b("2", day, ""), b("1", day, "")},
			want:   []Verdict{{Build: "2", Reason: ReasonNewest}, {Build: "1", Reason: ReasonRecent}},
		},
		{
			name:   "a build that never ended is not expired",
			policy: concourse.BuildLogRetention{Days: 1},
			builds: []Build{{Name: "1"}},
			want:   []Verdict{{Build: "1", Reason: ReasonRecent}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Retain(tt.builds, tt.policy, now)); diff != "" {
				t.Errorf("Retain (-want +got):\n%s", diff)
			}
		})
	}
}
