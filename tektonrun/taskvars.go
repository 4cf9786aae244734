package tektonrun

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/pkg/apis"

	"github.com/concourse-tekton/concourse-tekton/concourse/vars"
	"github.com/concourse-tekton/concourse-tekton/pvc"
	"github.com/concourse-tekton/concourse-tekton/runner/redact"
	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/tektonrun/buildevents"
	"github.com/concourse-tekton/concourse-tekton/translate"
)

// Task vars: with supplied credentials (WithCredentials), a task whose config is a file
// read at run time may need vars its starter could not know of when the build started.
// Its resolve step lists them (runspec.ResultVars), and the follower of the build, which
// has the credentials, makes the task's vars Secret (runspec.TaskVarsSecret) with their
// values, as Concourse looks a task file's vars up when the step runs; the task's pod
// waits for that Secret.

// taskVarsSupplier makes the vars Secrets of one build's tasks, once each: an observer of
// the build's follower.
type taskVarsSupplier struct {
	client *Client
	creds  vars.Variables
	made   map[string]bool
}

var _ Observer = (*taskVarsSupplier)(nil)

func newTaskVarsSupplier(c *Client, creds vars.Variables) *taskVarsSupplier {
	return &taskVarsSupplier{client: c, creds: creds, made: map[string]bool{}}
}

// Observe makes the vars Secret of every resolve step of the build that listed its task's
// vars and has none yet. A var creds does not have is left out (the task says it is
// undefined), and an error of creds is the task's error (runspec.TaskVarsErrorKey). The
// values it looks up join secrets.
func (s *taskVarsSupplier) Observe(ctx context.Context, pr *v1.PipelineRun, trs []*v1.TaskRun, secrets *redact.Secrets) error {
	for _, tr := range trs {
		name := tr.Labels[labelPipelineTask]
		if name == "" || s.made[name] || !buildevents.Done(tr.Status.GetCondition(apis.ConditionSucceeded)) {
			continue
		}
		listed, ok := buildevents.LookupResult(tr, runspec.ResultVars)
		if !ok {
			continue
		}
		if spec, ok := buildevents.StepSpec(tr); !ok || spec.Mode != runspec.ModeResolve {
			continue
		}
		var refs []string
		if err := json.Unmarshal([]byte(listed), &refs); err != nil {
			return fmt.Errorf("build %s: the vars step %s listed are not JSON: %w", pr.Name, name, err)
		}
		// The image's credentials first: the task's pod pulls its image once it has its
		// vars Secret (the kubelet mounts a pod's volumes before it pulls).
		var pullErr error
		if pull, _ := buildevents.LookupResult(tr, runspec.ResultPull); pull != "" {
			var p runspec.Pull
			if err := json.Unmarshal([]byte(pull), &p); err != nil {
				return fmt.Errorf("build %s: the image credentials step %s gave are not JSON: %w", pr.Name, name, err)
			}
			auths, err := s.pullAuths(p, secrets)
			if err != nil {
				pullErr = err
			} else if err := s.client.addPullAuths(ctx, pr, auths); err != nil {
				return err
			}
		}
		secret := s.secret(pr, name, refs, pullErr, secrets)
		_, err := s.client.target.Kube.CoreV1().Secrets(pr.Namespace).Create(ctx, secret, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("build %s: making the vars Secret of %s: %w", pr.Name, name, err)
		}
		s.made[name] = true
	}
	return nil
}

// secret is the vars Secret of the task the resolve step resolve of run reads the file
// of; with failed, that error of looking its vars up (its image's credentials) instead.
// The values it looks up join secrets.
func (s *taskVarsSupplier) secret(pr *v1.PipelineRun, resolve string, refs []string, failed error, secrets *redact.Secrets) *corev1.Secret {
	data := map[string][]byte{}
	if failed != nil {
		data[runspec.TaskVarsErrorKey] = []byte(failed.Error())
		refs = nil
	}
	for _, r := range refs {
		if err := s.lookup(r, data, secrets); err != nil {
			// Concourse errors the step with the credential manager's own words.
			data = map[string][]byte{runspec.TaskVarsErrorKey: []byte(err.Error())}
			break
		}
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:            runspec.TaskVarsSecret(pr.Name, resolve),
			Namespace:       pr.Namespace,
			Labels:          objectLabels(pr, runspec.LabelTaskVarsOf),
			OwnerReferences: []metav1.OwnerReference{pvc.OwnerReference(pr)},
		},
		Type: corev1.SecretTypeOpaque,
		Data: data,
	}
}

// pullAuths is the credentials of the registry of a task file's image that its resolve
// step gave, looked up in the supplied credentials as Submit looks up those of the
// build's images (imagePullSecret): none when a var is not there, and an error of the
// credential manager as it is. The values read from it join secrets.
func (s *taskVarsSupplier) pullAuths(p runspec.Pull, secrets *redact.Secrets) (map[string]dockerAuth, error) {
	filled, err := imagePullSecret(&corev1.Secret{}, []translate.ImagePull{{Repository: p.Repository, Username: p.Username, Password: p.Password}}, s.creds)
	if err != nil {
		return nil, err
	}
	auths, err := dockerAuths(filled)
	if err != nil {
		return nil, err
	}
	for _, a := range auths {
		if strings.Contains(p.Username, "((") {
			secrets.Add(a.Username)
		}
		secrets.Add(a.Password)
	}
	return auths, nil
}

// lookup puts the value of the var ref into data, as the build's own Secret holds it, and
// adds it to secrets.
func (s *taskVarsSupplier) lookup(ref string, data map[string][]byte, secrets *redact.Secrets) error {
	buf, found, err := lookupSupplied(s.creds, ref)
	if err != nil || !found {
		return err
	}
	data[runspec.CredentialKey(ref)] = buf
	return addSupplied(secrets, buf)
}

// hasTaskVars tells whether a build has a task whose vars Secret its follower makes.
func hasTaskVars(pr *v1.PipelineRun) bool {
	spec := pr.Status.PipelineSpec
	if spec == nil {
		return false
	}
	for _, t := range spec.Tasks {
		for _, p := range t.Params {
			if p.Name == runspec.ParamTaskVars {
				return true
			}
		}
	}
	return false
}
