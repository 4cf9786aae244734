package translate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

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
// reads it: keys sorted, no empty status or creation timestamp. Each document is
// written in one scratch buffer and kept at its size, and the stream made at its size:
// a buffer grown to megabytes would be copied and cleared again and again.
func MarshalYAML(objects []any) ([]byte, error) {
	docs := make([][]byte, len(objects))
	size := 0
	var scratch []byte
	for i, obj := range objects {
		var err error
		if scratch, err = objectYAML(scratch, obj); err != nil {
			return nil, err
		}
		docs[i] = bytes.Clone(scratch)
		size += len(scratch) + len("---\n")
	}
	out := make([]byte, 0, size)
	for i, doc := range docs {
		if i > 0 {
			out = append(out, "---\n"...)
		}
		out = append(out, doc...)
	}
	return out, nil
}

// ObjectYAML renders one object.
func ObjectYAML(obj any) ([]byte, error) {
	return objectYAML(nil, obj)
}

// objectYAML renders one object, in scratch's memory where it has room.
func objectYAML(scratch []byte, obj any) ([]byte, error) {
	// yaml.v3's output of the object's JSON, keys sorted, strings YAML 1.1 readers
	// (kubectl) would take for booleans or numbers quoted; treeOf and the emitter write
	// it faster, and yaml.v3 the rare object they leave.
	tree, err := treeOf(obj)
	if err != nil {
		return nil, fmt.Errorf("encoding %T: %w", obj, err)
	}
	e := emitter{buf: scratch[:0]}
	switch err := e.document(tree); {
	case err == nil:
		return e.buf, nil
	case !errors.Is(err, errUnplaced):
		return nil, fmt.Errorf("encoding %T: %w", obj, err)
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encoding %T: %w", obj, err)
	}
	return yamlV3(obj, raw)
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
