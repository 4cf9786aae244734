package tektonengine

import (
	"context"
	"errors"
	"fmt"

	"github.com/concourse/concourse/atc"
	"github.com/concourse/concourse/atc/creds"
	"github.com/concourse/concourse/atc/db"
	"github.com/concourse/concourse/atc/exec"
)

// fetchTypeImage is Concourse's FetchImage for a check on the cluster. The type's check
// runs first: a check step of this build, which the engine's stepper runs as a run of
// its own, saving the type's versions. Then, where Concourse's get of the image fetches
// it, only the get's resource cache is found or created, at the version checked: the
// image itself is pulled by the check's run, whose plan says which (pinTypeImage), and
// whose compilation refuses, with translate's UnsupportedError, an image it cannot run.
// A type whose type is a custom type fetches its own type's image first, the same way,
// whose cache is its cache's parent. It returns the image's version and resource cache:
// none for a base type.
//
// Unlike Concourse's, it makes no policy check of the image (use-image): the job builds'
// images on the cluster have none either.
func (s *checkStep) fetchTypeImage(ctx context.Context, state exec.RunState, image atc.TypeImage) (atc.Version, db.ResourceCache, error) {
	if image.GetPlan == nil || image.GetPlan.Get == nil {
		return nil, nil, nil
	}
	if s.config.ResourceCacheFactory == nil {
		return nil, nil, errors.New("checks of resources of a custom resource type need the ATC's resource cache factory, and the stepper was given none")
	}
	fetch := state.NewLocalScope()
	if image.CheckPlan != nil {
		ok, err := fetch.Run(ctx, *image.CheckPlan)
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			return nil, nil, errors.New("image check failed")
		}
	}
	get := image.GetPlan.Get
	_, parent, err := s.fetchTypeImage(ctx, fetch, get.TypeImage)
	if err != nil {
		return nil, nil, err
	}
	source, err := creds.NewSource(fetch, get.Source).Evaluate()
	if err != nil {
		return nil, nil, err
	}
	params, err := creds.NewParams(fetch, get.Params).Evaluate()
	if err != nil {
		return nil, nil, err
	}
	version, err := exec.NewVersionSourceFromPlan(get).Version(fetch)
	if err != nil {
		return nil, nil, err
	}
	cache, err := s.config.ResourceCacheFactory.FindOrCreateResourceCache(s.build.ResourceCacheUser(), get.Type, version, source, params, parent)
	if err != nil {
		return nil, nil, fmt.Errorf("creating the resource cache of the image of %s: %w", get.Name, err)
	}
	if err := s.build.SaveImageResourceVersion(cache); err != nil {
		return nil, nil, fmt.Errorf("save image version: %w", err)
	}
	return version, cache, nil
}

// pinTypeImage is a check plan whose custom type's image is at version, the one
// fetchTypeImage found: its get at that version, its check done. A plan of a base type
// (no version) is left as it is.
func pinTypeImage(plan atc.Plan, version atc.Version) atc.Plan {
	image := plan.Check.TypeImage
	if image.GetPlan == nil || image.GetPlan.Get == nil || version == nil {
		return plan
	}
	getPlan := *image.GetPlan
	get := *getPlan.Get
	get.Version, get.VersionFrom = &version, nil
	getPlan.Get = &get
	check := *plan.Check
	check.TypeImage.GetPlan, check.TypeImage.CheckPlan = &getPlan, nil
	plan.Check = &check
	return plan
}
