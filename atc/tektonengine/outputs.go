package tektonengine

import (
	"code.cloudfoundry.org/clock"
	"code.cloudfoundry.org/lager/v3"
	"github.com/concourse/concourse/atc"
	"github.com/concourse/concourse/atc/creds"
	"github.com/concourse/concourse/atc/db"
	"github.com/concourse/concourse/atc/engine"
	atcevent "github.com/concourse/concourse/atc/event"
	"github.com/concourse/concourse/atc/exec"
	"github.com/concourse/concourse/atc/resource"
)

// outputs records in the ATC's database what a build's get and put steps tell the
// pipeline, when their finish events arrive, through Concourse's own get and put
// delegates: a put of a pipeline resource saves the version it created as the build's
// output and as a version of the resource (so that jobs with `passed:` or `trigger: true`
// on it see it), and a get of one updates that version's metadata. Concourse does both
// just before the step's finish event, and so does the stepper; both are idempotent, so
// a build whose web node restarted in between does them again harmlessly.
type outputs struct {
	build db.Build
	state exec.RunState
	// configs finds the resource config a resource of a custom type was checked with,
	// whose image's resource cache its outputs are saved under (nil: such outputs are
	// not saved, and a log line says so).
	configs db.ResourceConfigFactory
	plans   map[atc.PlanID]atc.Plan
}

func newOutputs(build db.Build, plan atc.Plan, state exec.RunState, configs db.ResourceConfigFactory) *outputs {
	plans := map[atc.PlanID]atc.Plan{}
	plan.Each(func(p *atc.Plan) {
		if p.Get != nil || p.Put != nil {
			plans[p.ID] = *p
		}
	})
	return &outputs{build: build, state: state, configs: configs, plans: plans}
}

// record saves what e, an event about to be saved, says of a resource's versions.
func (o *outputs) record(logger lager.Logger, e atc.Event) {
	switch ev := e.(type) {
	case atcevent.FinishPut:
		plan, ok := o.plans[atc.PlanID(ev.Origin.ID)]
		if !ok || plan.Put == nil || ev.ExitStatus != 0 || plan.Put.Resource == "" {
			return
		}
		o.savePut(logger.Session("save-output", lager.Data{"plan": plan.ID, "resource": plan.Put.Resource}), plan.ID, *plan.Put, resource.VersionResult{Version: ev.CreatedVersion, Metadata: ev.CreatedMetadata})
	case atcevent.FinishGet:
		plan, ok := o.plans[atc.PlanID(ev.Origin.ID)]
		if !ok || plan.Get == nil || ev.ExitStatus != 0 || plan.Get.Resource == "" {
			return
		}
		delegate := engine.NewGetDelegate(o.build, plan.ID, o.state, clock.NewClock(), nil)
		delegate.UpdateResourceVersion(logger, plan.Get.Resource, resource.VersionResult{Version: ev.FetchedVersion, Metadata: ev.FetchedMetadata})
	}
}

// savePut is the put step's delegate.SaveOutput, with the source evaluated as the put
// evaluated it and, for a custom type, the resource cache of the type's image.
func (o *outputs) savePut(logger lager.Logger, id atc.PlanID, put atc.PutPlan, result resource.VersionResult) {
	source, err := creds.NewSource(o.state, put.Source).Evaluate()
	if err != nil {
		logger.Error("failed-to-evaluate-source", err)
		return
	}
	var cache db.ResourceCache
	if put.TypeImage.GetPlan != nil {
		var ok bool
		if cache, ok = o.typeImageCache(logger, put.Resource); !ok {
			return
		}
	}
	engine.NewPutDelegate(o.build, id, o.state, clock.NewClock(), nil).SaveOutput(logger, put, source, cache, result)
}

// typeImageCache is the resource cache of the image of the custom type of a resource: the
// one its config was created by when it was checked. A resource never checked has none,
// and its output is not saved (its next check finds the version).
func (o *outputs) typeImageCache(logger lager.Logger, name string) (db.ResourceCache, bool) {
	if o.configs == nil {
		logger.Info("not-saved", lager.Data{"reason": "resources of custom types need the resource config factory"})
		return nil, false
	}
	pipeline, found, err := o.build.Pipeline()
	if err != nil || !found {
		logger.Error("failed-to-find-pipeline", err)
		return nil, false
	}
	r, found, err := pipeline.Resource(name)
	if err != nil || !found {
		logger.Error("failed-to-find-resource", err)
		return nil, false
	}
	if r.ResourceConfigID() == 0 {
		logger.Info("not-saved", lager.Data{"reason": "the resource was never checked"})
		return nil, false
	}
	config, found, err := o.configs.FindResourceConfigByID(r.ResourceConfigID())
	if err != nil || !found {
		logger.Error("failed-to-find-resource-config", err)
		return nil, false
	}
	return config.CreatedByResourceCache(), true
}
