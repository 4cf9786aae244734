package translate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"go.yaml.in/yaml/v3"

	"github.com/concourse-tekton/concourse-tekton/internal/parallel"
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
	docs, size, err := documents(objects)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, size)
	for _, doc := range docs {
		out = append(out, doc...)
	}
	return out, nil
}

// WriteYAML writes to w the stream MarshalYAML makes, without making it in memory: every
// document is rendered before the first is written, so that an object that cannot be
// encoded writes nothing.
func WriteYAML(w io.Writer, objects []any) error {
	docs, _, err := documents(objects)
	if err != nil {
		return err
	}
	for _, doc := range docs {
		if _, err := w.Write(doc); err != nil {
			return err
		}
	}
	return nil
}

// documents renders each object as a document of a stream, after the separator "---"
// but the first, and their total size. The objects are rendered by as many goroutines as
// the process may run at once, each taking the next object: the documents, and which
// error is returned (the first object's that fails), do not depend on their timing. Each
// goroutine writes in one scratch buffer and keeps each document at its size: a buffer
// grown to megabytes would be copied and cleared again and again.
func documents(objects []any) ([][]byte, int, error) {
	docs := make([][]byte, len(objects))
	errs := make([]error, len(objects))
	parallel.ForEach(len(objects), minObjectsPerWorker, func() func(int) {
		var scratch []byte
		return func(i int) {
			scratch = scratch[:0]
			if i > 0 {
				scratch = append(scratch, "---\n"...)
			}
			var err error
			if scratch, err = objectYAML(scratch, objects[i]); err != nil {
				errs[i] = err
				return
			}
			docs[i] = bytes.Clone(scratch)
		}
	})
	size := 0
	for i, doc := range docs {
		if errs[i] != nil {
			return nil, 0, errs[i]
		}
		size += len(doc)
	}
	return docs, size, nil
}

// minObjectsPerWorker is the fewest objects worth a goroutine of their own.
const minObjectsPerWorker = 4

// ObjectYAML renders one object.
func ObjectYAML(obj any) ([]byte, error) {
	return objectYAML(nil, obj)
}

// objectYAML appends one object's document to dst.
func objectYAML(dst []byte, obj any) ([]byte, error) {
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
