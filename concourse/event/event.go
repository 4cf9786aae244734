package event

import (
	"strings"

	"github.com/concourse-tekton/concourse-tekton/concourse"
)

// EventType names a kind of build event, the envelope's "event" field ("log",
// "finish-task", ...).
type EventType string

// EventVersion is the "<major>.<minor>" version of an event's payload. A minor bump only
// adds fields; a major bump changes the payload's shape.
type EventVersion string

// IsCompatibleWith reports whether a payload of version other can be read as version v:
// clients accept any version with the same major number, as Concourse's do.
func (v EventVersion) IsCompatibleWith(other EventVersion) bool {
	major, ok := v.major()
	if !ok {
		return false
	}
	otherMajor, ok := other.major()
	return ok && major == otherMajor
}

func (v EventVersion) major() (string, bool) {
	major, _, _ := strings.Cut(string(v), ".")
	return major, major != ""
}

// Event is the payload of one build event.
type Event interface {
	// EventType is the envelope's "event" field.
	EventType() EventType
	// Version is the version of the payload this Go type reads and writes.
	Version() EventVersion
}

// The event types of the current catalogue (atc/event/types.go).
const (
	EventTypeStatus                   EventType = "status"
	EventTypeLog                      EventType = "log"
	EventTypeError                    EventType = "error"
	EventTypeInitialize               EventType = "initialize"
	EventTypeStart                    EventType = "start"
	EventTypeFinish                   EventType = "finish"
	EventTypeInitializeTask           EventType = "initialize-task"
	EventTypeStartTask                EventType = "start-task"
	EventTypeFinishTask               EventType = "finish-task"
	EventTypeInitializeGet            EventType = "initialize-get"
	EventTypeStartGet                 EventType = "start-get"
	EventTypeFinishGet                EventType = "finish-get"
	EventTypeInitializePut            EventType = "initialize-put"
	EventTypeStartPut                 EventType = "start-put"
	EventTypeFinishPut                EventType = "finish-put"
	EventTypeInitializeCheck          EventType = "initialize-check"
	EventTypeSelectedWorker           EventType = "selected-worker"
	EventTypeWaitingForWorker         EventType = "waiting-for-worker"
	EventTypeStreamingVolume          EventType = "streaming-volume"
	EventTypeWaitingForStreamedVolume EventType = "waiting-for-streamed-volume"
	EventTypeImageCheck               EventType = "image-check"
	EventTypeImageGet                 EventType = "image-get"
	EventTypeSetPipelineChanged       EventType = "set-pipeline-changed"
	EventTypeAcrossSubsteps           EventType = "across-substeps"
)

// Origin is the plan node an event is about. The UI files each event under the step whose
// plan ID it carries.
type Origin struct {
	ID concourse.PlanID `json:"id,omitempty"`
	// Source is set on log events only.
	Source OriginSource `json:"source,omitempty"`
}

// OriginSource is the stream a log event's payload was written to.
type OriginSource string

// The streams of a step's process.
const (
	OriginSourceStdout OriginSource = "stdout"
	OriginSourceStderr OriginSource = "stderr"
)

// ExitStatus is the exit code of a task's process or a resource script.
type ExitStatus int

// BuildStatus is the state of a build (atc/build.go).
type BuildStatus string

// The statuses a build goes through: pending, then started, then one of the four final
// ones. A build that never started goes from pending straight to a final status.
const (
	BuildStatusPending   BuildStatus = "pending"
	BuildStatusStarted   BuildStatus = "started"
	BuildStatusSucceeded BuildStatus = "succeeded"
	BuildStatusFailed    BuildStatus = "failed"
	BuildStatusErrored   BuildStatus = "errored"
	BuildStatusAborted   BuildStatus = "aborted"
)

// IsRunning reports whether the build has not finished yet: it is pending or started.
func (s BuildStatus) IsRunning() bool {
	return s == BuildStatusPending || s == BuildStatusStarted
}
