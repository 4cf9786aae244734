package buildevents

import (
	"maps"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/event"
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// VersionsFound are, by the check step's plan ID, every version each check step of the
// build found, from the frame its runner wrote when they were more than its results
// carry (runspec.CheckedVersions); none for a check that wrote none, or whose log was not
// read to its end. Merge them with the results with EveryVersion.
func VersionsFound(o Observation) map[concourse.PlanID]runspec.CheckedVersions {
	found := map[concourse.PlanID]runspec.CheckedVersions{}
	for _, so := range o.Steps {
		if so == nil || so.TaskRun == nil {
			continue
		}
		spec, ok := StepSpec(so.TaskRun)
		if !ok || spec.Mode != runspec.ModeCheck {
			continue
		}
		outcome, _ := runspec.ParseOutcome(Result(so.TaskRun, runspec.ResultOutcome))
		if f, ok := stepFrame(spec.Mode, so, outcome, event.Origin{}); ok {
			found[concourse.PlanID(spec.PlanID)] = f.versions
		}
	}
	return found
}

// EveryVersion is the versions of a check: those of its frame when it wrote one that
// agrees with its results (the results' newest versions are the frame's last), else the
// results'.
func EveryVersion(fromResults []concourse.Version, frame runspec.CheckedVersions) []concourse.Version {
	if len(frame) <= len(fromResults) || len(fromResults) == 0 {
		return fromResults
	}
	tail := frame[len(frame)-len(fromResults):]
	for i, v := range fromResults {
		if !maps.Equal(v, concourse.Version(tail[i])) {
			return fromResults
		}
	}
	all := make([]concourse.Version, len(frame))
	for i, v := range frame {
		all[i] = concourse.Version(v)
	}
	return all
}
