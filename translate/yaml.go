package translate

import (
	"bytes"
	"encoding/json"
	"fmt"

	"sigs.k8s.io/yaml"
)

// Objects returns the build's objects in the order to apply them: Tasks, the Pipeline,
// then the PipelineRun.
func (r *Result) Objects() []any {
	out := make([]any, 0, len(r.Tasks)+2)
	for _, t := range r.Tasks {
		out = append(out, t)
	}
	return append(out, r.Pipeline, r.PipelineRun)
}

// MarshalYAML renders objects as one multi-document YAML stream, the way kubectl apply
// reads it: keys sorted, no empty status or creation timestamp.
func MarshalYAML(objects []any) ([]byte, error) {
	var buf bytes.Buffer
	for i, obj := range objects {
		doc, err := ObjectYAML(obj)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(doc)
	}
	return buf.Bytes(), nil
}

// ObjectYAML renders one object.
func ObjectYAML(obj any) ([]byte, error) {
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encoding %T: %w", obj, err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	delete(m, "status")
	if meta, ok := m["metadata"].(map[string]any); ok {
		delete(meta, "creationTimestamp")
	}
	return yaml.Marshal(m)
}
