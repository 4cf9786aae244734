package buildevents

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/concourse-tekton/concourse-tekton/concourse/event"
)

// Event is one build event with its stable key. The same build always maps to the same
// keys, in every process: a key names the event's place in its step (the step's head, its
// n-th log line, its end), not the order in which a process happened to see it.
type Event struct {
	Key Key
	// Event is Concourse's event, nil where Pipeline stands at the key.
	Event event.Event
	// Pipeline is a set_pipeline step's pipeline, for the consumer to set, which stands
	// in the build's events in place of the frame its runner wrote as the last line of
	// its log (see PipelineToSet): no event of Concourse's.
	Pipeline *PipelineToSet
	// TaskRun is the step's TaskRun, when the event is a step's and it has one: its
	// container is Client.ContainerOf(TaskRun).
	TaskRun string
}

// Part is the part of a step an event belongs to. A step's events come in this order,
// but for its wait, which comes within its head.
type Part int

// The parts of a step. Build-level events (the status at start and end) have Step "".
const (
	// PartWait is waiting-for-worker: shown while the pod cannot be scheduled, after the
	// beginning of the head that Concourse shows before it looks for a worker (the
	// step's initialize); a process that attaches later does not see it.
	PartWait Part = iota
	// PartHead are initialize, selected-worker and start.
	PartHead
	// PartLog is one line of the step's log.
	PartLog
	// PartEnd is how the step ended: finish, or error (with a diagnostic log before it).
	PartEnd
)

var partNames = []string{"wait", "head", "log", "end"}

// Key is an event's stable identity: step (a PipelineTask of the build, "" for the build
// itself), part, and index within the part.
type Key struct {
	Step string
	Part Part
	N    int
	// Last marks a step's last event: a cursor past it knows the step has ended and is
	// not mapped again. It is part of the key a consumer stores.
	Last bool
}

// String renders a key as "<step>/<part>/<n>" ("build/..." for the build's own events).
func (k Key) String() string {
	step := k.Step
	if step == "" {
		step = "build"
	}
	return step + "/" + partNames[k.Part] + "/" + strconv.Itoa(k.N)
}

// Cursor is how far a consumer got in a build's events: every event whose key it covers
// was delivered. A consumer that stores it (or rebuilds it from the keys it saved) resumes
// from there in a new process, with no gap and no duplicate.
type Cursor struct {
	steps map[string]*stepCursor
}

type stepCursor struct {
	Wait int  `json:"w,omitempty"`
	Head int  `json:"h,omitempty"`
	Log  int  `json:"l,omitempty"`
	End  int  `json:"e,omitempty"`
	Done bool `json:"d,omitempty"`
}

func (c *stepCursor) count(p Part) *int {
	switch p {
	case PartWait:
		return &c.Wait
	case PartHead:
		return &c.Head
	case PartLog:
		return &c.Log
	}
	return &c.End
}

// Clone is a copy of c that advances on its own.
func (c Cursor) Clone() Cursor {
	out := Cursor{steps: make(map[string]*stepCursor, len(c.steps))}
	for k, v := range c.steps {
		s := *v
		out.steps[k] = &s
	}
	return out
}

// Covers tells whether the event with key k was delivered.
func (c *Cursor) Covers(k Key) bool {
	s := c.steps[k.Step]
	return s != nil && k.N < *s.count(k.Part)
}

// Advance records that the event with key k was delivered. Keys of a part are delivered
// in order; Advance after a gap would hide the events in between, so it refuses.
func (c *Cursor) Advance(k Key) error {
	if c.steps == nil {
		c.steps = map[string]*stepCursor{}
	}
	s := c.steps[k.Step]
	if s == nil {
		s = &stepCursor{}
		c.steps[k.Step] = s
	}
	n := s.count(k.Part)
	switch {
	case k.N < *n:
		return nil
	case k.N > *n:
		return fmt.Errorf("event %s delivered before %d earlier ones of its part", k, k.N-*n)
	}
	*n++
	s.Done = s.Done || k.Last
	return nil
}

// ended tells whether the step's last event was delivered.
func (c *Cursor) ended(step string) bool {
	s := c.steps[step]
	return s != nil && s.Done
}

// String encodes the cursor (JSON, keys sorted): store it, and Parse it back.
func (c *Cursor) String() string {
	steps := map[string]stepCursor{}
	for name, s := range c.steps {
		key := name
		if key == "" {
			key = "build"
		}
		steps[key] = *s
	}
	data, _ := json.Marshal(steps)
	return string(data)
}

// ParseCursor reads a cursor written by String. The empty string is the start.
func ParseCursor(s string) (Cursor, error) {
	var c Cursor
	if strings.TrimSpace(s) == "" {
		return c, nil
	}
	var steps map[string]stepCursor
	if err := json.Unmarshal([]byte(s), &steps); err != nil {
		return c, fmt.Errorf("invalid event cursor: %w", err)
	}
	c.steps = map[string]*stepCursor{}
	for name, s := range steps {
		s := s
		if name == "build" {
			name = ""
		}
		c.steps[name] = &s
	}
	return c, nil
}
