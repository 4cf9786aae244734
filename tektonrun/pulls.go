package tektonrun

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/concourse-tekton/concourse-tekton/concourse/vars"
	"github.com/concourse-tekton/concourse-tekton/pvc"
	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/translate"
)

// Image pull credentials: the images whose registry-image source gives a username and
// password are pulled by the node with them, from a Secret of the build's
// (translate.Result.ImagePullSecret) that Submit makes, as it makes the Secret of
// supplied credentials.

// imagePullSecret fills the build's Secret of image pull credentials in: a Docker config
// with each registry's username and password (translate.Result.ImagePulls), their
// ((vars)), and those of the repository that names the registry, looked up in lookup;
// where two give one registry, the first's. A registry whose credentials are not all
// found is left out: only the steps whose images it serves fail, when their pods cannot
// pull them, as only the steps whose image Concourse cannot fetch error. An error of
// lookup is returned as it is, in Concourse's words, which never quote a value.
func imagePullSecret(template *corev1.Secret, pulls []translate.ImagePull, lookup vars.Variables) (*corev1.Secret, error) {
	auths := map[string]dockerAuth{}
	for _, pull := range pulls {
		var values [3]string
		complete := true
		for i, s := range []string{pull.Repository, pull.Username, pull.Password} {
			v, found, err := credentialString(s, lookup, [3]string{"repository", "username", "password"}[i], pull.Repository)
			if err != nil {
				return nil, err
			}
			values[i], complete = v, complete && found
		}
		registry := translate.PullRegistry(values[0])
		if _, seen := auths[registry]; !complete || seen {
			continue
		}
		user, pass := values[1], values[2]
		auths[registry] = dockerAuth{Username: user, Password: pass, Auth: base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))}
	}
	s := template.DeepCopy()
	if err := setDockerAuths(s, auths); err != nil {
		return nil, err
	}
	return s, nil
}

// dockerAuth is a registry's credentials in a Docker config.
type dockerAuth struct {
	Username string `json:"username"`
	Password string `json:"password"`
	Auth     string `json:"auth"`
}

// dockerAuths reads the credentials of a Secret of image pull credentials, by registry.
func dockerAuths(s *corev1.Secret) (map[string]dockerAuth, error) {
	var config struct {
		Auths map[string]dockerAuth `json:"auths"`
	}
	if data := s.Data[corev1.DockerConfigJsonKey]; len(data) > 0 {
		if err := json.Unmarshal(data, &config); err != nil {
			return nil, fmt.Errorf("Secret %s holds no Docker config: %w", s.Name, err)
		}
	}
	if config.Auths == nil {
		config.Auths = map[string]dockerAuth{}
	}
	return config.Auths, nil
}

// setDockerAuths writes the Docker config of auths into a Secret of image pull
// credentials.
func setDockerAuths(s *corev1.Secret, auths map[string]dockerAuth) error {
	config, err := json.Marshal(map[string]any{"auths": auths})
	if err != nil {
		return err
	}
	s.Data = map[string][]byte{corev1.DockerConfigJsonKey: config}
	return nil
}

// credentialString interpolates the ((vars)) of what of the credentials of an image
// repository (as written). found is false when a var is not there.
func credentialString(s string, lookup vars.Variables, what, repo string) (string, bool, error) {
	v, missing, err := vars.InterpolateString(s, lookup)
	if err != nil {
		// Concourse's errors name a value's type, never the value.
		return "", false, fmt.Errorf("the %s of the credentials of image repository %s: %w", what, repo, err)
	}
	if len(missing) > 0 {
		return "", false, nil
	}
	switch x := v.(type) {
	case string:
		return x, true, nil
	case json.Number:
		return x.String(), true, nil
	case int, int64, float64:
		return fmt.Sprint(x), true, nil
	}
	return "", false, fmt.Errorf("the %s of the credentials of image repository %s, %s, is a %T, not a string", what, repo, s, v)
}

// secretVars looks a build's ((vars)) up in the namespace's Secrets as its steps' runner
// does (translate.Credential): in the Secret credentialSecret finds, its key `value` (for
// a reference without fields) or else the map of its keys, the fields walked.
type secretVars struct {
	get   func(name string) (*corev1.Secret, error)
	creds map[string]translate.Credential
}

