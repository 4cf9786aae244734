package render

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/concourse-tekton/concourse-tekton/concourse/event"
)

// Options say how to render.
type Options struct {
	// Color writes ANSI colours and bold, as fly does on a terminal; false writes plain
	// text. (fly writes its bold escapes even when its output is not a terminal; plain text
	// here has none.)
	Color bool
	// Timestamps prefixes every line with the local time of its event, as `fly watch
	// --timestamps` does: "15:04:05  ", or ten spaces for error lines, which have no time.
	Timestamps bool
}

// Renderer writes events to a terminal the way fly does. Not safe for concurrent use.
type Renderer struct {
	w   io.Writer
	o   Options
	loc *time.Location // of the timestamps; fly uses the local zone

	// atLineStart says the last write ended a line, so the next one starts with a
	// timestamp.
	atLineStart bool
	// exit follows what fly's exit code depends on.
	exit Exit
	// status is the status that ended the build for fly; nothing is rendered after it.
	status event.BuildStatus
}

// New returns a Renderer that writes to w.
func New(w io.Writer, o Options) *Renderer {
	return &Renderer{w: w, o: o, loc: time.Local, atLineStart: true}
}

// sgr is an ANSI style: the escape that turns it on and the one that turns it off.
type sgr struct{ on, off string }

// fly's styles. The bold escapes are written literally in fly/eventstream/render.go; the
// colours are fly/ui/colors.go's, as github.com/fatih/color (v1.16 and later) writes them:
// it resets each attribute by its own code, so bold red ends with 0;22 (before v1.16: 0).
var (
	bold    = sgr{"\x1b[1m", "\x1b[0m"}
	green   = sgr{"\x1b[32m", "\x1b[0m"}      // ui.SucceededColor
	red     = sgr{"\x1b[31m", "\x1b[0m"}      // ui.FailedColor
	boldRed = sgr{"\x1b[31;1m", "\x1b[0;22m"} // ui.ErroredColor
	magenta = sgr{"\x1b[35m", "\x1b[0m"}      // ui.AbortedColor
)

// noTime is the time of an event that has none (an error, or a zero time), which fly
// stamps blankTime.
const noTime int64 = 0

// blankTime is as wide as a timestamp, "15:04:05  ".
var blankTime = strings.Repeat(" ", 10)

// statusStyles are the final statuses and their colours.
var statusStyles = map[event.BuildStatus]sgr{
	event.BuildStatusSucceeded: green,
	event.BuildStatusFailed:    red,
	event.BuildStatusErrored:   boldRed,
	event.BuildStatusAborted:   magenta,
}

// Render writes one event. It remembers the build's final status.
//
// Events are the values event.Parse returns (event.Log, not *event.Log). After a status
// other than started, Render writes nothing more, as fly stops reading there. A status fly
// does not know (pending, for instance) is written as "unknown status: <status>", without a
// newline, and ends the build with exit code 255.
func (r *Renderer) Render(e event.Event) error {
	if r.status != "" {
		return nil
	}
	switch e := e.(type) {
	case event.Log:
		return r.write(e.Time, e.Payload)
	case event.WaitingForWorker:
		return r.write(e.Time, r.paint(bold, "no suitable workers found, waiting for worker...")+"\n")
	case event.SelectedWorker:
		return r.write(e.Time, r.paint(bold, "selected worker:")+" "+e.WorkerName+"\n")
	case event.StreamingVolume:
		return r.write(e.Time, r.paint(bold, "streaming volume")+" "+e.Volume+" "+r.paint(bold, "from worker")+" "+e.SourceWorker+"\n")
	case event.WaitingForStreamedVolume:
		return r.write(e.Time, r.paint(bold, "waiting for volume")+" "+e.Volume+" "+r.paint(bold, "to be streamed by another step")+"\n")
	case event.InitializeCheck:
		return r.write(e.Time, r.paint(bold, "initializing check:")+" "+e.Name+"\n")
	case event.InitializeTask:
		return r.write(e.Time, r.paint(bold, "initializing")+"\n")
	case event.StartTask:
		argv := strings.Join(append([]string{e.TaskConfig.Run.Path}, e.TaskConfig.Run.Args...), " ")
		return r.write(e.Time, r.paint(bold, "running "+argv)+"\n")
	case event.FinishTask:
		r.exit.Observe(e)
	case event.Error:
		return r.write(noTime, r.paint(boldRed, e.Message)+"\n")
	case event.Status:
		return r.renderStatus(e)
	}
	return nil
}

