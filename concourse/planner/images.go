package planner

import (
	"github.com/concourse-tekton/concourse-tekton/concourse"
)

// resourceTypes are a pipeline's custom resource types, searched by name.
type resourceTypes []concourse.ResourceType

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
	if !ok || len(t.Defaults) == 0 {
		return source
	}
	out := concourse.Source{}
	for k, v := range t.Defaults {
		out[k] = v
	}
	for k, v := range source {
		out[k] = v
	}
	return out
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
	if checkEvery != nil && !checkEvery.Never && checkEvery.Interval > 0 {
		check.Check.Interval = checkEvery.Interval.String()
	}
	get.Get.VersionFrom = &checkID
	return get, &check
}
