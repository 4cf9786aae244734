package event

import (
	"encoding/json"

	"github.com/concourse-tekton/concourse-tekton/concourse"
)

// Times are Unix seconds. Where a field has `omitempty` below, so has the ATC's: a zero
// time is left out of those payloads and written as 0 in the others.

// Status is a change of the build's status. The ATC saves one when the build starts and
// one when it finishes.
type Status struct {
	Status BuildStatus `json:"status"`
	Time   int64       `json:"time"`
}

// Log is a chunk of a step's output on one stream.
type Log struct {
	Time    int64  `json:"time"`
	Origin  Origin `json:"origin"`
	Payload string `json:"payload"`
}

// Error is a step that errored, timed out ("timeout exceeded") or was aborted
// ("interrupted"). No finish event follows it.
type Error struct {
	Message string `json:"message"`
	Origin  Origin `json:"origin"`
	Time    int64  `json:"time"`
}

// Initialize is a generic step (set_pipeline, load_var, across, run, check) being set up.
type Initialize struct {
	Origin Origin `json:"origin"`
	Time   int64  `json:"time,omitempty"`
}

// Start is a generic step starting to run.
type Start struct {
	Origin Origin `json:"origin"`
	Time   int64  `json:"time,omitempty"`
}

// Finish is a generic step that finished, successfully or not.
type Finish struct {
	Origin    Origin `json:"origin"`
	Time      int64  `json:"time"`
	Succeeded bool   `json:"succeeded"`
}

// InitializeTask is a task whose inputs are ready and whose image is being fetched.
type InitializeTask struct {
	Time       int64      `json:"time"`
	Origin     Origin     `json:"origin"`
	TaskConfig TaskConfig `json:"config"`
}

// StartTask is a task's process starting.
type StartTask struct {
	Time       int64      `json:"time"`
	Origin     Origin     `json:"origin"`
	TaskConfig TaskConfig `json:"config"`
}

// FinishTask is a task's process that exited.
type FinishTask struct {
	Time       int64      `json:"time"`
	ExitStatus ExitStatus `json:"exit_status"`
	Origin     Origin     `json:"origin"`
}

// InitializeGet is a get step being set up.
type InitializeGet struct {
	Origin Origin `json:"origin"`
	Time   int64  `json:"time,omitempty"`
}

// StartGet is a get step's `in` script starting.
type StartGet struct {
	Origin Origin `json:"origin"`
	Time   int64  `json:"time,omitempty"`
}

// FinishGet is a get step's `in` script that exited, with the version it fetched.
type FinishGet struct {
	Origin          Origin             `json:"origin"`
	Time            int64              `json:"time"`
	ExitStatus      ExitStatus         `json:"exit_status"`
	FetchedVersion  concourse.Version  `json:"version"`
	FetchedMetadata concourse.Metadata `json:"metadata,omitempty"`
}

// InitializePut is a put step being set up.
type InitializePut struct {
	Origin Origin `json:"origin"`
	Time   int64  `json:"time,omitempty"`
}

// StartPut is a put step's `out` script starting.
type StartPut struct {
	Origin Origin `json:"origin"`
	Time   int64  `json:"time,omitempty"`
}

// FinishPut is a put step's `out` script that exited, with the version it created.
type FinishPut struct {
	Origin          Origin             `json:"origin"`
	Time            int64              `json:"time"`
	ExitStatus      ExitStatus         `json:"exit_status"`
	CreatedVersion  concourse.Version  `json:"version"`
	CreatedMetadata concourse.Metadata `json:"metadata,omitempty"`
}

// InitializeCheck is a check step (an image check, for instance) being set up.
type InitializeCheck struct {
	Origin Origin `json:"origin"`
	Time   int64  `json:"time,omitempty"`
	Name   string `json:"name"`
}

// SelectedWorker is the worker a step's container was placed on.
type SelectedWorker struct {
	Time       int64  `json:"time"`
	Origin     Origin `json:"origin"`
	WorkerName string `json:"selected_worker"`
}

// WaitingForWorker is a step waiting because no worker can take its container.
type WaitingForWorker struct {
	Time   int64  `json:"time"`
	Origin Origin `json:"origin"`
}

// StreamingVolume is an input volume being copied from one worker to another.
type StreamingVolume struct {
	Time         int64  `json:"time"`
	Origin       Origin `json:"origin"`
	Volume       string `json:"volume"`
	SourceWorker string `json:"source_worker"`
	DestWorker   string `json:"dest_worker"`
}

// WaitingForStreamedVolume is a step waiting for another step to finish streaming a volume
// to its worker.
type WaitingForStreamedVolume struct {
	Time       int64  `json:"time"`
	Origin     Origin `json:"origin"`
	Volume     string `json:"volume"`
	DestWorker string `json:"dest_worker"`
}

// ImageCheck announces the check sub-plan of a task's image, so that the UI can render its
// events (whose origin is `<task id>/image-check`) under the task. Plan is a public plan
// (see Public); the origin is the task's.
type ImageCheck struct {
	Time   int64           `json:"time"`
	Origin Origin          `json:"origin"`
	Plan   json.RawMessage `json:"plan"`
}

// ImageGet announces the get sub-plan of a task's image; see ImageCheck.
type ImageGet struct {
	Time   int64           `json:"time"`
	Origin Origin          `json:"origin"`
	Plan   json.RawMessage `json:"plan"`
}

