package tektonrun

import (
	"maps"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/event"
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// versionsFound are every version a check step found, from the frame its runner writes
// as the last line of its log when they are more than its results carry
// (runspec.CheckedVersions). It is an Event's Event for Wait alone: Events and Follow
// never deliver it, and it is no Concourse event.
type versionsFound struct {
	Origin   event.Origin
	Versions runspec.CheckedVersions
}

var _ event.Event = versionsFound{}

// EventType implements event.Event.
func (versionsFound) EventType() event.EventType { return "concourse-tekton:versions-found" }

// Version implements event.Event.
func (versionsFound) Version() event.EventVersion { return "1.0" }

// checkVersionsFrame reads a check step's frame as the versions the step found; one that
// cannot be read is only text.
func checkVersionsFrame(l LogLine, origin event.Origin) (event.Event, bool) {
	v, err := runspec.ParseVersionsFrame(l.Text)
	if err != nil {
		return nil, false
	}
	return versionsFound{Origin: event.Origin{ID: origin.ID}, Versions: v}, true
}

// withoutInternal wraps emit so that the events no caller of Events or Follow is given
// (versionsFound) are not.
func withoutInternal(emit func(Event) error) func(Event) error {
	return func(e Event) error {
		if _, ok := e.Event.(versionsFound); ok {
			return nil
		}
		return emit(e)
	}
}

// everyVersion is the versions of a check: those of its frame when it wrote one that
// agrees with its results (the results' newest versions are the frame's last), else the
// results'.
func everyVersion(fromResults []concourse.Version, frame runspec.CheckedVersions) []concourse.Version {
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
