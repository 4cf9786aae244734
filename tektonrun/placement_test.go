package tektonrun

import (
	"slices"
	"testing"
)

func TestPlacement(t *testing.T) {
	for _, tc := range []struct {
		workerTeam, team string
		want             bool
	}{{"", "main", true}, {"ml", "ml", true}, {"ml", "main", false}, {"ml", "", false}} {
		if got := Serves(tc.workerTeam, tc.team); got != tc.want {
			t.Errorf("Serves(%q, %q) = %v, want %v", tc.workerTeam, tc.team, got, tc.want)
		}
	}
	for _, tc := range []struct {
		worker, tags []string
		want         bool
	}{
		{nil, nil, true},
		{[]string{"gpu"}, nil, false}, // untagged steps run on untagged workers alone
		{[]string{"gpu", "linux"}, []string{"gpu"}, true},
		{[]string{"gpu"}, []string{"gpu", "linux"}, false},
		{nil, []string{"gpu"}, false},
	} {
		if got := FitsTags(tc.worker, tc.tags); got != tc.want {
			t.Errorf("FitsTags(%v, %v) = %v, want %v", tc.worker, tc.tags, got, tc.want)
		}
	}
	type worker struct{ name, team string }
	workers := []worker{{"shared", ""}, {"ml-1", "ml"}, {"ml-2", "ml"}}
	teamOf := func(w worker) string { return w.team }
	names := func(ws []worker) []string {
		var out []string
		for _, w := range ws {
			out = append(out, w.name)
		}
		return out
	}
	if got := names(OwnFirst(workers, teamOf, "ml")); !slices.Equal(got, []string{"ml-1", "ml-2"}) {
		t.Errorf("OwnFirst(ml) = %v, want the team's own", got)
	}
	if got := names(OwnFirst(workers[:1], teamOf, "ml")); !slices.Equal(got, []string{"shared"}) {
		t.Errorf("OwnFirst(ml) without its own = %v, want the shared", got)
	}
	if got := names(OwnFirst(workers, teamOf, "main")); !slices.Equal(got, []string{"shared", "ml-1", "ml-2"}) {
		t.Errorf("OwnFirst(main) = %v, want all given", got)
	}
}
