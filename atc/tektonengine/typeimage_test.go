package tektonengine

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/concourse/concourse/atc"
	"github.com/concourse/concourse/atc/db"
	"github.com/concourse/concourse/atc/db/dbfakes"
	"github.com/google/go-cmp/cmp"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/event"
)

// versionsRuns starts versionsFakeRuns: runs whose check found several versions.
type versionsRuns struct {
	*fakeRuns
	versions []map[string]string
}

func (r versionsRuns) Start(ctx context.Context, plan []byte, ref BuildRef) (Run, error) {
	run, err := r.fakeRuns.Start(ctx, plan, ref)
	if err != nil {
		return nil, err
	}
	return versionsFakeRun{fakeRun: run.(*fakeRun), versions: r.versions}, nil
}

type versionsFakeRun struct {
	*fakeRun
	versions []map[string]string
}

var _ versionsRun = versionsFakeRun{}

func (r versionsFakeRun) CheckedVersions(context.Context) ([]map[string]string, error) {
	return r.versions, nil
}

func TestCheckSavesEveryVersion(t *testing.T) {
	fx := newCheckFixture(checkPlan)
	found := []map[string]string{{"v": "1"}, {"v": "2"}, {"v": "3"}}
	runs := versionsRuns{fakeRuns: &fakeRuns{run: newRun(event.BuildStatusSucceeded, checkEvents(event.Finish{Origin: event.Origin{ID: "5"}, Time: 103, Succeeded: true})...)}, versions: found}
	runEngine(t, fx.build, fx.factory(runs), nil)

	if got := finished(fx.build); got != db.BuildStatusSucceeded {
		t.Fatalf("status %q; want succeeded (events %v)", got, eventTypes(savedEventsOf(fx.build)))
	}
	if n := fx.scope.SaveVersionsCallCount(); n != 1 {
		t.Fatalf("SaveVersions called %d times; want once", n)
	}
	_, versions := fx.scope.SaveVersionsArgsForCall(0)
	if diff := cmp.Diff([]atc.Version{{"v": "1"}, {"v": "2"}, {"v": "3"}}, versions); diff != "" {
		t.Errorf("saved versions, in order (-want +got):\n%s", diff)
	}
}

// checkSucceeds runs fx's check build with runs whose checks succeed and find version,
// fails t unless the build succeeded, and returns the runs.
func checkSucceeds(t *testing.T, fx *checkFixture, version map[string]string) *fakeRuns {
	t.Helper()
	run := newRun(event.BuildStatusSucceeded, checkEvents(event.Finish{Origin: event.Origin{ID: "5"}, Time: 103, Succeeded: true})...)
	run.version = version
	// The check of a type's image plays its events at its own origin, as a real run does.
	runs := &fakeRuns{run: run, forPlan: func(id atc.PlanID) *fakeRun {
		if id == "5" {
			return nil
		}
		r := newRun(event.BuildStatusSucceeded, checkEventsAt(concourse.PlanID(id), event.Finish{Origin: event.Origin{ID: concourse.PlanID(id)}, Time: 103, Succeeded: true})...)
		r.version = version
		return r
	}}
	runEngine(t, fx.build, fx.factory(runs), nil)
	if got := finished(fx.build); got != db.BuildStatusSucceeded {
		t.Fatalf("status %q; want succeeded (events %v)", got, eventTypes(savedEventsOf(fx.build)))
	}
	return runs
}

// customTypeCheck is lidar's check of resource "repo" of type "my-type", a custom type
// whose image is the mock resource's own (mirror_self).
func customTypeCheck() atc.Plan {
	return checkOfCustomType("my-type", "mock", atc.TypeImage{BaseType: "mock"})
}

// checkOfCustomType is lidar's check of resource "repo" of the custom type typ, itself of
// type parent (whose image is parentImage), as the ATC plans it: the type's check, then
// the get of its image (mirror_self) at the version that check found.
func checkOfCustomType(typ, parent string, parentImage atc.TypeImage) atc.Plan {
	imageCheck := atc.PlanID("5/image-check")
	return atc.Plan{ID: "5", Check: &atc.CheckPlan{
		Name: "repo", Type: typ, Source: atc.Source{"initial_version": "a"},
		Interval: atc.CheckEvery{Interval: time.Minute},
		Resource: "repo",
		TypeImage: atc.TypeImage{
			BaseType: "mock",
			CheckPlan: &atc.Plan{ID: imageCheck, Check: &atc.CheckPlan{
				Name: typ, Type: parent, Source: atc.Source{"mirror_self": true},
				TypeImage: parentImage, Interval: atc.CheckEvery{Interval: time.Minute},
				ResourceType: typ,
			}},
			GetPlan: &atc.Plan{ID: "5/image-get", Get: &atc.GetPlan{
				Name: typ, Type: parent, Source: atc.Source{"mirror_self": true},
				TypeImage: parentImage, VersionFrom: &imageCheck,
			}},
		},
	}}
}

