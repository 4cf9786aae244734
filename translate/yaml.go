package translate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"go.yaml.in/yaml/v3"
)

// Objects returns the build's objects in the order to apply them: Tasks, the Pipeline
// (not for a one-off build, whose PipelineRun carries its spec), then the PipelineRun.
func (r *Result) Objects() []any {
	out := make([]any, 0, len(r.Tasks)+2)
	for _, t := range r.Tasks {
		out = append(out, t)
	}
	if r.PipelineRun.Spec.PipelineRef != nil {
		out = append(out, r.Pipeline)
	}
	return append(out, r.PipelineRun)
}

// MarshalYAML renders objects as one multi-document YAML stream, the way kubectl apply
// reads it: keys sorted, no empty status or creation timestamp.
func MarshalYAML(objects []any) ([]byte, error) {
	var out []byte
	for i, obj := range objects {
		if i > 0 {
			out = append(out, "---\n"...)
		}
		var err error
		if out, err = objectYAML(out, obj); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ObjectYAML renders one object.
func ObjectYAML(obj any) ([]byte, error) {
	return objectYAML(nil, obj)
}

// AppendYAML appends one object's document to dst, as ObjectYAML renders it.
func AppendYAML(dst []byte, obj any) ([]byte, error) {
	return objectYAML(dst, obj)
}

// objectYAML appends one object's document to dst. A step Task of the process's
// (stepTasks) is rendered once: every pipeline the process converts writes the same few.
func objectYAML(dst []byte, obj any) ([]byte, error) {
	t, shared := obj.(*v1.Task)
	if shared {
		var doc []byte
		if doc, shared = stepTaskDocs.get(t); doc != nil {
			return append(dst, doc...), nil
		}
	}
	start := len(dst)
	dst, err := renderObject(dst, obj)
	if err == nil && shared {
		stepTaskDocs.put(t, bytes.Clone(dst[start:]))
	}
	return dst, err
}

// renderObject appends one object's document to dst.
func renderObject(dst []byte, obj any) ([]byte, error) {
	// yaml.v3's output of the object's JSON, keys sorted, strings YAML 1.1 readers
	// (kubectl) would take for booleans or numbers quoted; writeObject writes it
	// faster, and yaml.v3 the rare object it leaves.
	e := emitter{buf: dst, start: len(dst)}
	switch err := writeObject(&e, obj); {
	case err == nil:
		return e.buf, nil
	case !errors.Is(err, errUnplaced):
		return nil, fmt.Errorf("encoding %T: %w", obj, err)
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encoding %T: %w", obj, err)
	}
	doc, err := yamlV3(obj, raw)
	if err != nil {
		return nil, err
	}
	return append(dst, doc...), nil
}

// yamlV3 encodes an object's JSON with yaml.v3.
func yamlV3(obj any, raw []byte) ([]byte, error) {
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	dropEmpty(m)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(m); err != nil {
		return nil, fmt.Errorf("encoding %T: %w", obj, err)
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// dropEmpty removes what Go's zero values add and nobody wrote: empty `status` maps (of
// the object and of embedded claim templates) and null creation timestamps.
func dropEmpty(v any) {
	switch x := v.(type) {
	case map[string]any:
		if st, ok := x["status"].(map[string]any); ok && len(st) == 0 {
			delete(x, "status")
		}
		if ts, ok := x["creationTimestamp"]; ok && ts == nil {
			delete(x, "creationTimestamp")
		}
		for _, e := range x {
			dropEmpty(e)
		}
	case []any:
		for _, e := range x {
			dropEmpty(e)
		}
	}
}

// stepTaskDocs are the documents of the step Tasks in stepTasks, which nothing modifies:
// a Task is there from when it is made (stepTaskOfKey), its document nil until rendered.
var stepTaskDocs = &processMemo[*v1.Task, []byte]{max: 4096}
