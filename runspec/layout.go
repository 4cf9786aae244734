package runspec

import (
	"path"
	"strings"
)

// Escape turns a plan ID, scope or name into one path element: every byte other than
// ASCII letters, digits, '-', '_' and a '.' that does not start the element is written
// %XX, and the empty string is "%". Distinct inputs give distinct elements.
func Escape(s string) string {
	if s == "" {
		return "%"
	}
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' && i > 0 {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// Paths of the build volume, relative to its root (see the package doc).
const (
	VolumesDir = "volumes"
	WorkDir    = "work"
	CachesDir  = "caches"
	StateDir   = "state"
	// PreservedDir holds what a failed job build's volume held but its caches, once
	// the build has ended, so that its steps can be intercepted as they were; the job's
	// next build, whose volume is a clone of it, ignores it and drops it when it ends.
	// Its file PreservedBuild names the build it is of.
	PreservedDir   = "preserved"
	PreservedBuild = ".build"
	// ResourceCachesDir holds a job's resource caches, under caches/ (so that the job's
	// next build has them) in a directory no step's caches can be (Escape never writes a
	// bare '%'): one directory per cache, named by its key (see the runner's
	// resourceCache), holding data/ (what the get fetched), result.json and used (the
	// build that used it last).
	ResourceCachesDir = CachesDir + "/%resources"
	// CacheStampsDir holds, for a job whose task caches the ATC records, the stamp of
	// each task cache (runspec.CacheRecords): CacheStampPath.
	CacheStampsDir = CachesDir + "/%stamps"
)

// ArtifactPath is where a step's artifact lives on the build volume when it is not
// registered in place.
func ArtifactPath(planID, name string) string {
	return path.Join(VolumesDir, Escape(planID), Escape(name))
}

// WorkPath is the directory of the build volume the translator may mount at /tmp/build
// for a step (Paths.Work).
func WorkPath(planID string) string {
	return path.Join(WorkDir, Escape(planID))
}

// CachePath is where a job build keeps a task cache.
func CachePath(stepName, cachePath string) string {
	return path.Join(CachesDir, Escape(stepName), Escape(cachePath))
}

// CacheStampPath is where a job build keeps the stamp of a task cache.
func CacheStampPath(stepName, cachePath string) string {
	return path.Join(CacheStampsDir, Escape(stepName), Escape(cachePath))
}

// State paths, relative to the state directory.
const (
	AbortMarker  = "aborted"
	OutcomesDir  = "outcomes"
	FailFastDir  = "failfast"
	StartedDir   = "started"
	DeadlinesDir = "deadlines"
	DetachDir    = "detach"
	ScopesDir    = "scopes"
	ResultsDir   = "results"
	ConfigsDir   = "configs"
	AcrossDir    = "across"
)
