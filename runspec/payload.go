package runspec

import (
	"encoding/json"
	"strconv"
	"strings"
)

// Task is a task step. The config's ((vars)) are left for run time; the runner interpolates
// them strictly with the build's vars.
type Task struct {
	// Config is the task config (the JSON of a concourse.TaskConfig) of a `config:` task.
	Config any `json:"config,omitempty"`
	// File is the `file:` of a file task (artifact/path): the runner uses the config the
	// resolve step recorded for this plan ID, or reads the file itself when there is none.
	File string `json:"file,omitempty"`
	// Vars are the step's `vars:` for a file task, applied leniently before the build vars.
	Vars map[string]any `json:"vars,omitempty"`
	// Params are the step's params; they override the config's.
	Params        map[string]any    `json:"params,omitempty"`
	InputMapping  map[string]string `json:"input_mapping,omitempty"`
	OutputMapping map[string]string `json:"output_mapping,omitempty"`
	// Privileged is informational: the pod's security context is the translator's.
	Privileged bool `json:"privileged,omitempty"`
	// ImageArtifact says the task runs an artifact as its image (its step's `image:`), not
	// its config's image_resource: its events show no fetch of that.
	ImageArtifact bool `json:"image_artifact,omitempty"`
	// CacheRecords, when set, are the records of the job's task caches that the ATC's
	// database holds for this step (Concourse's task_caches rows): a cache whose record
	// is gone was cleared (fly clear-task-cache) and starts empty.
	CacheRecords *CacheRecords `json:"cache_records,omitempty"`
}

// CacheRecords are the records of a task step's caches: the ID of each cache path's
// record (none yet for a cache path that has none). The runner stamps each cache it
// saves with its record's ID, or with CacheUnrecorded when it has none yet, and writes
// the task's cache paths in its caches result, for the ATC to record.
type CacheRecords struct {
	IDs map[string]int `json:"ids,omitempty"`
}

// CacheUnrecorded stamps a cache saved before its record was made, followed by the ID of
// the build that saved it: the records a build is given are those of its start, so a cache
// one of its steps saves unrecorded is still its own for the steps after (an attempt after
// a failed one), and a later build's records have it.
const CacheUnrecorded = "unrecorded"

// CacheKept tells whether the cache stamped stamp (its record's ID, CacheUnrecorded and the
// build that saved it, or "" when it never was) still has its record, for a step of build:
// a stamped cache whose record is gone, or was made again, was cleared. A cache never
// stamped is kept, and so is one build saved unrecorded.
func (r *CacheRecords) CacheKept(path, stamp string, build int64) bool {
	id, recorded := r.IDs[path]
	if stamp == "" {
		return true
	}
	if by, ok := strings.CutPrefix(stamp, CacheUnrecorded); ok {
		return recorded || build != 0 && by == " "+strconv.FormatInt(build, 10)
	}
	return recorded && stamp == strconv.Itoa(id)
}

// Stamp is what the runner stamps the cache of path with once a step of build has saved it.
func (r *CacheRecords) Stamp(path string, build int64) string {
	if id, ok := r.IDs[path]; ok {
		return strconv.Itoa(id)
	}
	return CacheUnrecorded + " " + strconv.FormatInt(build, 10)
}

// Get is a get step (or the implicit get after a put, or an image get).
type Get struct {
	Type     string            `json:"type"`
	Resource string            `json:"resource,omitempty"`
	Source   map[string]any    `json:"source,omitempty"`
	Params   map[string]any    `json:"params,omitempty"`
	Version  map[string]string `json:"version,omitempty"`
	// VersionFrom is the plan ID of the check or put whose version this get fetches.
	VersionFrom string `json:"version_from,omitempty"`
	// Latest says the get was given no version: the runner first runs the resource's
	// check (no version in its request), in the same container, and fetches the last
	// version it prints, so that a job runs on its own as its scheduler would have run
	// it, with the versions found now.
	Latest bool `json:"latest,omitempty"`
}

// Put inputs modes (Put.Inputs).
const (
	InputsDetect = "detect"
	InputsAll    = "all"
	InputsList   = "list"
)

// Put is a put step.
type Put struct {
	Type     string         `json:"type"`
	Resource string         `json:"resource,omitempty"`
	Source   map[string]any `json:"source,omitempty"`
	Params   map[string]any `json:"params,omitempty"`
	// Inputs is detect (also when empty: the names concourse.DetectPutInputs gives from
	// Params, where the build has them), all, or list (then InputNames are the names).
	Inputs     string   `json:"inputs,omitempty"`
	InputNames []string `json:"input_names,omitempty"`
	// ExposeBuildCreatedBy sets BUILD_CREATED_BY from Build.CreatedBy.
	ExposeBuildCreatedBy bool `json:"expose_build_created_by,omitempty"`
}

// Check is a check step (image checks, and the check before a get).
type Check struct {
	Type        string            `json:"type"`
	Resource    string            `json:"resource,omitempty"`
	Source      map[string]any    `json:"source,omitempty"`
	FromVersion map[string]string `json:"from_version,omitempty"`
}

// LoadVar is a load_var step; the var is named after the step (Spec.Name).
type LoadVar struct {
	File   string `json:"file"`
	Format string `json:"format,omitempty"`
	Reveal bool   `json:"reveal,omitempty"`
}

