package resource

import (
	"fmt"
	"io"
)

// MetadataField is one name-value pair of metadata, as in and out print it.
type MetadataField struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Response is what in and out print: the version and its metadata.
type Response[V any] struct {
	Version  V               `json:"version"`
	Metadata []MetadataField `json:"metadata"`
}

// Scripts are a resource type's three scripts.
type Scripts struct {
	Check, In, Out func() error
}

// Main runs the script called name, prints its error on stderr (Concourse shows it in
// the build log) and returns the exit code.
func Main(name string, s Scripts, stderr io.Writer) int {
	var err error
	switch name {
	case "check":
		err = s.Check()
	case "in":
		err = s.In()
	case "out":
		err = s.Out()
	default:
		err = fmt.Errorf("unknown script %q: call this binary as check, in or out", name)
	}
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	return 0
}
