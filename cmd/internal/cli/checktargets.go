package cli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/concourse-tekton/concourse-tekton/tektonrun"
)

// checkedTarget is one worker of the web node's, checked: what the targets file (or the
// flags, for the first) says of it, and its report.
type checkedTarget struct {
	Worker    string                `json:"worker"`
	Namespace string                `json:"namespace"`
	Team      string                `json:"team,omitempty"`
	Tags      []string              `json:"tags,omitempty"`
	Report    tektonrun.CheckReport `json:"report"`
	target    *tektonrun.Target
}

// checkTargets checks the flags' target, as the web node's first worker (first says its
// name, team and tags), and each target of the targets file at path; it prints each
// report under its worker, then where each team's steps run.
func (s *streams) checkTargets(ctx context.Context, o tektonrun.TargetOptions, first tektonrun.TargetSpec, path, output string) error {
	marshal, err := outputFormat(output)
	if err != nil {
		return err
	}
	for _, tag := range first.Tags {
		if err := tektonrun.CheckTag(tag); err != nil {
			return fmt.Errorf("--tag %w", err)
		}
	}
	more, err := tektonrun.ReadTargets(path)
	if err != nil {
		return fmt.Errorf("--targets %w", err)
	}
	specs := append([]tektonrun.TargetSpec{first}, more...)
	checked := make([]checkedTarget, len(specs))
	names := map[string]string{}
	for i, spec := range specs {
		where := "the flags' target"
		to := o
		if i > 0 {
			where = fmt.Sprintf("--targets %s:%d:%d: targets[%d]", path, spec.Line, spec.Column, i-1)
			// An entry in the web node's own cluster (in_cluster, or no kubeconfig of its
			// own) is checked in the cluster of the flags.
			to.Namespace = spec.Namespace
			if spec.Kubeconfig != "" || spec.Context != "" {
				to.Kubeconfig, to.Context, to.InCluster = spec.Kubeconfig, spec.Context, false
			}
		}
		t, err := dialTarget(to)
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		name := spec.WorkerName(t.Namespace)
		if other, ok := names[name]; ok {
			return fmt.Errorf("%s: worker %s is %s's name already", where, name, other)
		}
		names[name] = where
		checked[i] = checkedTarget{Worker: name, Namespace: t.Namespace, Team: spec.Team, Tags: spec.Tags, target: t}
	}
	var wg sync.WaitGroup
	for i := range checked {
		wg.Go(func() { checked[i].Report = checked[i].target.Check(ctx) })
	}
	wg.Wait()

	teams := placeTeams(checked)
	report := struct {
		Targets []checkedTarget `json:"targets"`
		Teams   []teamPlace     `json:"teams"`
	}{checked, teams}
	if err := writeReport(s.out, marshal, report, func() {
		for i, c := range checked {
			if i > 0 {
				fmt.Fprintln(s.out)
			}
			fmt.Fprintf(s.out, "worker %s (%s):\n", c.Worker, describeWorker(c.Namespace, c.Team, c.Tags))
			printCheck(s.out, c.target, c.Report)
		}
		printTeams(s.out, teams)
	}); err != nil {
		return err
	}
	if slices.ContainsFunc(checked, func(c checkedTarget) bool { return !c.Report.OK() }) {
		return &exitError{code: 1}
	}
	return nil
}

// describeWorker says a worker's namespace, team and tags.
func describeWorker(namespace, team string, tags []string) string {
	out := "namespace " + namespace + ", "
	if team == "" {
		out += "every team's"
	} else {
		out += "team " + team + "'s"
	}
	if len(tags) > 0 {
		out += ", tags " + strings.Join(tags, ", ")
	}
	return out
}

// teamPlace is where a team's steps run: Team is "" for every team without a worker of
// its own.
type teamPlace struct {
	Team  string      `json:"team"`
	Steps []stepPlace `json:"steps"`
}

