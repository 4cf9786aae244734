package buildevents

import (
	"github.com/concourse-tekton/concourse-tekton/concourse/event"
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// The markers a step's runner writes in its log, which are no output of the step's
// (runspec's frame.go), read here and nowhere else, into typed values:
//
//   - the start mark, written when the step's process or script begins (startMark): not
//     shown;
//   - the frame written as the last line of the log of a step that succeeded, to hand the
//     backend what its results cannot carry (stepFrame): a set_pipeline step's pipeline,
//     which takes the place of its line in the build's events (Event.Pipeline), and a
//     check's versions when they are more than its results carry, which are a result of
//     the check's (VersionsFound), no event.

// startMark is the index of the line of log in which the runner announced the step's
// start (runspec.StartMark), or -1: the first such line, written before any of the
// step's own output, and only by a runner that announces it.
func startMark(announces bool, log []LogLine) int {
	if !announces {
		return -1
	}
	for i, l := range log {
		if runspec.IsStartMark(l.Text) {
			return i
		}
	}
	return -1
}

// frameLike tells whether a line of a step of mode looks like the frame the step's
// runner writes: whether it is its frame shows only once the step has ended.
func frameLike(mode runspec.Mode, line string) bool {
	switch mode {
	case runspec.ModeSetPipeline:
		return runspec.IsPipelineFrame(line)
	case runspec.ModeCheck:
		return runspec.IsVersionsFrame(line)
	}
	return false
}

// frame is what a step's runner handed over in its frame: one of the two.
type frame struct {
	pipeline *PipelineToSet
	versions runspec.CheckedVersions
}

// stepFrame reads the frame of a step that ended with outcome, whose log o.Log was read to
// its end (o.LogDone), and tells whether its last line is that frame. Only the runner
// writes after the step's process or script ended, and a step that succeeded wrote
// nothing after its frame: a frame-like line anywhere else (an error message quoting a
// file, a script's output) is text. A set_pipeline step's frame that cannot be read (a
// runner of another release) is a PipelineToSet that says why; a check's is only text.
func stepFrame(mode runspec.Mode, o *StepObservation, outcome runspec.Outcome, origin event.Origin) (frame, bool) {
	if outcome != runspec.Succeeded || !o.LogDone || len(o.Log) == 0 {
		return frame{}, false
	}
	l := o.Log[len(o.Log)-1]
	if !frameLike(mode, l.Text) {
		return frame{}, false
	}
	if mode == runspec.ModeCheck {
		v, err := runspec.ParseVersionsFrame(l.Text)
		return frame{versions: v}, err == nil
	}
	p, err := runspec.ParsePipelineFrame(l.Text)
	out := &PipelineToSet{Origin: event.Origin{ID: origin.ID}, Time: unix(l.Time), PipelineToSet: p}
	if err != nil {
		out.Error = err.Error()
	}
	return frame{pipeline: out}, true
}
