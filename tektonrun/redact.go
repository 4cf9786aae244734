package tektonrun

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/concourse-tekton/concourse-tekton/runner/redact"
	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/translate"
)

// buildSecrets reads the value of every credential the build's steps use (the run's
// AnnotationCredentials), the way the runner looks them up: the first candidate Secret
// that exists, its key, or its `value`, or every key; a supplied one in the build's own
// Secret. Each runner redacts the credentials
// of its own step; with these the backend redacts every credential of the build in every
// step's events, as Concourse does. A Secret it cannot read is an error: the events are
// not shown unredacted.
func (c *Client) buildSecrets(ctx context.Context, pr *v1.PipelineRun) (*redact.Secrets, error) {
	var secrets redact.Secrets
	if hasTaskVars(pr) {
		// The vars of its task files, made so far (see taskVarsSupplier).
		list, err := c.target.Kube.CoreV1().Secrets(pr.Namespace).List(ctx, metav1.ListOptions{LabelSelector: runspec.LabelTaskVarsOf + "=" + pr.Name})
		if err != nil {
			return nil, fmt.Errorf("build %s: reading the vars of its task files to redact them: %w", pr.Name, err)
		}
		for _, s := range list.Items {
			for k, v := range s.Data {
				if k == runspec.TaskVarsErrorKey {
					continue
				}
				if err := addSupplied(&secrets, v); err != nil {
					return nil, fmt.Errorf("build %s: reading %s in Secret %s to redact it: %w", pr.Name, k, s.Name, err)
				}
			}
		}
	}
	raw := pr.Annotations[runspec.AnnotationCredentials]
	if raw == "" {
		return &secrets, nil
	}
	var creds []translate.Credential
	if err := json.Unmarshal([]byte(raw), &creds); err != nil {
		return nil, fmt.Errorf("build %s: reading its %s annotation: %w", pr.Name, runspec.AnnotationCredentials, err)
	}
	cache := map[string]map[string][]byte{}
	for _, cred := range creds {
		for _, name := range cred.Secrets {
			data, seen := cache[name]
			if !seen {
				s, err := c.target.Kube.CoreV1().Secrets(pr.Namespace).Get(ctx, name, metav1.GetOptions{})
				switch {
				case apierrors.IsNotFound(err):
				case err != nil:
					return nil, fmt.Errorf("build %s: reading Secret %s to redact its values: %w", pr.Name, name, err)
				default:
					data = s.Data
				}
				cache[name] = data
			}
			if len(data) == 0 {
				continue
			}
			if cred.Supplied {
				if err := addSupplied(&secrets, data[cred.Key]); err != nil {
					return nil, fmt.Errorf("build %s: reading ((%s)) in Secret %s to redact it: %w", pr.Name, cred.Var, name, err)
				}
				break
			}
			addSecret(&secrets, data, cred.Key)
			break
		}
	}
	return &secrets, nil
}

// addSecret tracks what a var reads from a Secret's data.
func addSecret(s *redact.Secrets, data map[string][]byte, key string) {
	switch v, ok := data["value"]; {
	case key != "":
		if v, ok := data[key]; ok {
			s.Add(string(v))
		}
	case ok:
		s.Add(string(v))
	default:
		for _, v := range data {
			s.Add(string(v))
		}
	}
}

// addSupplied tracks a supplied credential: its value, as JSON (none: the var was not
// supplied).
func addSupplied(s *redact.Secrets, data []byte) error {
	if data == nil {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return errors.New("its value is not JSON")
	}
	s.Add(v)
	return nil
}
