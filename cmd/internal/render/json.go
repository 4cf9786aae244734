package render

import (
	"fmt"
	"io"

	"github.com/concourse-tekton/concourse-tekton/concourse/event"
)

// JSONWriter writes events as the ATC's envelopes, one per line, numbering them from first.
//
// A line is the data of one SSE message of /api/v1/builds/:id/events, as the ATC writes it:
// `{"data":{...},"event":"log","version":"5.1","event_id":"7"}` (event.Marshal).
type JSONWriter struct {
	w    io.Writer
	next int
}

// NewJSONWriter returns a JSONWriter whose first event is number first: 0 for a whole
// build, or one past the Last-Event-ID of a resumed stream.
func NewJSONWriter(w io.Writer, first int) *JSONWriter {
	return &JSONWriter{w: w, next: first}
}

// Write writes e as the next event. An event that cannot be written keeps its number for
// the next one.
func (j *JSONWriter) Write(e event.Event) error {
	line, err := event.Marshal(e, j.next)
	if err != nil {
		return err
	}
	if _, err := j.w.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("writing event %d: %w", j.next, err)
	}
	j.next++
	return nil
}
