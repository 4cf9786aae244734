package event

import "github.com/concourse-tekton/concourse-tekton/concourse"

// TaskConfig is the part of a task's config that initialize-task and start-task carry. It
// leaves out params, which may hold credentials, and everything the UI does not show.
type TaskConfig struct {
	Platform string `json:"platform"`
	// Image is the config's rootfs_uri.
	Image  string            `json:"image"`
	Run    TaskRunConfig     `json:"run"`
	Inputs []TaskInputConfig `json:"inputs"`
}

// TaskRunConfig is the process of a TaskConfig.
type TaskRunConfig struct {
	Path string   `json:"path"`
	Args []string `json:"args"`
	Dir  string   `json:"dir"`
}

// TaskInputConfig is an input of a TaskConfig.
type TaskInputConfig struct {
	Name string `json:"name"`
	Path string `json:"path"`
}

// NewTaskConfig keeps the fields of c that the events carry.
func NewTaskConfig(c concourse.TaskConfig) TaskConfig {
	var inputs []TaskInputConfig
	for _, in := range c.Inputs {
		inputs = append(inputs, TaskInputConfig{Name: in.Name, Path: in.Path})
	}
	var args []string
	if c.Run.Args != nil {
		args = append([]string{}, c.Run.Args...)
	}
	return TaskConfig{
		Platform: c.Platform,
		Image:    c.RootfsURI,
		Run:      TaskRunConfig{Path: c.Run.Path, Args: args, Dir: c.Run.Dir},
		Inputs:   inputs,
	}
}

// Redacted returns c with redact applied to the run path and every arg, which may hold
// interpolated credentials: the ATC saves events only after its redactor has seen them.
func (c TaskConfig) Redacted(redact func(string) string) TaskConfig {
	c.Run.Path = redact(c.Run.Path)
	if c.Run.Args != nil {
		args := make([]string, len(c.Run.Args))
		for i, a := range c.Run.Args {
			args[i] = redact(a)
		}
		c.Run.Args = args
	}
	return c
}
