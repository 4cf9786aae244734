package runspec

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// Mode is what the runner does: the first argument of its command line, or, where that
// is ModeStep, its spec's mode.
type Mode string

// The modes of the runner.
const (
	ModeTask        Mode = "task"
	ModeGet         Mode = "get"
	ModePut         Mode = "put"
	ModeCheck       Mode = "check"
	ModeLoadVar     Mode = "load_var"
	ModeSetPipeline Mode = "set_pipeline"
	// ModeRun is the run step of a prototype, which Concourse 7 has not implemented: it
	// says so and succeeds (exec.RunStep).
	ModeRun     Mode = "run"
	ModeResolve Mode = "resolve"
	// ModePublish pushes an artifact holding an image (a task's `image:`) to the build's
	// image registry, for the task's pod to pull it by digest.
	ModePublish Mode = "publish"
	// ModeAcross evaluates the values of an across step whose values are known only at
	// run time and writes their combinations for the step's slots (see the package doc).
	ModeAcross  Mode = "across"
	ModeJoin    Mode = "join"
	ModeVerdict Mode = "verdict"
	// ModeAbort, ModeInstall and the transfer modes take no spec (see the package doc).
	ModeAbort   Mode = "abort"
	ModeInstall Mode = "install"
	// ModeHold keeps a transfer pod alive; ModeReceive unpacks a tar stream into an
	// artifact of a one-off build, ModeSend writes one as a tar stream.
	ModeHold    Mode = "hold"
	ModeReceive Mode = "receive"
	ModeSend    Mode = "send"
	// ModeSession runs one check in a check session's container, its request on stdin
	// (see session.go).
	ModeSession Mode = "session"
	// ModeServe is a check session's main process: it holds the pod and serves its checks
	// over the pod network, each a ModeSession runner of its own; ModeSessionKey says how
	// to reach it (see sessionwire.go).
	ModeServe      Mode = "serve"
	ModeSessionKey Mode = "session-key"
	// ModeIntercept, given a step's spec, replaces the runner with a shell (or the
	// command after --) in the step's working directory, with its environment and user.
	ModeIntercept Mode = "intercept"
	// ModeStep runs the step its spec describes, in the spec's own mode: the step Task's
	// command line, whose spec says what it is.
	ModeStep Mode = "step"
)

// InterceptNotFound is the intercept mode's exit status when the command is not in the
// container (with --lookup, when it only says so), as a shell's.
const InterceptNotFound = 127

// AbortWritten is what the abort mode says (on stderr) once the build's abort marker is
// written. An exec whose stream was lost ends with no status, which client-go reports as
// success: without these words, the marker may not be there.
const AbortWritten = "build aborted"

// Spec is everything one runner invocation needs: which step, in which build, under which
// contexts, and the payload of its mode (exactly one of the mode fields is set, the one
// named by Mode).
type Spec struct {
	Mode Mode `json:"mode"`
	// PlanID is the step's Concourse plan ID: the key of its outcome and artifacts.
	PlanID string `json:"plan_id"`
	// Name is the step name (task, get, put, load_var, set_pipeline name).
	Name  string `json:"name,omitempty"`
	Build Build  `json:"build"`
	Paths Paths  `json:"paths,omitzero"`
	// HookStatus is BUILD_STATUS for resource steps inside a hook: succeeded (on_success),
	// failed (on_failure), errored (on_error), aborted (on_abort); empty elsewhere,
	// including under ensure.
	HookStatus string `json:"hook_status,omitempty"`
	// Context is the chain of contexts the step runs under, outermost first.
	Context []Layer `json:"context,omitempty"`
	// Scope is the chain of across substep scopes the step runs in, outermost first; the
	// root scope "" is implied.
	Scope []string `json:"scope,omitempty"`
	// AcrossVars are the values of the enclosing across steps' vars for this substep
	// (inner ones shadowing outer ones), given by the translator that unrolled them. They
	// are local vars, ((.:name)), not redacted: only a var set in the substep's own scope
	// (a load_var inside it) shadows them.
	AcrossVars map[string]any `json:"across_vars,omitempty"`
	// AcrossSlots are the slots of the enclosing across steps whose values are known only
	// at run time, outermost first: the step runs combination Index of the across step
	// Plan, which that step's resolver wrote to the state directory. Before anything else
	// the runner interpolates the spec with the combinations' values, as Concourse
	// interpolates a substep's plan; AcrossVars, which the translator gave, shadow them.
	AcrossSlots []AcrossSlot `json:"across_slots,omitempty"`
	// VarSources lists the names of the pipeline's var_sources: ((name:var)) is looked up
	// in the credentials directory under <name>/.
	VarSources []string `json:"var_sources,omitempty"`
	// SuppliedCredentials says the build's credentials were resolved before it started,
	// by whoever started it (an ATC: its credential manager and the pipeline's
	// var_sources), instead of being looked up in Kubernetes Secrets: each ((var)) the
	// step may read is the file CredentialKey(var) in Paths.Creds, its value as JSON, and
	// a var without a file is undefined. VarSources is then unused.
	SuppliedCredentials bool `json:"supplied_credentials,omitempty"`
	// Error, when set, is the error the step ends with as soon as it is entered, doing
	// nothing else: what Concourse's step would say where the cluster cannot run it (a
	// resource step of a base type no image is known for).
	Error string `json:"error,omitempty"`
	// MirroredImage, when set, is how the step's image came to be: the mock resource
	// fetching itself (mirror_self), which the step runs as the mock's own image. The
	// runner fetches it first, in the step's own container, to give the step the
	// environment the fetched image's metadata.json sets, as Concourse gives a container
	// its image's.
	MirroredImage *MirroredImage `json:"mirrored_image,omitempty"`
	// PulledImage, when set, is the fetch of the step's image that the node pulls (a
	// registry image), planned when the build was compiled: a resource step's custom
	// type's image, or a task's image_resource when its config was known then (a task's
	// whose config is a file is planned from the config its resolve step read). The
	// step's events show it as Concourse's check and get of that image, at these IDs.
	PulledImage *PulledImage `json:"pulled_image,omitempty"`
	// ImagePlans, when set, are the public plans of the fetch of a task's image_resource
	// that steps of the build do (an image of a type the node does not pull), on the first
	// of those steps: the check's and the get's, or the get's alone. Concourse announces
	// the fetch with an image-check and an image-get event on the task's origin, which
	// carry these plans, before the check's events and the get's; the web UI draws those
	// steps under the task from them.
	ImagePlans []json.RawMessage `json:"image_plans,omitempty"`

	Task        *Task        `json:"task,omitempty"`
	Get         *Get         `json:"get,omitempty"`
	Put         *Put         `json:"put,omitempty"`
	Check       *Check       `json:"check,omitempty"`
	LoadVar     *LoadVar     `json:"load_var,omitempty"`
	SetPipeline *SetPipeline `json:"set_pipeline,omitempty"`
	Run         *Run         `json:"run,omitempty"`
	Resolve     *Resolve     `json:"resolve,omitempty"`
	Publish     *Publish     `json:"publish,omitempty"`
	Across      *Across      `json:"across,omitempty"`
	Join        *Join        `json:"join,omitempty"`
	Verdict     *Verdict     `json:"verdict,omitempty"`
}

