package tektonrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/concourse-tekton/concourse-tekton/concourse/vars"
	"github.com/concourse-tekton/concourse-tekton/pvc"
	"github.com/concourse-tekton/concourse-tekton/translate"
)

// Supplied credentials (WithCredentials): the values of a build's ((vars)), looked up by
// its starter, in one Secret of the build that its PipelineRun owns.

// resolveCredentials fills the build's Secret (translate.Result.CredentialSecret) with the
// value of each of its credentials, looked up in creds as Concourse looks up a step's
// vars, each reference with its fields, as JSON. A var creds does not have is left out:
// Concourse looks a step's vars up when the step runs, so only a step that runs and needs
// it errors, with "undefined vars: ..." (the runner finds no value), and a var of a step
// that never runs (a hook of a build that succeeded) fails nothing. An error of creds (a
// missing field, an unknown var source, a credential manager that failed) is returned as
// it is, in Concourse's words. Nothing is created.
func resolveCredentials(template *corev1.Secret, creds []translate.Credential, lookup vars.Variables) (*corev1.Secret, error) {
	s := template.DeepCopy()
	s.Data = make(map[string][]byte, len(creds))
	for _, cred := range creds {
		buf, found, err := lookupSupplied(lookup, cred.Var)
		if err != nil {
			return nil, err
		}
		if found {
			s.Data[cred.Key] = buf
		}
	}
	return s, nil
}

// lookupSupplied looks the var ref (as written between the parentheses) up in lookup and
// gives its value as a supplied credential is kept: JSON, under runspec.CredentialKey.
func lookupSupplied(lookup vars.Variables, ref string) ([]byte, bool, error) {
	parsed, err := vars.ParseReference(ref)
	if err != nil {
		return nil, false, err
	}
	value, found, err := lookup.Get(parsed)
	if err != nil || !found {
		return nil, false, err
	}
	buf, err := json.Marshal(jsonValue(value))
	if err != nil {
		// Not the error's text: it may quote the value.
		return nil, false, fmt.Errorf("the value of ((%s)) (%T) cannot be given to the build's steps", ref, value)
	}
	return buf, true, nil
}

// jsonValue is v with the maps of YAML decoders (map[any]any), which credential managers
// may return, made JSON objects.
func jsonValue(v any) any {
	switch x := v.(type) {
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[fmt.Sprint(k)] = jsonValue(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = jsonValue(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonValue(e)
		}
		return out
	}
	return v
}

// createCredentialSecret creates the build's Secret of credentials, and returns it as
// created. A Secret of the build that is there already was left by an earlier attempt to
// start it (stopped before its PipelineRun was created) or by an earlier run of the same
// name (deleted, the Secret left to the garbage collector): it is replaced, so that the
// build has the values just resolved, and no owner that is gone. A Secret of that name
// that is not the build's is left alone, and the build refused.
func (c *Client) createCredentialSecret(ctx context.Context, s *corev1.Secret) (*corev1.Secret, error) {
	secrets := c.target.Kube.CoreV1().Secrets(c.target.Namespace)
	created, err := secrets.Create(ctx, s, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		var cur *corev1.Secret
		if cur, err = secrets.Get(ctx, s.Name, metav1.GetOptions{}); err == nil {
			if err := sameBuild("Secret", cur, s); err != nil {
				return nil, err
			}
			err = secrets.Delete(ctx, s.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cur.UID}})
			if err == nil || apierrors.IsNotFound(err) {
				created, err = secrets.Create(ctx, s, metav1.CreateOptions{})
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("creating Secret %s of the build's credentials: %w", s.Name, err)
	}
	return created, nil
}

// ownCredentialSecret makes the build's PipelineRun the owner of its Secret of
// credentials, so that the Secret is deleted with it.
func (c *Client) ownCredentialSecret(ctx context.Context, name string, run *v1.PipelineRun) error {
	if run.UID == "" {
		return fmt.Errorf("giving Secret %s to %s: the PipelineRun has no UID", name, run.Name)
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"ownerReferences": []metav1.OwnerReference{pvc.OwnerReference(run)}}})
	if err != nil {
		return err
	}
	if _, err := c.target.Kube.CoreV1().Secrets(c.target.Namespace).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("giving Secret %s of the build's credentials to %s: %w", name, run.Name, err)
	}
	return nil
}