// stepPlace is where a team's steps with some tags run, as the web node places them
// (tektonrun.Serves, FitsTags, OwnFirst) on the workers that took builds when checked.
type stepPlace struct {
	// Tags are the steps' tags: those of one of the workers.
	Tags []string `json:"tags"`
	// Workers are where they run (none: nowhere, the build errors); Own, whether those
	// are the team's own workers.
	Workers []string `json:"workers"`
	Own     bool     `json:"own"`
	// Privileged are where those of them that are privileged run; Refused, why each of
	// the other workers refuses them.
	Privileged []string `json:"privileged"`
	Refused    []string `json:"refused,omitempty"`
}

// placeTeams says, for each team that has a worker and then for every other team, where
// its steps run: for each set of tags a worker has, the workers that take them.
func placeTeams(workers []checkedTarget) []teamPlace {
	var teams []string
	var tagSets [][]string
	for _, w := range workers {
		if w.Team != "" && !slices.Contains(teams, w.Team) {
			teams = append(teams, w.Team)
		}
		tags := slices.Sorted(slices.Values(w.Tags))
		if !slices.ContainsFunc(tagSets, func(s []string) bool { return slices.Equal(s, tags) }) {
			tagSets = append(tagSets, tags)
		}
	}
	slices.Sort(teams)
	teams = append(teams, "")
	slices.SortFunc(tagSets, func(a, b []string) int {
		return cmp.Or(cmp.Compare(len(a), len(b)), slices.Compare(a, b))
	})
	teamOf := func(w checkedTarget) string { return w.Team }
	var out []teamPlace
	for _, team := range teams {
		place := teamPlace{Team: team}
		for _, tags := range tagSets {
			var fitting, admitting []checkedTarget
			step := stepPlace{Tags: tags, Workers: []string{}, Privileged: []string{}}
			for _, w := range workers {
				if !w.takesBuilds() || !tektonrun.Serves(w.Team, team) || !tektonrun.FitsTags(w.Tags, tags) {
					continue
				}
				fitting = append(fitting, w)
				if why := w.Report.PodSecurity.PrivilegedRefused(); why != "" {
					step.Refused = append(step.Refused, fmt.Sprintf("worker %s's %s", w.Worker, why))
				} else {
					admitting = append(admitting, w)
				}
			}
			for _, w := range tektonrun.OwnFirst(fitting, teamOf, team) {
				step.Workers = append(step.Workers, w.Worker)
				step.Own = team != "" && w.Team == team
			}
			for _, w := range tektonrun.OwnFirst(admitting, teamOf, team) {
				step.Privileged = append(step.Privileged, w.Worker)
			}
			place.Steps = append(place.Steps, step)
		}
		out = append(out, place)
	}
	return out
}

// takesBuilds tells whether the worker took builds when it was checked: it answered,
// passed, and is running (not landing, landed or retiring).
func (c checkedTarget) takesBuilds() bool {
	return c.Report.OK() && (c.Report.Status == nil || c.Report.Status.State == tektonrun.StateRunning)
}

// printTeams writes where each team's steps run, a line per team and set of tags.
func printTeams(w io.Writer, teams []teamPlace) {
	fmt.Fprintln(w, "\nwhere each team's steps run:")
	for _, t := range teams {
		team := "team " + t.Team
		if t.Team == "" {
			team = "every other team"
		}
		for _, s := range t.Steps {
			steps := "steps without tags"
			if len(s.Tags) > 0 {
				steps = "steps tagged " + strings.Join(s.Tags, ", ")
			}
			where := "no worker: such a build errors"
			if len(s.Workers) > 0 {
				where = strings.Join(s.Workers, ", ")
				if s.Own {
					where += " (the team's own)"
				}
			}
			privileged := strings.Join(s.Privileged, ", ")
			switch {
			case len(s.Workers) == 0:
				privileged = ""
			case len(s.Privileged) == 0:
				privileged = "; privileged ones refused: " + strings.Join(s.Refused, "; ")
			default:
				privileged = "; privileged ones on " + privileged
			}
			fmt.Fprintf(w, "    %s, %s: %s%s\n", team, steps, where, privileged)
		}
	}
}