// SetPipeline is a set_pipeline step; the pipeline is named after the step (Spec.Name,
// `self` for the current pipeline).
type SetPipeline struct {
	File         string         `json:"file"`
	Team         string         `json:"team,omitempty"`
	Vars         map[string]any `json:"vars,omitempty"`
	VarFiles     []string       `json:"var_files,omitempty"`
	InstanceVars map[string]any `json:"instance_vars,omitempty"`
}

// Run is a run step: a message to a prototype (its type).
type Run struct {
	Message string `json:"message"`
	Type    string `json:"type"`
}

// Publish is the payload of ModePublish.
type Publish struct {
	// TaskPlanID is the task that runs the image: a failure to publish it is that task's
	// error, as Concourse errors a task whose image it cannot fetch.
	TaskPlanID string `json:"task_plan_id"`
	// Artifact is the name of the artifact in the step's scope.
	Artifact string `json:"artifact"`
}

// Resolve reads a file task's config ahead of the task, so that the task's pod can take its
// image from the `image` result.
type Resolve struct {
	// TaskPlanID is the plan ID of the task step the config is for.
	TaskPlanID string `json:"task_plan_id"`
	// File is the task's `file:` (artifact/path).
	File string `json:"file,omitempty"`
	// Config is, instead of File, a `config:` task's config whose image the build's vars
	// decide (an image_resource with a ((var)) in its source).
	Config any `json:"config,omitempty"`
	// Vars are the task step's `vars:`.
	Vars map[string]any `json:"vars,omitempty"`
	// MockImage is the image of the mock resource type, which an image_resource of type
	// mock with `mirror_self: true` runs (Concourse's test resource, whose get gives its
	// own image); empty: such an image_resource is refused.
	MockImage string `json:"mock_image,omitempty"`
	// DefaultImage is the image of a config with no image_resource and no rootfs_uri
	// (translate.Options.DefaultTaskImage); empty: such a config is refused.
	DefaultImage string `json:"default_image,omitempty"`
	// ImageArtifact says the task runs an artifact as its image (its step's `image:`):
	// its config needs no image_resource or rootfs_uri, and the image result is empty.
	ImageArtifact bool `json:"image_artifact,omitempty"`
}

// Across evaluates the values of an across step when the build runs (Spec.PlanID is the
// across step's): each var's values, a list or a ((var)) that must hold one, interpolated
// strictly with the build's vars as Concourse does. It writes their cartesian product
// (the first var varying slowest) to the state directory (across/<plan>) and
// publishes its size as the result `count`; the step's slots (Spec.AcrossSlots) are
// entered when the count exceeds their index. More combinations than Slots errors.
type Across struct {
	Vars []AcrossVar `json:"vars"`
	// Slots is how many slots the translator made (its --across-slots).
	Slots int `json:"slots"`
}

// AcrossVar is one var of an across step: its name and its values as the plan has them.
type AcrossVar struct {
	Name   string `json:"name"`
	Values any    `json:"values"`
}

// Join computes a composite step's outcome from the outcomes of its leaves.
type Join struct {
	Tree Node `json:"tree"`
}

// Verdict computes the build's outcome from the root plan.
type Verdict struct {
	Tree Node `json:"tree"`
	// Fused runs the verdict in the pod of the build's last step, after it (StepVerdict):
	// a step that runs only once every other step of the build has ended, and whose own
	// success makes the build's. When the build succeeded, it records the verdict there
	// (ResultVerdict, ResultVerdictError) and the build's VerdictTask is skipped; when not,
	// it does nothing and exits 1, and the VerdictTask records it. The build's only step,
	// a get, put or check, runs it in its own container instead, after the step, given
	// by the runner's flag --verdict-spec (ParamVerdictSpec): the same results, no
	// fourth container.
	Fused bool `json:"fused,omitempty"`
}

// MirroredImage is an image fetched by the mock resource mirroring itself (mirror_self):
// a chain of fetches, each run with the environment the one before it gave (its image's
// metadata.json), the first in the mock's own image; or an artifact such a fetch made,
// whose metadata.json gives the environment.
type MirroredImage struct {
	Fetches []ImageFetch `json:"fetches,omitempty"`
	// Artifact is the name of the artifact a get fetched the image into.
	Artifact string `json:"artifact,omitempty"`
}

// PulledImage is the fetch of a step's image that the node pulls (a registry image): a
// resource step's custom type's image, or a task's image_resource. The compiler plans it
// as Concourse does when the step runs; the step's events show it as Concourse's check
// and get of the image, at these plan IDs.
type PulledImage struct {
	// Name is the image's name in the fetch: the type's, or "image" for a task's.
	Name string `json:"name"`
	// CheckID and GetID are the plan IDs of the check (none when the version is pinned)
	// and the get.
	CheckID string `json:"check_id,omitempty"`
	GetID   string `json:"get_id"`
	// Version is the image's pinned version, which the get shows when the node reports
	// no digest (none: the check's latest).
	Version map[string]string `json:"version,omitempty"`
	// CheckPlan and GetPlan are, for a task's image_resource, the public plans of the
	// check and the get, which Concourse's image-check and image-get events carry on the
	// task's origin; a custom type's image is announced by none.
	CheckPlan json.RawMessage `json:"check_plan,omitempty"`
	GetPlan   json.RawMessage `json:"get_plan,omitempty"`
}

// ImageFetch is a check (when Version is nil: its latest version) and a get of an image.
type ImageFetch struct {
	Source  map[string]any    `json:"source,omitempty"`
	Params  map[string]any    `json:"params,omitempty"`
	Version map[string]string `json:"version,omitempty"`
}