var _ vars.Variables = secretVars{}

func (s secretVars) Get(ref vars.Reference) (any, bool, error) {
	cred, ok := s.creds[ref.String()]
	if !ok {
		return nil, false, nil
	}
	_, keys, _, err := credentialSecret(cred, s.get)
	if err != nil || keys == nil {
		return nil, false, err
	}
	var value any = keys
	if v, ok := keys["value"]; ok && len(ref.Fields) == 0 {
		value = v
	}
	value, err = vars.Traverse(value, ref.String(), ref.Fields)
	if err != nil {
		return nil, false, err
	}
	return value, true, nil
}

// withServiceAccountPullSecrets adds, to each of run's pods that pull with the build's
// Secret of image pull credentials, the imagePullSecrets of the service account the
// build's pods run as: Kubernetes gives a pod its service account's only when it names
// none of its own. A service account that cannot be read (the starter may not) is said
// in the warning returned, and those pods pull with the build's credentials alone.
func (c *Client) withServiceAccountPullSecrets(ctx context.Context, run *v1.PipelineRun, secret string) string {
	name := run.Spec.TaskRunTemplate.ServiceAccountName
	if name == "" {
		name = "default"
	}
	sa, err := c.target.Kube.CoreV1().ServiceAccounts(c.target.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		// Without it the build's pods are not made at all, and Tekton says so.
		return ""
	}
	if err != nil {
		return fmt.Sprintf("the image pull secrets of service account %s could not be read (%v): the steps whose images are pulled with their sources' credentials pull with those alone", name, err)
	}
	if len(sa.ImagePullSecrets) == 0 {
		return ""
	}
	for _, spec := range run.Spec.TaskRunSpecs {
		t := spec.PodTemplate
		if t == nil || !slices.ContainsFunc(t.ImagePullSecrets, func(r corev1.LocalObjectReference) bool { return r.Name == secret }) {
			continue
		}
		for _, own := range sa.ImagePullSecrets {
			if !slices.Contains(t.ImagePullSecrets, own) {
				t.ImagePullSecrets = append(t.ImagePullSecrets, own)
			}
		}
	}
	return ""
}

// addPullAuths adds auths to the build's Secret of image pull credentials, each registry
// the Secret does not have yet (the first credentials of a registry win, as in
// imagePullSecret), making the Secret, owned by the run, if it is not there.
func (c *Client) addPullAuths(ctx context.Context, pr *v1.PipelineRun, auths map[string]dockerAuth) error {
	if len(auths) == 0 {
		return nil
	}
	secrets := c.target.Kube.CoreV1().Secrets(pr.Namespace)
	name := pr.Name + runspec.ImagePullSecretSuffix
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s, err := secrets.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			s = &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: pr.Namespace, Labels: maps.Clone(pr.Labels),
					OwnerReferences: []metav1.OwnerReference{pvc.OwnerReference(pr)}},
				Type: corev1.SecretTypeDockerConfigJson,
			}
			if err := setDockerAuths(s, auths); err != nil {
				return err
			}
			_, err = secrets.Create(ctx, s, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				// Made meanwhile: read it again, as after a conflict.
				return apierrors.NewConflict(corev1.Resource("secrets"), name, err)
			}
			return err
		}
		if err != nil {
			return err
		}
		have, err := dockerAuths(s)
		if err != nil {
			return err
		}
		added := false
		for registry, a := range auths {
			if _, ok := have[registry]; !ok {
				have[registry], added = a, true
			}
		}
		if !added {
			return nil
		}
		if err := setDockerAuths(s, have); err != nil {
			return err
		}
		// A patch (the verb Permissions lists), on the version read: a conflict reads
		// the Secret again.
		patch, err := json.Marshal(map[string]any{
			"metadata": map[string]any{"resourceVersion": s.ResourceVersion},
			"data":     s.Data,
		})
		if err != nil {
			return err
		}
		_, err = secrets.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("build %s: adding a task file's image credentials to Secret %s: %w", pr.Name, name, err)
	}
	return nil
}
