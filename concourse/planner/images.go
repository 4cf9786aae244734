package planner

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/concourse-tekton/concourse-tekton/concourse"
)

// resourceTypes are a pipeline's custom resource types, searched by name.
type resourceTypes []concourse.ResourceType

// savedResourceTypes are a pipeline's resource types as Concourse's scheduler hands them
// to its planner, read back from the database (db.ResourceTypes.Deserialize, over rows
// ordered by name): by name, bytewise, each source laid over the defaults of its parent
// type (the other type named as its type is). Concourse's base types have no defaults
// here (its web node's --base-resource-type-defaults).
func savedResourceTypes(types []concourse.ResourceType) resourceTypes {
	out := slices.SortedStableFunc(slices.Values(types), func(a, b concourse.ResourceType) int { return strings.Compare(a.Name, b.Name) })
	for i, t := range out {
		if p := slices.IndexFunc(out, func(p concourse.ResourceType) bool { return p.Name == t.Type }); p >= 0 && p != i {
			out[i].Source = mergeSource(out[p].Defaults, t.Source)
		}
	}
	return out
}

// mergeSource lays source over defaults, as Concourse's atc.Source.Merge does: nil when
// both are empty and source is nil, else a new map.
func mergeSource(defaults, source concourse.Source) concourse.Source {
	switch {
	case len(defaults) == 0 && source == nil:
		return nil
	case defaults == nil:
		return maps.Clone(source)
	}
	out := maps.Clone(defaults)
	maps.Copy(out, source)
	return out
}

func (ts resourceTypes) lookup(name string) (concourse.ResourceType, bool) {
	for _, t := range ts {
		if t.Name == name {
			return t, true
		}
	}
	return concourse.ResourceType{}, false
}

// without returns the types other than name, so that a type's own image is fetched with
// the types below it in the chain (a type cannot be its own image).
func (ts resourceTypes) without(name string) resourceTypes {
	out := make(resourceTypes, 0, len(ts))
	for _, t := range ts {
		if t.Name != name {
			out = append(out, t)
		}
	}
	return out
}

// sourceWithDefaults merges a custom type's `defaults` under source: a key set in source
// wins.
func (ts resourceTypes) sourceWithDefaults(typeName string, source concourse.Source) concourse.Source {
	t, ok := ts.lookup(typeName)
	if !ok {
		return source
	}
	return mergeSource(t.Defaults, source)
}

// imageForType is how a step of the given type gets its image: a base type needs nothing;
// a custom type's image is fetched by a get (after a check, unless its version is pinned),
// typed recursively by the rest of the chain.
func (ts resourceTypes) imageForType(planID concourse.PlanID, typeName string, stepTags concourse.Tags, skipInterval bool) concourse.TypeImage {
	parent, ok := ts.lookup(typeName)
	if !ok {
		return concourse.TypeImage{BaseType: typeName}
	}
	image := concourse.ImageResource{
		Name:   parent.Name,
		Type:   parent.Type,
		Source: parent.Source,
		Params: parent.Params,
		Tags:   parent.Tags,
	}
	get, check := fetchImagePlan(planID, image, ts.without(parent.Name), stepTags, skipInterval, parent.CheckEvery, parent.Name)
	return concourse.TypeImage{
		GetPlan:    &get,
		CheckPlan:  check,
		BaseType:   get.Get.TypeImage.BaseType,
		Privileged: parent.Privileged,
	}
}

// DefaultCheckInterval is how often a resource whose config sets no check_every is
// checked: Concourse's web node's default (--resource-checking-interval), the interval
// of such a type's image check.
const DefaultCheckInterval = time.Minute

// FetchImagePlan plans the fetch of a task's image_resource, as Concourse does when the task
// runs: a get with ID `<task>/image-get`, after a check `<task>/image-check` unless the
// image's version is pinned.
func FetchImagePlan(taskID concourse.PlanID, image concourse.ImageResource, types []concourse.ResourceType, stepTags concourse.Tags, skipInterval bool) (concourse.Plan, *concourse.Plan) {
	rts := resourceTypes(types)
	image.Source = rts.sourceWithDefaults(image.Type, image.Source)
	image.Name = "image"
	return fetchImagePlan(taskID, image, rts, stepTags, skipInterval, nil, "")
}

func fetchImagePlan(planID concourse.PlanID, image concourse.ImageResource, types resourceTypes, stepTags concourse.Tags,
	skipInterval bool, checkEvery *concourse.CheckEvery, resourceType string) (concourse.Plan, *concourse.Plan) {
	tags := image.Tags
	if len(tags) == 0 {
		tags = stepTags
	}
	getID := planID + "/image-get"
	get := concourse.Plan{ID: getID, Get: &concourse.GetPlan{
		Name:      image.Name,
		Type:      image.Type,
		Source:    image.Source,
		Params:    image.Params,
		TypeImage: types.imageForType(getID, image.Type, tags, skipInterval),
		Tags:      tags,
	}}
	if image.Version != nil {
		ver := image.Version
		get.Get.Version = &ver
		return get, nil
	}
	checkID := planID + "/image-check"
	check := concourse.Plan{ID: checkID, Check: &concourse.CheckPlan{
		Name:         image.Name,
		Type:         image.Type,
		Source:       image.Source,
		TypeImage:    types.imageForType(checkID, image.Type, tags, skipInterval),
		Tags:         tags,
		SkipInterval: skipInterval,
		ResourceType: resourceType,
	}}
	check.Check.Interval = DefaultCheckInterval.String()
	if checkEvery != nil {
		check.Check.Interval = checkEvery.String()
	}
	get.Get.VersionFrom = &checkID
	return get, &check
}
