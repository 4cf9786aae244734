package concourse

import (
	"encoding/json"
	"reflect"
	"strings"
	"sync"
)

// Config is a pipeline: the document `fly set-pipeline` takes.
type Config struct {
	Groups        []GroupConfig     `json:"groups,omitempty"`
	VarSources    []VarSourceConfig `json:"var_sources,omitempty"`
	Resources     []ResourceConfig  `json:"resources,omitempty"`
	ResourceTypes []ResourceType    `json:"resource_types,omitempty"`
	Prototypes    []Prototype       `json:"prototypes,omitempty"`
	Jobs          []JobConfig       `json:"jobs,omitempty"`
	Display       *DisplayConfig    `json:"display,omitempty"`
	UserData      any               `json:"user_data,omitempty"`
}

// topLevelKeys are the keys Concourse keeps; any other top-level key is dropped.
var topLevelKeys = fieldsOf[Config]()

// GroupConfig is a tab of the pipeline view.
type GroupConfig struct {
	Name      string   `json:"name"`
	Jobs      []string `json:"jobs,omitempty"`
	Resources []string `json:"resources,omitempty"`
}

// VarSourceConfig is a per-pipeline credential manager.
type VarSourceConfig struct {
	Name   string `json:"name"`
	Type   string `json:"type"`
	Config any    `json:"config"`
}

// ResourceConfig is a resource of the pipeline.
type ResourceConfig struct {
	Name                 string      `json:"name"`
	OldName              string      `json:"old_name,omitempty"`
	Public               bool        `json:"public,omitempty"`
	WebhookToken         string      `json:"webhook_token,omitempty"`
	Type                 string      `json:"type"`
	Source               Source      `json:"source"`
	CheckEvery           *CheckEvery `json:"check_every,omitempty"`
	CheckTimeout         string      `json:"check_timeout,omitempty"`
	Tags                 Tags        `json:"tags,omitempty"`
	Version              Version     `json:"version,omitempty"`
	Icon                 string      `json:"icon,omitempty"`
	ExposeBuildCreatedBy bool        `json:"expose_build_created_by,omitempty"`
}

// ResourceType is a custom resource type of the pipeline.
type ResourceType struct {
	Name       string      `json:"name"`
	Type       string      `json:"type"`
	Source     Source      `json:"source"`
	Defaults   Source      `json:"defaults,omitempty"`
	Privileged bool        `json:"privileged,omitempty"`
	CheckEvery *CheckEvery `json:"check_every,omitempty"`
	Tags       Tags        `json:"tags,omitempty"`
	Params     Params      `json:"params,omitempty"`
}

// Prototype is an experimental prototype; it has the fields of a resource type.
type Prototype ResourceType

// DisplayConfig is how the pipeline looks in the web UI.
type DisplayConfig struct {
	BackgroundImage  string `json:"background_image,omitempty"`
	BackgroundFilter string `json:"background_filter,omitempty"`
}

// JobConfig is a job of the pipeline.
type JobConfig struct {
	Name                 string             `json:"name"`
	OldName              string             `json:"old_name,omitempty"`
	Public               bool               `json:"public,omitempty"`
	DisableManualTrigger bool               `json:"disable_manual_trigger,omitempty"`
	DisableReruns        bool               `json:"disable_reruns,omitempty"`
	Serial               bool               `json:"serial,omitempty"`
	Interruptible        bool               `json:"interruptible,omitempty"`
	SerialGroups         []string           `json:"serial_groups,omitempty"`
	RawMaxInFlight       int                `json:"max_in_flight,omitempty"`
	BuildLogsToRetain    int                `json:"build_logs_to_retain,omitempty"`
	BuildLogRetention    *BuildLogRetention `json:"build_log_retention,omitempty"`
	OnSuccess            *Step              `json:"on_success,omitempty"`
	OnFailure            *Step              `json:"on_failure,omitempty"`
	OnAbort              *Step              `json:"on_abort,omitempty"`
	OnError              *Step              `json:"on_error,omitempty"`
	Ensure               *Step              `json:"ensure,omitempty"`
	PlanSequence         []Step             `json:"plan"`
}

// BuildLogRetention is how many builds of a job keep their logs.
type BuildLogRetention struct {
	Builds                 int `json:"builds,omitempty"`
	MinimumSucceededBuilds int `json:"minimum_succeeded_builds,omitempty"`
	Days                   int `json:"days,omitempty"`
}

// LogRetention is the job's build log retention: build_log_retention, else the deprecated
// build_logs_to_retain as a number of builds; nil when it sets neither.
func (j JobConfig) LogRetention() *BuildLogRetention {
	switch {
	case j.BuildLogRetention != nil:
		r := *j.BuildLogRetention
		return &r
	case j.BuildLogsToRetain > 0:
		return &BuildLogRetention{Builds: j.BuildLogsToRetain}
	}
	return nil
}