func (r *Renderer) renderStatus(e event.Status) error {
	if e.Status == event.BuildStatusStarted {
		return nil
	}
	r.exit.Observe(e)
	r.status = e.Status
	style, ok := statusStyles[e.Status]
	if !ok {
		return r.write(e.Time, fmt.Sprintf("unknown status: %s", e.Status))
	}
	return r.write(e.Time, r.paint(style, string(e.Status))+"\n")
}

// Status is the final build status rendered so far ("" if none yet). It is the status
// after which the Renderer writes nothing more: one of the four final ones, or a status fly
// does not know.
func (r *Renderer) Status() event.BuildStatus {
	return r.status
}

// ExitCode is the code fly exits with after the events rendered so far (see Exit.Code).
func (r *Renderer) ExitCode() int {
	return r.exit.Code()
}

// Exit computes the code fly exits with from the events it reads: the exit status of the
// last finish-task when it is not 0 (even for a build that succeeded, as fly does),
// otherwise ExitCode of the final status. Events after the final status change nothing.
// The zero value is ready to use.
type Exit struct {
	taskExit int
	status   event.BuildStatus
}

// Observe takes the next event of the build.
func (x *Exit) Observe(e event.Event) {
	if x.status != "" {
		return
	}
	switch e := e.(type) {
	case event.FinishTask:
		x.taskExit = int(e.ExitStatus)
	case event.Status:
		if e.Status != event.BuildStatusStarted {
			x.status = e.Status
		}
	}
}

// Code is fly's exit code after the events observed so far.
func (x *Exit) Code() int {
	code := ExitCode(x.status)
	if code == unknownStatusCode || x.taskExit == 0 {
		return code
	}
	return x.taskExit
}

// unknownStatusCode is fly's exit code for a status it does not know.
const unknownStatusCode = 255

// ExitCode is fly's exit code for a final status: 0,1,2,3; and fly's code for no status.
// With no final status ("" or started: the stream ended before the build did) fly exits 0
// (or with the last task's exit status; see Renderer.ExitCode), and with a status it does
// not know, 255.
func ExitCode(s event.BuildStatus) int {
	switch s {
	case "", event.BuildStatusStarted, event.BuildStatusSucceeded:
		return 0
	case event.BuildStatusFailed:
		return 1
	case event.BuildStatusErrored:
		return 2
	case event.BuildStatusAborted:
		return 3
	}
	return unknownStatusCode
}

// paint wraps text in style when colours are on.
func (r *Renderer) paint(style sgr, text string) string {
	if !r.o.Color {
		return text
	}
	return style.on + text + style.off
}

// write writes s, the output of an event at Unix time t (noTime for none). With
// timestamps, as fly's TimestampedWriter: every line that s starts gets t's timestamp, and
// a line that an earlier write left open does not.
func (r *Renderer) write(t int64, s string) error {
	if r.o.Timestamps && s != "" {
		s = r.stamp(t, s)
	}
	if _, err := io.WriteString(r.w, s); err != nil {
		return fmt.Errorf("writing build output: %w", err)
	}
	return nil
}

// stamp returns s with timestamps at the start of its lines, and notes whether it ends one.
func (r *Renderer) stamp(t int64, s string) string {
	prefix := blankTime
	if t != noTime {
		prefix = time.Unix(t, 0).In(r.loc).Format("15:04:05") + "  "
	}
	var b strings.Builder
	if r.atLineStart {
		b.WriteString(prefix)
	}
	for rest := s; rest != ""; {
		line, more, ok := strings.Cut(rest, "\n")
		b.WriteString(line)
		if !ok {
			break
		}
		b.WriteByte('\n')
		if more != "" {
			b.WriteString(prefix)
		}
		rest = more
	}
	r.atLineStart = strings.HasSuffix(s, "\n")
	return b.String()
}
