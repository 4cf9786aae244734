package tektonengine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/concourse/concourse/atc"
	"github.com/concourse/concourse/atc/db"
	atcevent "github.com/concourse/concourse/atc/event"

	"github.com/concourse-tekton/concourse-tekton/concourse/event"
)

// atcTypes are the ATC's Go types of the events, by type: those its steps save
// (atc/event/events.go). Not its parser's: that one reads "initialize", "start" and
// "finish" as the deprecated task events of version 1.0, which have other fields.
var atcTypes = func() map[atc.EventType]atc.Event {
	m := map[atc.EventType]atc.Event{}
	for _, e := range []atc.Event{
		atcevent.Status{}, atcevent.Log{}, atcevent.Error{},
		atcevent.Initialize{}, atcevent.Start{}, atcevent.Finish{},
		atcevent.InitializeTask{}, atcevent.StartTask{}, atcevent.FinishTask{},
		atcevent.InitializeGet{}, atcevent.StartGet{}, atcevent.FinishGet{},
		atcevent.InitializePut{}, atcevent.StartPut{}, atcevent.FinishPut{},
		atcevent.InitializeCheck{}, atcevent.SelectedWorker{}, atcevent.WaitingForWorker{},
		atcevent.StreamingVolume{}, atcevent.WaitingForStreamedVolume{},
		atcevent.ImageCheck{}, atcevent.ImageGet{},
		atcevent.SetPipelineChanged{}, atcevent.AcrossSubsteps{},
	} {
		m[e.EventType()] = e
	}
	return m
}()

// atcEvent is e as the ATC's own event type. Both are atc/event's JSON, so the event goes
// through it, strictly: an event the ATC has no type for, or with a field its type lacks,
// is an error here rather than an event that fly or the web UI would misread.
func atcEvent(e event.Event) (atc.Event, error) {
	typ := atc.EventType(e.EventType())
	zero, ok := atcTypes[typ]
	if !ok {
		return nil, fmt.Errorf("a %s event, which the ATC does not know", typ)
	}
	if !zero.Version().IsCompatibleWith(atc.EventVersion(e.Version())) {
		return nil, fmt.Errorf("a %s event of version %s, which the ATC does not read (it reads %s)", typ, e.Version(), zero.Version())
	}
	payload, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("encoding a %s event: %w", typ, err)
	}
	out := reflect.New(reflect.TypeOf(zero))
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out.Interface()); err != nil {
		return nil, fmt.Errorf("a %s event the ATC cannot read: %w", typ, err)
	}
	return out.Elem().Interface().(atc.Event), nil
}

// savedEvents counts the events a build has in the database, by their exact bytes. A web
// node that restarts follows a running build's run from its first event again: the events
// the build has are those it saw before, byte for byte, since the mapper makes the same
// events of the same objects (their times are the objects', not the clock's). Matching
// by content, not by position, does not depend on the order in which events of parallel
// steps were seen, nor on the events that a process attaching later does not see
// (waiting-for-worker, the log of a pod since deleted).
type savedEvents map[string]int

func savedKey(typ atc.EventType, version atc.EventVersion, payload []byte) string {
	return string(typ) + "\x00" + string(version) + "\x00" + string(payload)
}

// take tells whether e is one of the saved events, and counts it off.
func (s savedEvents) take(e atc.Event) (bool, error) {
	if len(s) == 0 {
		return false, nil
	}
	payload, err := json.Marshal(e)
	if err != nil {
		return false, err
	}
	k := savedKey(e.EventType(), e.Version(), payload)
	if s[k] == 0 {
		return false, nil
	}
	s[k]--
	return true, nil
}

// readSaved reads a build's saved events. The ATC's event source delivers those of a
// running build and then waits for more, with no sign that it got to the end: reading
// stops when none came for settle. The source reads them in batches of 2,000 from the
// database, so settle only needs to outlast a query; were it too short, the events not
// read yet would be saved a second time, never lost.
func readSaved(ctx context.Context, build db.Build, settle time.Duration) (savedEvents, error) {
	source, err := build.Events(0)
	if err != nil {
		return nil, fmt.Errorf("reading the build's events: %w", err)
	}
	type next struct {
		env atcevent.Envelope
		err error
	}
	nexts := make(chan next)
	done := make(chan struct{})
	defer func() {
		close(done)
		// Close stops the source; its Next then returns, and the reader ends.
		_ = source.Close()
	}()
	go func() {
		for {
			env, err := source.Next()
			select {
			case nexts <- next{env, err}:
			case <-done:
				return
			}
			if err != nil {
				return
			}
		}
	}()

	saved := savedEvents{}
	quiet := time.NewTimer(settle)
	defer quiet.Stop()
	for {
		select {
		case n := <-nexts:
			switch {
			case errors.Is(n.err, db.ErrEndOfBuildEventStream):
				return saved, nil
			case n.err != nil:
				return nil, fmt.Errorf("reading the build's events: %w", n.err)
			}
			if n.env.Data != nil {
				saved[savedKey(n.env.Event, n.env.Version, *n.env.Data)]++
			}
			quiet.Reset(settle)
		case <-quiet.C:
			return saved, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