// cleanupTimeout bounds the deletions that undo a build that could not start; they run
// even when the caller's context is done.
const cleanupTimeout = 30 * time.Second

// deleteCredentialSecret deletes the Secret of credentials Submit created (nil: none).
func (c *Client) deleteCredentialSecret(ctx context.Context, s *corev1.Secret) error {
	if s == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	err := c.target.Kube.CoreV1().Secrets(c.target.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &s.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting Secret %s of the build's credentials (delete it: it holds their values): %w", s.Name, err)
	}
	return nil
}

// deleteCredentialSecrets deletes the Secrets of credentials Submit created.
func (c *Client) deleteCredentialSecrets(ctx context.Context, secrets []*corev1.Secret) error {
	var errs []error
	for _, s := range secrets {
		errs = append(errs, c.deleteCredentialSecret(ctx, s))
	}
	return errors.Join(errs...)
}

// secretKeys are the keys of a Secret, with their values as strings (as the runner reads
// a mounted Secret's files): its data's, and its stringData's (which only a Secret not
// yet written has).
func secretKeys(s *corev1.Secret) map[string]any {
	keys := make(map[string]any, len(s.Data)+len(s.StringData))
	for k, v := range s.Data {
		keys[k] = string(v)
	}
	for k, v := range s.StringData {
		keys[k] = v
	}
	return keys
}

// credentialSecret finds the Secret a credential's value is read from, as the steps'
// runner finds it (its readSecret, on the Secrets' volumes): the first of its candidate
// Secrets that exists and has a key. An optional volume of a Secret that is not there
// is an empty directory, so an empty Secret is passed over as a missing one is; empty
// names the first of those, for a message. get reads a Secret (nil for none).
func credentialSecret(cred translate.Credential, get func(name string) (*corev1.Secret, error)) (name string, keys map[string]any, empty string, err error) {
	for _, candidate := range cred.Secrets {
		secret, err := get(candidate)
		if err != nil {
			return "", nil, "", err
		}
		if secret == nil {
			continue
		}
		if keys := secretKeys(secret); len(keys) > 0 {
			return candidate, keys, empty, nil
		}
		if empty == "" {
			empty = candidate
		}
	}
	return "", nil, empty, nil
}

// secretGetter reads the namespace's Secrets for credentialSecret, each once.
func secretGetter(ctx context.Context, secrets typedcorev1.SecretInterface) func(string) (*corev1.Secret, error) {
	cache := map[string]*corev1.Secret{}
	return func(name string) (*corev1.Secret, error) {
		if s, ok := cache[name]; ok {
			return s, nil
		}
		s, err := secrets.Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			s = nil
		case err != nil:
			return nil, fmt.Errorf("reading Secret %s: %w", name, err)
		}
		cache[name] = s
		return s, nil
	}
}

// credentialsByVar indexes a build's credentials by their var.
func credentialsByVar(creds []translate.Credential) map[string]translate.Credential {
	out := make(map[string]translate.Credential, len(creds))
	for _, c := range creds {
		out[c.Var] = c
	}
	return out
}

// deleteRun deletes a PipelineRun Submit created, with what it owns.
func (c *Client) deleteRun(ctx context.Context, run *v1.PipelineRun) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	policy := metav1.DeletePropagationBackground
	err := c.target.Tekton.TektonV1().PipelineRuns(c.target.Namespace).Delete(ctx, run.Name, metav1.DeleteOptions{PropagationPolicy: &policy, Preconditions: &metav1.Preconditions{UID: &run.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting PipelineRun %s, which could not be started: %w", run.Name, err)
	}
	return nil
}
