package buildevents

import (
	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/event"
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// A check run in a check session's container (runspec/session.go) has no TaskRun to map:
// its backend sees it start, reads its log from the exec's stderr and its end from the
// runner's result. These are its events, the same as a check step's TaskRun maps to
// (Map), under the same keys: step is the check's name in the build.

// SessionHead is the head of a check that started in a session on node at, whose
// custom type's image, if any, the node pulled at digest ("": not known).
func SessionHead(step string, spec runspec.Spec, at int64, node, digest string) []Event {
	origin := event.Origin{ID: concourse.PlanID(spec.PlanID)}
	head := headEvents(spec, origin, at, node, concourse.TaskConfig{})
	evs := append(append(head[:1:1], typeImageFetch(spec.PulledImage, at, node, imageFetchOf{digest: digest})...), head[1:]...)
	out := make([]Event, len(evs))
	for i, e := range evs {
		out[i] = Event{Key: Key{Step: step, Part: PartHead, N: i}, Event: e}
	}
	return out
}

// SessionLog is the n-th line of a check's log (its newline included).
func SessionLog(step string, spec runspec.Spec, n int, line string, at int64) Event {
	origin := event.Origin{ID: concourse.PlanID(spec.PlanID), Source: event.OriginSourceStderr}
	return Event{Key: Key{Step: step, Part: PartLog, N: n}, Event: event.Log{Time: at, Origin: origin, Payload: line}}
}

// SessionEnd is how a check ended, as its runner said: its finish, or the error it ended
// with instead.
func SessionEnd(step string, spec runspec.Spec, r runspec.SessionResult, at int64) Event {
	origin := event.Origin{ID: concourse.PlanID(spec.PlanID)}
	var e event.Event = event.Finish{Origin: origin, Time: at, Succeeded: r.Outcome == runspec.Succeeded}
	switch {
	case r.Error != "":
		e = event.Error{Origin: origin, Time: at, Message: r.Error}
	case r.Outcome == runspec.Errored:
		e = event.Error{Origin: origin, Time: at, Message: "errored"}
	case r.Outcome == runspec.Aborted:
		e = event.Error{Origin: origin, Time: at, Message: "interrupted"}
	}
	return Event{Key: Key{Step: step, Part: PartEnd, Last: true}, Event: e}
}
