package buildevents

import (
	"github.com/concourse-tekton/concourse-tekton/concourse/event"
	"github.com/concourse-tekton/concourse-tekton/runner/redact"
)

// Redact hides the build's credentials in an event's text, as Concourse redacts every
// credential of a build in every step's events.
func Redact(s *redact.Secrets, e event.Event) event.Event {
	switch ev := e.(type) {
	case event.Log:
		ev.Payload = s.String(ev.Payload)
		return ev
	case event.Error:
		ev.Message = s.String(ev.Message)
		return ev
	}
	return e
}