// AcrossSlot is one slot of an across step whose values are known only at run time.
type AcrossSlot struct {
	// Plan is the across step's plan ID.
	Plan string `json:"plan"`
	// Index is the combination the slot runs (0-based); the slot is entered only when
	// the across step has more combinations than Index.
	Index int `json:"index"`
}

// Build is the build's metadata: BUILD_* variables, the job's cache keys and the pipeline
// a credential lookup starts from. Zero values are left out of the environment, as in
// Concourse.
type Build struct {
	ID           int64          `json:"id,omitempty"`
	Name         string         `json:"name,omitempty"`
	TeamID       int64          `json:"team_id,omitempty"`
	TeamName     string         `json:"team,omitempty"`
	PipelineID   int64          `json:"pipeline_id,omitempty"`
	PipelineName string         `json:"pipeline,omitempty"`
	InstanceVars map[string]any `json:"instance_vars,omitempty"`
	JobID        int64          `json:"job_id,omitempty"`
	JobName      string         `json:"job,omitempty"`
	ExternalURL  string         `json:"external_url,omitempty"`
	// CreatedBy is BUILD_CREATED_BY, given to puts on resources that expose it.
	CreatedBy string `json:"created_by,omitempty"`
	// Check says the build is a check build. Its resource scripts see Concourse's: named
	// check, of no job. Name and JobName still key its volume and caches.
	Check bool `json:"check,omitempty"`
	// RevealSecrets says the steps' logs show the credentials they use, which are
	// otherwise redacted (the web node's --disable-redact-secrets).
	RevealSecrets bool `json:"reveal_secrets,omitempty"`
}

// Complete fills the fields of b that are empty from context, the JSON of a Build (the
// build's AnnotationBuildContext): a spec carries only the build's name, its build the
// rest. An empty context changes nothing.
func (b *Build) Complete(context string) error {
	if context == "" {
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(context))
	dec.UseNumber()
	var c Build
	if err := dec.Decode(&c); err != nil {
		return fmt.Errorf("decoding the build's context: %w", err)
	}
	b.ID = cmp.Or(b.ID, c.ID)
	b.Name = cmp.Or(b.Name, c.Name)
	b.TeamID = cmp.Or(b.TeamID, c.TeamID)
	b.TeamName = cmp.Or(b.TeamName, c.TeamName)
	b.PipelineID = cmp.Or(b.PipelineID, c.PipelineID)
	b.PipelineName = cmp.Or(b.PipelineName, c.PipelineName)
	if len(b.InstanceVars) == 0 {
		b.InstanceVars = c.InstanceVars
	}
	b.JobID = cmp.Or(b.JobID, c.JobID)
	b.JobName = cmp.Or(b.JobName, c.JobName)
	b.ExternalURL = cmp.Or(b.ExternalURL, c.ExternalURL)
	b.CreatedBy = cmp.Or(b.CreatedBy, c.CreatedBy)
	b.Check = b.Check || c.Check
	return nil
}