func TestCheckOfCustomType(t *testing.T) {
	plan := customTypeCheck()
	fx := newCheckFixture(plan)
	cache := new(dbfakes.FakeResourceCache)
	fx.caches.FindOrCreateResourceCacheReturns(cache, nil)
	user := db.ForBuild(9)
	fx.build.ResourceCacheUserReturns(user)
	runs := checkSucceeds(t, fx, map[string]string{"version": "mock"})
	// Two runs: the type's check, then the resource's, with the image at the version found.
	if len(runs.plans) != 2 {
		t.Fatalf("%d runs started; want 2", len(runs.plans))
	}
	if p, ref := runs.plans[0], runs.refs[0]; p.ID != "5/image-check" || ref.Meta.Job != "check-my-type" {
		t.Errorf("first run: plan %s for %s; want the type's check", p.ID, ref.Meta.Job)
	}
	wantPlan := plan
	check := *plan.Check
	check.FromVersion = atc.Version{"v": "1"}
	get := *plan.Check.TypeImage.GetPlan
	pinned := *get.Get
	pinned.Version, pinned.VersionFrom = &atc.Version{"version": "mock"}, nil
	get.Get = &pinned
	check.TypeImage.GetPlan, check.TypeImage.CheckPlan = &get, nil
	wantPlan.Check = &check
	if diff := cmp.Diff(wantPlan, runs.plans[1]); diff != "" {
		t.Errorf("the resource's check (-want +got):\n%s", diff)
	}
	if ref := runs.refs[1]; ref.Meta.Job != "check-repo" || ref.Meta.Build != "9" {
		t.Errorf("second run for %+v; want job check-repo, build 9", ref.Meta)
	}
	// The image's resource cache, at the version found, and the resource's config
	// created by it, as Concourse's check step leaves them.
	if n := fx.caches.FindOrCreateResourceCacheCallCount(); n != 1 {
		t.Fatalf("FindOrCreateResourceCache called %d times; want once", n)
	}
	gotUser, typ, version, source, _, parent := fx.caches.FindOrCreateResourceCacheArgsForCall(0)
	if gotUser != user || typ != "mock" || !cmp.Equal(version, atc.Version{"version": "mock"}) || source["mirror_self"] != true || parent != nil {
		t.Errorf("resource cache for %v of %s %v %v, parent %v", gotUser, typ, version, source, parent)
	}
	if fx.build.SaveImageResourceVersionCallCount() != 1 || fx.build.SaveImageResourceVersionArgsForCall(0) != cache {
		t.Error("the image's version not saved as the build's")
	}
	if n := fx.configs.FindOrCreateResourceConfigCallCount(); n != 2 {
		t.Fatalf("FindOrCreateResourceConfig called %d times; want twice", n)
	}
	if typ, _, parent := fx.configs.FindOrCreateResourceConfigArgsForCall(0); typ != "mock" || parent != nil {
		t.Errorf("the type's config: %s created by %v; want mock, a base type", typ, parent)
	}
	if typ, source, parent := fx.configs.FindOrCreateResourceConfigArgsForCall(1); typ != "my-type" || source["initial_version"] != "a" || parent != cache {
		t.Errorf("the resource's config: %s %v created by %v; want my-type, by the image's cache", typ, source, parent)
	}
	if name, _ := fx.pipeline.SetResourceConfigScopeForResourceTypeArgsForCall(0); name != "my-type" {
		t.Errorf("type %s pointed at its scope; want my-type", name)
	}
	if n := fx.scope.SaveVersionsCallCount(); n != 2 {
		t.Errorf("SaveVersions called %d times; want twice (the type's, the resource's)", n)
	}
	// The resource's check initializes before it fetches the image (as Concourse's).
	ran := []string{"selected-worker:labnode", "start", "log:checking\n", "finish:ok"}
	want := cat([]string{"initialize-check", "initialize-check"}, ran, ran)
	if diff := cmp.Diff(want, eventTypes(savedEventsOf(fx.build))); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestCheckOfTypeOfCustomType(t *testing.T) {
	// "other" is of type "my-type", itself of type mock: other's image is fetched by a
	// get of type my-type, which needs my-type's image first.
	plan := checkOfCustomType("other", "my-type", customTypeCheck().Check.TypeImage)
	fx := newCheckFixture(plan)
	caches := []*dbfakes.FakeResourceCache{new(dbfakes.FakeResourceCache), new(dbfakes.FakeResourceCache), new(dbfakes.FakeResourceCache)}
	for i, c := range caches {
		fx.caches.FindOrCreateResourceCacheReturnsOnCall(i, c, nil)
	}
	runs := checkSucceeds(t, fx, map[string]string{"version": "mock"})
	// my-type's check and cache for other's check; again for the get of other's image
	// (as Concourse's get fetches its own image); other's cache; the resource's check.
	var checked []string
	for _, ref := range runs.refs {
		checked = append(checked, ref.Meta.Job)
	}
	if diff := cmp.Diff([]string{"check-my-type", "check-other", "check-my-type", "check-repo"}, checked); diff != "" {
		t.Errorf("runs (-want +got):\n%s", diff)
	}
	if n := fx.caches.FindOrCreateResourceCacheCallCount(); n != 3 {
		t.Fatalf("FindOrCreateResourceCache called %d times; want 3", n)
	}
	if _, typ, _, _, _, parent := fx.caches.FindOrCreateResourceCacheArgsForCall(2); typ != "my-type" || parent != caches[1] {
		t.Errorf("other's image: a cache of %s created by %v; want my-type's, by my-type's image's", typ, parent)
	}
	last := fx.configs.FindOrCreateResourceConfigCallCount() - 1
	if typ, _, parent := fx.configs.FindOrCreateResourceConfigArgsForCall(last); typ != "other" || parent != caches[2] {
		t.Errorf("the resource's config: %s created by %v; want other, by its image's cache", typ, parent)
	}
}

func TestCheckOfCustomTypeErrors(t *testing.T) {
	t.Run("the type's check fails", func(t *testing.T) {
		fx := newCheckFixture(customTypeCheck())
		runs := &fakeRuns{run: newRun(event.BuildStatusFailed, checkEvents(event.Finish{Origin: event.Origin{ID: "5"}, Time: 103})...)}
		runEngine(t, fx.build, fx.factory(runs), nil)
		evs := eventTypes(savedEventsOf(fx.build))
		if finished(fx.build) != db.BuildStatusErrored || len(runs.plans) != 1 || evs[len(evs)-1] != "error:image check failed" {
			t.Errorf("status %q, %d runs, events %q; want errored after the type's check, saying why", finished(fx.build), len(runs.plans), evs)
		}
		if fx.caches.FindOrCreateResourceCacheCallCount() != 0 {
			t.Error("a resource cache made for an image never checked")
		}
	})
	t.Run("an image the translator cannot run", func(t *testing.T) {
		// A type whose image is a registry image with no repository, at a version given:
		// the real backend refuses to compile the check, with translate's UnsupportedError.
		plan := customTypeCheck()
		check := *plan.Check
		check.Type = "nowhere"
		check.TypeImage = atc.TypeImage{BaseType: "registry-image", GetPlan: &atc.Plan{ID: "5/image-get", Get: &atc.GetPlan{
			Name: "nowhere", Type: "registry-image", Source: atc.Source{"tag": "1"},
			TypeImage: atc.TypeImage{BaseType: "registry-image"}, Version: &atc.Version{"digest": "sha256:abc"},
		}}}
		plan.Check = &check
		fx := newCheckFixture(plan)
		fx.caches.FindOrCreateResourceCacheReturns(new(dbfakes.FakeResourceCache), nil)
		runs, _ := newRuns(t)
		runEngine(t, fx.build, fx.factory(runs), nil)
		evs := eventTypes(savedEventsOf(fx.build))
		want := `error:run check: compiling build 9: step "repo" (plan 5): the image of resource type "nowhere" cannot be run here: its source has no repository`
		if finished(fx.build) != db.BuildStatusErrored || len(evs) == 0 || evs[len(evs)-1] != want {
			t.Errorf("status %q, events %q; want errored, ending %q", finished(fx.build), evs, want)
		}
		if _, _, parent := fx.configs.FindOrCreateResourceConfigArgsForCall(0); parent == nil {
			t.Error("the resource's config not created by its type's image's cache")
		}
	})
	t.Run("no resource cache factory", func(t *testing.T) {
		fx := newCheckFixture(customTypeCheck())
		f := fx.factory(&fakeRuns{run: newRun(event.BuildStatusSucceeded)})
		f.Checks.ResourceCacheFactory = nil
		runEngine(t, fx.build, f, nil)
		evs := eventTypes(savedEventsOf(fx.build))
		if finished(fx.build) != db.BuildStatusErrored || !strings.Contains(evs[len(evs)-1], "resource cache factory") {
			t.Errorf("status %q, events %q; want errored, saying why", finished(fx.build), evs)
		}
	})
}