// SetPipelineChanged tells whether a set_pipeline step changed the pipeline.
type SetPipelineChanged struct {
	Origin  Origin `json:"origin"`
	Changed bool   `json:"changed"`
}

// AcrossSubsteps lists an across step's substeps once their values are known, each a public
// `{step, values}` (see PublicSubstep).
type AcrossSubsteps struct {
	Time     int64             `json:"time"`
	Origin   Origin            `json:"origin"`
	Substeps []json.RawMessage `json:"substeps"`
}

// EventType returns "status".
func (Status) EventType() EventType { return EventTypeStatus }

// Version returns 1.0.
func (Status) Version() EventVersion { return "1.0" }

// EventType returns "log".
func (Log) EventType() EventType { return EventTypeLog }

// Version returns 5.1.
func (Log) Version() EventVersion { return "5.1" }

// EventType returns "error".
func (Error) EventType() EventType { return EventTypeError }

// Version returns 4.1.
func (Error) Version() EventVersion { return "4.1" }

// EventType returns "initialize".
func (Initialize) EventType() EventType { return EventTypeInitialize }

// Version returns 1.0.
func (Initialize) Version() EventVersion { return "1.0" }

// EventType returns "start".
func (Start) EventType() EventType { return EventTypeStart }

// Version returns 1.0.
func (Start) Version() EventVersion { return "1.0" }

// EventType returns "finish".
func (Finish) EventType() EventType { return EventTypeFinish }

// Version returns 1.0.
func (Finish) Version() EventVersion { return "1.0" }

// EventType returns "initialize-task".
func (InitializeTask) EventType() EventType { return EventTypeInitializeTask }

// Version returns 4.0.
func (InitializeTask) Version() EventVersion { return "4.0" }

// EventType returns "start-task".
func (StartTask) EventType() EventType { return EventTypeStartTask }

// Version returns 5.0.
func (StartTask) Version() EventVersion { return "5.0" }

// EventType returns "finish-task".
func (FinishTask) EventType() EventType { return EventTypeFinishTask }

// Version returns 4.0.
func (FinishTask) Version() EventVersion { return "4.0" }

// EventType returns "initialize-get".
func (InitializeGet) EventType() EventType { return EventTypeInitializeGet }

// Version returns 2.0.
func (InitializeGet) Version() EventVersion { return "2.0" }

// EventType returns "start-get".
func (StartGet) EventType() EventType { return EventTypeStartGet }

// Version returns 1.0.
func (StartGet) Version() EventVersion { return "1.0" }

// EventType returns "finish-get".
func (FinishGet) EventType() EventType { return EventTypeFinishGet }

// Version returns 5.1.
func (FinishGet) Version() EventVersion { return "5.1" }

// EventType returns "initialize-put".
func (InitializePut) EventType() EventType { return EventTypeInitializePut }

// Version returns 2.0.
func (InitializePut) Version() EventVersion { return "2.0" }

// EventType returns "start-put".
func (StartPut) EventType() EventType { return EventTypeStartPut }

// Version returns 1.0.
func (StartPut) Version() EventVersion { return "1.0" }

// EventType returns "finish-put".
func (FinishPut) EventType() EventType { return EventTypeFinishPut }

// Version returns 5.1.
func (FinishPut) Version() EventVersion { return "5.1" }

// EventType returns "initialize-check".
func (InitializeCheck) EventType() EventType { return EventTypeInitializeCheck }

// Version returns 1.0.
func (InitializeCheck) Version() EventVersion { return "1.0" }

// EventType returns "selected-worker".
func (SelectedWorker) EventType() EventType { return EventTypeSelectedWorker }

// Version returns 1.0.
func (SelectedWorker) Version() EventVersion { return "1.0" }

// EventType returns "waiting-for-worker".
func (WaitingForWorker) EventType() EventType { return EventTypeWaitingForWorker }

// Version returns 1.0.
func (WaitingForWorker) Version() EventVersion { return "1.0" }

// EventType returns "streaming-volume".
func (StreamingVolume) EventType() EventType { return EventTypeStreamingVolume }

// Version returns 1.0.
func (StreamingVolume) Version() EventVersion { return "1.0" }

// EventType returns "waiting-for-streamed-volume".
func (WaitingForStreamedVolume) EventType() EventType { return EventTypeWaitingForStreamedVolume }

// Version returns 1.0.
func (WaitingForStreamedVolume) Version() EventVersion { return "1.0" }

// EventType returns "image-check".
func (ImageCheck) EventType() EventType { return EventTypeImageCheck }

// Version returns 1.1.
func (ImageCheck) Version() EventVersion { return "1.1" }

// EventType returns "image-get".
func (ImageGet) EventType() EventType { return EventTypeImageGet }

// Version returns 1.1.
func (ImageGet) Version() EventVersion { return "1.1" }

// EventType returns "set-pipeline-changed".
func (SetPipelineChanged) EventType() EventType { return EventTypeSetPipelineChanged }

// Version returns 1.0.
func (SetPipelineChanged) Version() EventVersion { return "1.0" }

// EventType returns "across-substeps".
func (AcrossSubsteps) EventType() EventType { return EventTypeAcrossSubsteps }

// Version returns 1.0.
func (AcrossSubsteps) Version() EventVersion { return "1.0" }