// Paths are where the step finds the build: empty fields take the defaults below.
type Paths struct {
	// Volume is where the build volume is mounted.
	Volume string `json:"volume,omitempty"`
	// Results is Tekton's results directory of the step.
	Results string `json:"results,omitempty"`
	// Work, when set, is the directory of the build volume (relative to Volume) that is
	// mounted at /tmp/build in this pod: artifacts made under /tmp/build are then
	// registered where they are, without a copy.
	Work string `json:"work,omitempty"`
	// Creds is where the Kubernetes Secrets readable by the build are mounted: one
	// directory per Secret, one file per key (a projected or secret volume); with
	// SuppliedCredentials, the build's own Secret, one file per var.
	Creds string `json:"creds,omitempty"`
	// TaskVars is where a task whose config is a file read at run time finds, with
	// SuppliedCredentials, its vars Secret (TaskVarsSecret): one file per var, as in Creds.
	TaskVars string `json:"task_vars,omitempty"`
}

// Default paths.
const (
	DefaultVolume   = "/concourse"
	DefaultResults  = "/tekton/results"
	DefaultCreds    = "/concourse-creds"
	DefaultTaskVars = "/concourse-task-vars"
)

// WithDefaults returns p with empty fields set to the defaults.
func (p Paths) WithDefaults() Paths {
	if p.Volume == "" {
		p.Volume = DefaultVolume
	}
	if p.Results == "" {
		p.Results = DefaultResults
	}
	if p.Creds == "" {
		p.Creds = DefaultCreds
	}
	if p.TaskVars == "" {
		p.TaskVars = DefaultTaskVars
	}
	return p
}

// LayerKind is the kind of a context layer.
type LayerKind string

// The kinds of context layers.
const (
	// LayerTimeout is a Concourse timeout (a timeout step, or a get, put or task's own
	// timeout, which is innermost and keyed by the step's plan ID).
	LayerTimeout LayerKind = "timeout"
	// LayerFailFast is membership of a child of an in_parallel or across with fail_fast.
	LayerFailFast LayerKind = "fail_fast"
	// LayerDetach is the step of an ensure, on_error or on_abort hook (Always for the
	// latter two).
	LayerDetach LayerKind = "detach"
)

// Layer is one context a step runs under.
type Layer struct {
	Kind LayerKind `json:"kind"`
	// ID is the plan ID of the timeout step (or of the leaf, for its own timeout), of the
	// fail-fast in_parallel or across, or of the hook step.
	ID string `json:"id"`
	// Duration is a timeout's duration in Go syntax. A bad one errors the step at run time.
	Duration string `json:"duration,omitempty"`
	// Always is set on the detach layer of an on_error or on_abort hook: Concourse runs
	// those with context.Background() whatever the state of the context, where ensure
	// detaches only when the context is already done.
	Always bool `json:"always,omitempty"`
	// Child is, for a fail-fast layer, the group's child the step belongs to, as a plan
	// tree: when the child ends failed or errored, the group fires.
	Child *Node `json:"child,omitempty"`
}

// Encode returns the compact, deterministic JSON of the spec.
func (s Spec) Encode() (string, error) {
	enc, err := s.AppendJSON(nil)
	return string(enc), err
}

// AppendJSON appends the spec's JSON, as Encode returns it, to dst: a caller that encodes
// many specs reuses one buffer. It is what a json.Encoder that leaves HTML unescaped
// writes for the spec, without its line break (see specjson.go).
func (s *Spec) AppendJSON(dst []byte) ([]byte, error) {
	w := jsonWriters.Get().(*jsonWriter)
	defer jsonWriters.Put(w)
	w.buf, w.err = dst, nil
	writeSpec()(w, reflect.ValueOf(s).Elem())
	out, err := w.buf, w.err
	w.buf = nil
	if err != nil {
		return dst, fmt.Errorf("encoding runner spec: %w", err)
	}
	return out, nil
}

// Args returns the runner's arguments for the spec (after the executable's path), as the
// step Task gives them: the spec says the mode.
func (s Spec) Args() ([]string, error) {
	enc, err := s.Encode()
	if err != nil {
		return nil, err
	}
	return []string{string(ModeStep), "--spec=" + enc}, nil
}

// Decode parses a spec. Numbers in generic values (sources, params, configs) are kept as
// json.Number so that they round-trip exactly. Unknown fields are errors, so that a runner
// older than its translator says so instead of ignoring what it was asked.
func Decode(data string) (Spec, error) {
	dec := json.NewDecoder(strings.NewReader(data))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	var s Spec
	if err := dec.Decode(&s); err != nil {
		return Spec{}, fmt.Errorf("decoding runner spec: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Spec{}, errors.New("decoding runner spec: trailing data after the JSON object")
	}
	if err := s.Validate(); err != nil {
		return Spec{}, err
	}
	return s, nil
}
