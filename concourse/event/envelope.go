package event

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Envelope is how an event travels: in the data of an SSE message of
// /api/v1/builds/:id/events, and in the ATC's database.
type Envelope struct {
	Data    *json.RawMessage `json:"data"`
	Event   EventType        `json:"event"`
	Version EventVersion     `json:"version"`
	// EventID is the event's number in its build, from 0, as a string; it is also the SSE
	// message's id, which a client sends back as Last-Event-ID to resume.
	EventID string `json:"event_id"`
}

// NewEnvelope wraps e as the build's id-th event.
func NewEnvelope(e Event, id int) (Envelope, error) {
	if e == nil {
		return Envelope{}, errNoEvent
	}
	payload, err := json.Marshal(e)
	if err != nil {
		return Envelope{}, fmt.Errorf("encoding %s event: %w", e.EventType(), err)
	}
	data := json.RawMessage(payload)
	return Envelope{
		Data:    &data,
		Event:   e.EventType(),
		Version: e.Version(),
		EventID: strconv.Itoa(id),
	}, nil
}

// Marshal encodes e as the build's id-th event, in its envelope.
func Marshal(e Event, id int) ([]byte, error) {
	env, err := NewEnvelope(e, id)
	if err != nil {
		return nil, err
	}
	return json.Marshal(env)
}

// Parse decodes the event in env. The Go type is chosen by the event type and by the
// envelope's version: any version with the same major number as one this package knows is
// read with that version's type, so payloads with fields added by a newer minor version
// still parse. It returns an *UnknownEventTypeError or an *UnknownEventVersionError for
// events it cannot read.
func Parse(env Envelope) (Event, error) {
	versions, ok := registry()[env.Event]
	if !ok {
		return nil, &UnknownEventTypeError{Type: env.Event}
	}
	for _, known := range versions {
		if !known.Version().IsCompatibleWith(env.Version) {
			continue
		}
		if env.Data == nil {
			return nil, fmt.Errorf("%s event version %s has no data", env.Event, env.Version)
		}
		e, err := known.decode(*env.Data)
		if err != nil {
			return nil, fmt.Errorf("decoding %s event version %s: %w", env.Event, env.Version, err)
		}
		return e, nil
	}
	known := make([]EventVersion, len(versions))
	for i, v := range versions {
		known[i] = v.Version()
	}
	return nil, &UnknownEventVersionError{Type: env.Event, Version: env.Version, KnownVersions: known}
}

// Unmarshal decodes an envelope and the event in it.
func Unmarshal(data []byte) (Event, Envelope, error) {
	var env Envelope
	if err := json.Unmarshal(data, &env); err != nil {
		return nil, Envelope{}, fmt.Errorf("decoding event envelope: %w", err)
	}
	e, err := Parse(env)
	return e, env, err
}

// UnknownEventTypeError is an event of a type this package does not know.
type UnknownEventTypeError struct {
	Type EventType
}

func (e *UnknownEventTypeError) Error() string {
	return fmt.Sprintf("unknown event type %q", e.Type)
}

// UnknownEventVersionError is an event whose version has a major number that none of the
// versions this package knows for its type has. It usually means the ATC is newer than this
// client.
type UnknownEventVersionError struct {
	Type          EventType
	Version       EventVersion
	KnownVersions []EventVersion
}

func (e *UnknownEventVersionError) Error() string {
	known := make([]string, len(e.KnownVersions))
	for i, v := range e.KnownVersions {
		known[i] = string(v)
	}
	return fmt.Sprintf("unsupported version %s of event %q (supported: %s)", e.Version, e.Type, strings.Join(known, ", "))
}

// decoder reads one version of one event type.
type decoder interface {
	Event
	decode(data []byte) (Event, error)
}

// typed decodes payloads into a fresh T.
type typed[T Event] struct{ zero T }

func (d typed[T]) EventType() EventType  { return d.zero.EventType() }
func (d typed[T]) Version() EventVersion { return d.zero.Version() }

func (typed[T]) decode(data []byte) (Event, error) {
	var e T
	if err := json.Unmarshal(data, &e); err != nil {
		return nil, err
	}
	return e, nil
}

// registry lists, per event type, the versions Parse reads, newest first. It is made when
// first read, not when the package is initialised: most commands read no event.
var registry = sync.OnceValue(func() map[EventType][]decoder {
	all := []decoder{
		typed[Status]{},
		typed[Log]{},
		typed[Error]{},
		typed[Initialize]{},
		typed[Start]{},
		typed[Finish]{},
		typed[InitializeTask]{},
		typed[StartTask]{},
		typed[FinishTask]{},
		typed[InitializeGet]{},
		typed[StartGet]{},
		typed[FinishGet]{},
		typed[InitializePut]{},
		typed[StartPut]{},
		typed[FinishPut]{},
		typed[InitializeCheck]{},
		typed[SelectedWorker]{},
		typed[WaitingForWorker]{},
		typed[StreamingVolume]{},
		typed[WaitingForStreamedVolume]{},
		typed[ImageCheck]{},
		typed[ImageGet]{},
		typed[SetPipelineChanged]{},
		typed[AcrossSubsteps]{},
	}
	m := map[EventType][]decoder{}
	for _, d := range all {
		m[d.EventType()] = append(m[d.EventType()], d)
	}
	for _, ds := range m {
		slices.SortFunc(ds, func(a, b decoder) int { return strings.Compare(string(b.Version()), string(a.Version())) })
	}
	return m
})

// errNoEvent is a nil event, which has no type to put in an envelope.
var errNoEvent = errors.New("cannot wrap a nil event")
