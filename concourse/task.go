package concourse

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
)

// TaskConfig is a task's configuration, embedded in a step (`config:`) or read from a task
// file (`file:`).
type TaskConfig struct {
	Platform      string             `json:"platform,omitempty"`
	RootfsURI     string             `json:"rootfs_uri,omitempty"`
	ImageResource *ImageResource     `json:"image_resource,omitempty"`
	Limits        *ContainerLimits   `json:"container_limits,omitempty"`
	Params        TaskEnv            `json:"params,omitempty"`
	Run           TaskRunConfig      `json:"run"`
	Inputs        []TaskInputConfig  `json:"inputs,omitempty"`
	Outputs       []TaskOutputConfig `json:"outputs,omitempty"`
	Caches        []TaskCacheConfig  `json:"caches,omitempty"`

	// UnknownFields are keys Concourse does not know. They are kept so that validation can
	// report them (a typo such as `ouputs` is an error, not silently ignored).
	UnknownFields map[string]json.RawMessage `json:"-"`
}

// ImageResource is the resource that fetches a task's image.
type ImageResource struct {
	Name    string  `json:"name,omitempty"`
	Type    string  `json:"type"`
	Source  Source  `json:"source"`
	Version Version `json:"version,omitempty"`
	Params  Params  `json:"params,omitempty"`
	Tags    Tags    `json:"tags,omitempty"`
}

// TaskRunConfig is the process a task runs.
type TaskRunConfig struct {
	Path string   `json:"path"`
	Args []string `json:"args,omitempty"`
	Dir  string   `json:"dir,omitempty"`
	User string   `json:"user,omitempty"`
}

// UnmarshalJSON reads args that YAML typed as numbers or booleans as the strings they were
// written as (`- 50` is "50").
func (c *TaskRunConfig) UnmarshalJSON(data []byte) error {
	type plain TaskRunConfig
	var raw struct {
		plain
		Args []json.RawMessage `json:"args,omitempty"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	*c = TaskRunConfig(raw.plain)
	c.Args = nil
	for i, a := range raw.Args {
		s, err := coerceString(a)
		if err != nil {
			return atPath(err, Key("args"), Index(i))
		}
		if len(a) > 0 && (a[0] == '{' || a[0] == '[') {
			return atPath(errors.New("an arg must be a string, not a map or a list"), Key("args"), Index(i))
		}
		c.Args = append(c.Args, s)
	}
	return nil
}

// TaskInputConfig is an input a task expects.
type TaskInputConfig struct {
	Name     string `json:"name"`
	Path     string `json:"path,omitempty"`
	Optional bool   `json:"optional,omitempty"`
}

// TaskOutputConfig is an output a task produces.
type TaskOutputConfig struct {
	Name string `json:"name"`
	Path string `json:"path,omitempty"`
}

// TaskCacheConfig is a directory a task caches between builds of its job.
type TaskCacheConfig struct {
	Path string `json:"path"`
	TTL  string `json:"ttl,omitempty"`
}

// UnmarshalJSON decodes leniently: unknown keys are kept in UnknownFields for Validate.
func (c *TaskConfig) UnmarshalJSON(data []byte) error {
	type plain TaskConfig
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	unknown, err := unknownKeys(data, taskConfigFields())
	if err != nil {
		return err
	}
	p.UnknownFields = unknown
	*c = TaskConfig(p)
	return nil
}

var taskConfigFields = fieldsOf[TaskConfig]()

// Validate applies Concourse's task config rules to a step's config. It returns every
// problem, each with the field it concerns (relative to the config).
func (c TaskConfig) Validate() []FieldError {
	// Concourse v8 reports them all in one error (atc.StepValidator.VisitTask).
	return c.validate(func(keys []string) string { return fmt.Sprintf("unknown fields %+q", keys) })
}

// validateFile is Validate for a task file, whose unknown fields Concourse v8 reports as
// atc.NewTaskConfig does.
func (c TaskConfig) validateFile() []FieldError {
	return c.validate(func(keys []string) string { return fmt.Sprintf("unknown fields: %v", keys) })
}

// validate is Validate, with unknownFields saying what the unknown fields are (sorted),
// reported at the first of them.
func (c TaskConfig) validate(unknownFields func(keys []string) string) []FieldError {
	var errs []FieldError
	if len(c.UnknownFields) > 0 {
		keys := slices.Sorted(maps.Keys(c.UnknownFields))
		hint := ""
		if len(keys) == 1 {
			hint = suggest(keys[0], taskConfigFields())
		}
		errs = append(errs, FieldError{Field: []PathElem{Key(keys[0])}, Message: unknownFields(keys) + hint})
	}
	if c.Platform == "" {
		errs = append(errs, FieldError{Field: []PathElem{Key("platform")}, Message: "missing 'platform'"})
	}
	for i, in := range c.Inputs {
		if in.Name == "" {
			errs = append(errs, FieldError{Field: []PathElem{Key("inputs"), Index(i)}, Message: "input has no name"})
		}
	}
	for i, out := range c.Outputs {
		if out.Name == "" {
			errs = append(errs, FieldError{Field: []PathElem{Key("outputs"), Index(i)}, Message: "output has no name"})
		}
	}
	for i, cache := range c.Caches {
		if cache.Path == "" {
			errs = append(errs, FieldError{Field: []PathElem{Key("caches"), Index(i)}, Message: "cache has no path"})
		}
		if cache.TTL != "" {
			ttlPath := []PathElem{Key("caches"), Index(i), Key("ttl")}
			if d, err := time.ParseDuration(cache.TTL); err != nil {
				errs = append(errs, FieldError{Field: ttlPath, Message: fmt.Sprintf("invalid cache ttl '%s': %v", cache.TTL, err)})
			} else if d < time.Second {
				errs = append(errs, FieldError{Field: ttlPath, Message: fmt.Sprintf("cache ttl must be at least 1s, got '%s'", cache.TTL)})
			}
		}
	}
	return errs
}
