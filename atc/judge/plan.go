package judge

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/concourse/concourse/atc"
	"github.com/concourse/concourse/atc/builds"
	"github.com/concourse/concourse/atc/db"
)

func init() {
	// The web node's default --resource-checking-interval: the interval of the check of
	// a type's image when the type sets no check_every.
	atc.DefaultCheckInterval = time.Minute
}

// SavedConfig is Pipeline's verdict on a pipeline file and, when Concourse accepts it,
// the config as the web node's scheduler reads it back: as the web node saved it, in
// JSON.
func SavedConfig(data []byte) (Verdict, atc.Config, error) {
	v, config := setPipeline(data)
	if len(v.Errors) > 0 {
		return v, atc.Config{}, nil
	}
	saved, err := json.Marshal(config)
	if err != nil {
		return v, atc.Config{}, err
	}
	config = atc.Config{}
	err = json.Unmarshal(saved, &config)
	return v, config, err
}

// Plan is Concourse's plan of a build of the named job of a saved config, as the web
// node's scheduler makes it (atc/scheduler/buildstarter.go): builds.Planner over the
// job's config, with the pipeline's resources, its resource types as the database gives
// them back (ResourceTypes), its prototypes, and build inputs that give each get step the
// version versions has of its name. Plan IDs count up from firstID, as from the start
// time the web node's PlanFactory is given.
func Plan(config atc.Config, job string, versions map[string]atc.Version, firstID int64) (atc.Plan, error) {
	j, found := config.Jobs.Lookup(job)
	if !found {
		return atc.Plan{}, fmt.Errorf("no job %q", job)
	}
	var resources db.SchedulerResources
	for _, r := range config.Resources {
		resources = append(resources, db.SchedulerResource{Name: r.Name, Type: r.Type, Source: r.Source, ExposeBuildCreatedBy: r.ExposeBuildCreatedBy})
	}
	var inputs []db.BuildInput
	for _, name := range slices.Sorted(maps.Keys(versions)) {
		inputs = append(inputs, db.BuildInput{Name: name, Version: versions[name]})
	}
	planner := builds.NewPlanner(atc.NewPlanFactory(firstID))
	return planner.Create(j.StepConfig(), resources, ResourceTypes(config.ResourceTypes), config.Prototypes, inputs, false)
}

// ResourceTypes are a pipeline's resource types as the web node's scheduler reads them
// from the database (db.ResourceTypes.Deserialize, over the rows ordered by name): by
// name (the database's order, which Postgres gives bytewise under the C collation), each
// source laid over the defaults of its parent type (another type of its type's name),
// else of the base type of its name (atc.FindBaseResourceTypeDefaults).
func ResourceTypes(types atc.ResourceTypes) atc.ResourceTypes {
	sorted := slices.SortedStableFunc(slices.Values(types), func(a, b atc.ResourceType) int { return strings.Compare(a.Name, b.Name) })
	out := make(atc.ResourceTypes, 0, len(sorted))
	for i, t := range sorted {
		source := t.Source
		parent := slices.IndexFunc(sorted, func(p atc.ResourceType) bool { return p.Name == t.Type })
		if parent >= 0 && parent != i {
			source = sorted[parent].Defaults.Merge(source)
		} else if defaults, found := atc.FindBaseResourceTypeDefaults(t.Type); found {
			source = defaults.Merge(source)
		}
		out = append(out, atc.ResourceType{
			Name:       t.Name,
			Type:       t.Type,
			Source:     source,
			Defaults:   t.Defaults,
			Privileged: t.Privileged,
			CheckEvery: t.CheckEvery,
			Tags:       t.Tags,
			Params:     t.Params,
		})
	}
	return out
}
