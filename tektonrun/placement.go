package tektonrun

import "slices"

// Placement is Concourse's choice of workers for a build (v8.2.5's atc/worker/pool.go and
// placement.go), as the web node's pool makes it and check-target reports it per team: a
// worker takes the builds of its team, or of every team when it has none; a build needing
// no tag runs on the workers without any, one needing tags on those that have them all;
// and among the workers that fit, a team's own are used while any is running.

// Serves tells whether a worker of workerTeam ("": every team's) takes team's builds.
func Serves(workerTeam, team string) bool {
	return workerTeam == "" || workerTeam == team
}

// FitsTags tells whether a worker with workerTags runs a build whose steps need tags
// (each once): with none, a worker without tags; with some, a worker that has them all.
func FitsTags(workerTags, tags []string) bool {
	if len(tags) == 0 {
		return len(workerTags) == 0
	}
	for _, tag := range tags {
		if !slices.Contains(workerTags, tag) {
			return false
		}
	}
	return true
}

// OwnFirst are the workers of fitting that are team's own (teamOf gives a worker's team),
// when it has any, else all of them: Concourse uses a team's workers for its builds while
// any is running and fits them, and the workers of every team only when none is.
func OwnFirst[W any](fitting []W, teamOf func(W) string, team string) []W {
	var own []W
	for _, w := range fitting {
		if t := teamOf(w); t != "" && t == team {
			own = append(own, w)
		}
	}
	if len(own) > 0 {
		return own
	}
	return fitting
}