// MaxInFlight is how many builds of the job may run at once; 0 means no limit.
func (j JobConfig) MaxInFlight() int {
	if j.Serial || len(j.SerialGroups) > 0 {
		return 1
	}
	return j.RawMaxInFlight
}

// UnmarshalJSON decodes the plan's steps one by one, and the hooks apart, so that an error
// names its step.
func (j *JobConfig) UnmarshalJSON(data []byte) error {
	type plain JobConfig
	var raw struct {
		plain
		OnSuccess    json.RawMessage   `json:"on_success,omitempty"`
		OnFailure    json.RawMessage   `json:"on_failure,omitempty"`
		OnAbort      json.RawMessage   `json:"on_abort,omitempty"`
		OnError      json.RawMessage   `json:"on_error,omitempty"`
		Ensure       json.RawMessage   `json:"ensure,omitempty"`
		PlanSequence []json.RawMessage `json:"plan"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	steps, err := decodeSteps(raw.PlanSequence, "plan")
	if err != nil {
		return err
	}
	*j = JobConfig(raw.plain)
	j.PlanSequence = steps
	hooks := []struct {
		key  string
		raw  json.RawMessage
		hook **Step
	}{
		{"on_success", raw.OnSuccess, &j.OnSuccess}, {"on_failure", raw.OnFailure, &j.OnFailure},
		{"on_abort", raw.OnAbort, &j.OnAbort}, {"on_error", raw.OnError, &j.OnError}, {"ensure", raw.Ensure, &j.Ensure},
	}
	for _, h := range hooks {
		if len(h.raw) == 0 || string(h.raw) == "null" {
			continue
		}
		var step Step
		if err := json.Unmarshal(h.raw, &step); err != nil {
			return atPath(unwrapJSONError(err), Key(h.key))
		}
		*h.hook = &step
	}
	return nil
}

// StepConfig wraps the job's plan in the job's hooks, the way Concourse does:
// ensure(on_error(on_abort(on_failure(on_success(do(plan)))))).
func (j JobConfig) StepConfig() StepConfig {
	var step StepConfig = &DoStep{Steps: j.PlanSequence}
	if j.OnSuccess != nil {
		step = &OnSuccessStep{Step: step, Hook: *j.OnSuccess}
	}
	if j.OnFailure != nil {
		step = &OnFailureStep{Step: step, Hook: *j.OnFailure}
	}
	if j.OnAbort != nil {
		step = &OnAbortStep{Step: step, Hook: *j.OnAbort}
	}
	if j.OnError != nil {
		step = &OnErrorStep{Step: step, Hook: *j.OnError}
	}
	if j.Ensure != nil {
		step = &EnsureStep{Step: step, Hook: *j.Ensure}
	}
	return step
}

var (
	resourceFields     = fieldsOf[ResourceConfig]()
	resourceTypeFields = fieldsOf[ResourceType]()
	jobFields          = fieldsOf[JobConfig]()
)

// fieldsOf returns jsonFieldNames of T, made at the first call (not at init).
func fieldsOf[T any]() func() map[string]bool {
	return sync.OnceValue(func() map[string]bool {
		var zero T
		return jsonFieldNames(zero)
	})
}

// jsonFieldNames lists the JSON keys of a struct's fields (embedded structs included).
func jsonFieldNames(v any) map[string]bool {
	names := map[string]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if tag == "-" {
				continue
			}
			if f.Anonymous && tag == "" {
				ft := f.Type
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if ft.Kind() == reflect.Struct {
					walk(ft)
				}
				continue
			}
			name, _, _ := strings.Cut(tag, ",")
			if name == "" {
				name = f.Name
			}
			names[name] = true
		}
	}
	walk(reflect.TypeOf(v))
	return names
}

// decodeKnown decodes a JSON object into out (a type without an UnmarshalJSON of its
// own) and returns its keys that are not in known.
func decodeKnown(data []byte, out any, known map[string]bool) (map[string]json.RawMessage, error) {
	if err := json.Unmarshal(data, out); err != nil {
		return nil, err
	}
	return unknownKeys(data, known)
}

// unknownKeys returns the keys of a JSON object that are not in known.
func unknownKeys(data []byte, known map[string]bool) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	var unknown map[string]json.RawMessage
	for k, v := range m {
		if !known[k] {
			if unknown == nil {
				unknown = map[string]json.RawMessage{}
			}
			unknown[k] = v
		}
	}
	return unknown, nil
}
