package tektonengine

import (
	"testing"

	"github.com/concourse/concourse/atc"
	"github.com/concourse/concourse/atc/db"
	"github.com/concourse/concourse/atc/db/dbfakes"
	"github.com/google/go-cmp/cmp"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/event"
)

// A put of a pipeline resource that succeeded saves the version it created, as
// Concourse's put step does (so that `passed:` and `trigger: true` jobs see it); a failed
// put, or a put of no pipeline resource, saves none; a get of a pipeline resource updates
// its version's metadata.
func TestPutsAndGetsUpdateResources(t *testing.T) {
	put := func(id, resource string) atc.Plan {
		return atc.Plan{ID: atc.PlanID(id), Put: &atc.PutPlan{Name: "out-" + id, Resource: resource, Type: "mock", Source: atc.Source{"initial_version": "x"}}}
	}
	plan := atc.Plan{ID: "1", Do: &atc.DoPlan{
		put("2", "repo"),
		put("3", ""),
		put("4", "repo"),
		{ID: "5", Get: &atc.GetPlan{Name: "repo", Resource: "repo", Type: "mock", Source: atc.Source{"initial_version": "x"}}},
	}}
	meta := concourse.Metadata{{Name: "by", Value: "put"}}
	run := newRun(event.BuildStatusFailed,
		event.FinishPut{Origin: event.Origin{ID: "2"}, Time: 101, CreatedVersion: map[string]string{"version": "v2"}, CreatedMetadata: meta},
		event.FinishPut{Origin: event.Origin{ID: "3"}, Time: 102, CreatedVersion: map[string]string{"version": "v3"}},
		event.FinishPut{Origin: event.Origin{ID: "4"}, Time: 103, ExitStatus: 1},
		event.FinishGet{Origin: event.Origin{ID: "5"}, Time: 104, FetchedVersion: map[string]string{"version": "v2"}, FetchedMetadata: meta},
	)
	build := jobBuild(plan)
	build.PipelineIDReturns(4)
	resource := new(dbfakes.FakeResource)
	pipeline := new(dbfakes.FakePipeline)
	pipeline.ResourceReturns(resource, true, nil)
	build.PipelineReturns(pipeline, true, nil)

	runEngine(t, build, &StepperFactory{Runs: &fakeRuns{run: run}}, nil)

	if got := build.SaveOutputCallCount(); got != 1 {
		t.Fatalf("SaveOutput called %d times, want once (for the put of repo that succeeded)", got)
	}
	typ, cache, source, version, metadata, name, res := build.SaveOutputArgsForCall(0)
	if typ != "mock" || cache != nil || name != "out-2" || res != "repo" {
		t.Errorf("SaveOutput(%q, %v, …, %q, %q), want (mock, nil, …, out-2, repo)", typ, cache, name, res)
	}
	if diff := cmp.Diff(atc.Source{"initial_version": "x"}, source); diff != "" {
		t.Errorf("source (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(atc.Version{"version": "v2"}, version); diff != "" {
		t.Errorf("version (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(db.ResourceConfigMetadataFields{{Name: "by", Value: "put"}}, metadata); diff != "" {
		t.Errorf("metadata (-want +got):\n%s", diff)
	}
	if got := resource.UpdateMetadataCallCount(); got != 1 {
		t.Fatalf("UpdateMetadata called %d times, want once (for the get of repo)", got)
	}
	if v, m := resource.UpdateMetadataArgsForCall(0); v["version"] != "v2" || len(m) != 1 {
		t.Errorf("UpdateMetadata(%v, %v), want version v2 with its metadata", v, m)
	}
	if name := pipeline.ResourceArgsForCall(0); name != "repo" {
		t.Errorf("looked up resource %q, want repo", name)
	}
}
