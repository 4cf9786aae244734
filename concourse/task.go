package concourse

import (
	"encoding/json"
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
	Run           TaskRunConfig      `json:"run,omitzero"`
	Inputs        []TaskInputConfig  `json:"inputs,omitempty"`
	Outputs       []TaskOutputConfig `json:"outputs,omitempty"`
	Caches        []TaskCacheConfig  `json:"caches,omitempty"`

	// UnknownFields are keys Concourse does not know. They are kept so that validation can
	// report them (a typo such as `ouputs` is an error, not silently ignored).
	UnknownFields map[string]json.RawMessage `json:"-"`
}

// ImageResource is the resource that fetches a task's image.
type ImageResource struct {
	Name    string  `json:"name"`
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

// IsZero tells whether the run says nothing its JSON would show, which leaves it out of
// its config's (omitzero): an empty args list is such, as it is in the config Concourse's
// web node saves and plans from.
func (r TaskRunConfig) IsZero() bool {
	return r.Path == "" && len(r.Args) == 0 && r.Dir == "" && r.User == ""
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
	unknown, err := decodeKnown(data, &p, taskConfigFields())
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
	return c.validate(func(keys []string) string { return fmt.Sprintf(" %+q", keys) })
}

// validateFile is Validate for a task file, whose unknown fields Concourse v8 reports as
// atc.NewTaskConfig does.
func (c TaskConfig) validateFile() []FieldError {
	return c.validate(func(keys []string) string { return fmt.Sprintf(": %v", keys) })
}

// validate is Validate, with unknownFields rendering the unknown fields (sorted) after
// "unknown fields", reported at the first of them.
func (c TaskConfig) validate(unknownFields func(keys []string) string) []FieldError {
	var errs []FieldError
	if len(c.UnknownFields) > 0 {
		keys := slices.Sorted(maps.Keys(c.UnknownFields))
		hint := ""
		if len(keys) == 1 {
			hint = suggest(keys[0], taskConfigFields())
		}
		errs = append(errs, fieldError(Path{Key(keys[0])}, "unknown fields%s%s", unknownFields(keys), hint))
	}
	if c.Platform == "" {
		errs = append(errs, fieldError(Path{Key("platform")}, "missing 'platform'"))
	}
	for i, in := range c.Inputs {
		if in.Name == "" {
			errs = append(errs, fieldError(Path{Key("inputs"), Index(i)}, "input has no name"))
		}
	}
	for i, out := range c.Outputs {
		if out.Name == "" {
			errs = append(errs, fieldError(Path{Key("outputs"), Index(i)}, "output has no name"))
		}
	}
	for i, cache := range c.Caches {
		if cache.TTL != "" {
			ttlPath := Path{Key("caches"), Index(i), Key("ttl")}
			if d, err := time.ParseDuration(cache.TTL); err != nil {
				errs = append(errs, fieldError(ttlPath, "invalid cache ttl '%s': %v", cache.TTL, err))
			} else if d < time.Second {
				errs = append(errs, fieldError(ttlPath, "cache ttl must be at least 1s, got '%s'", cache.TTL))
			}
		}
	}
	return errs
}

// namesImage tells whether the config names the task's image: an image_resource or a
// rootfs_uri.
func (c TaskConfig) namesImage() bool {
	return c.ImageResource != nil || c.RootfsURI != ""
}

// noImage is the warning of a task (what) that names no image, completed by how to give
// it one (fix): Concourse runs it in its worker's default root file system, a pod has none.
const noImage = "%s has no image: Concourse runs it in its worker's root file system; a build on Tekton runs it in the default task image (--default-task-image; the web node's --tekton-default-task-image), and refuses it without one: %s"

// warnings are what Concourse accepts in a task config but a build of this project does
// not run, each with the field it concerns (relative to the config).
func (c TaskConfig) warnings() []FieldError {
	var ws []FieldError
	for i, cache := range c.Caches {
		if cache.Path == "" {
			ws = append(ws, fieldError(Path{Key("caches"), Index(i)}, "cache has no path: Concourse caches the task's whole working directory then, which a build here refuses: give it a path"))
		}
	}
	return ws
}
