package tektonrun

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/util/retry"

	"github.com/concourse-tekton/concourse-tekton/concourse/vars"
	"github.com/concourse-tekton/concourse-tekton/pvc"
	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/tektonrun/podexec"
	"github.com/concourse-tekton/concourse-tekton/translate"
)

// MissingCredentialsError says which Secrets or keys a build's ((vars)) need and the
// namespace lacks.
type MissingCredentialsError struct {
	Namespace string
	Problems  []string
}

func (e *MissingCredentialsError) Error() string {
	return fmt.Sprintf("the build needs credentials namespace %s does not have:\n  %s", e.Namespace, strings.Join(e.Problems, "\n  "))
}

// Submitted is a build on the cluster.
type Submitted struct {
	Run *v1.PipelineRun
	// Existed says the build was there already: Submit left it untouched.
	Existed bool
	// Warnings say, a sentence each, what the build will lack (its job's task caches, when
	// the storage class cannot clone the last build's volume).
	Warnings []string
}

// Submit creates a compiled build on the target: its Tasks and Pipeline (created, or
// updated to this version), its build volume (a clone of the job's last build's, which
// holds the job's task caches), then its PipelineRun. It is idempotent: the PipelineRun's
// name is the build's, and submitting a build that exists returns the existing run
// untouched. Before anything is created, every credential the build reads must be there:
// in the namespace's Secrets, or, for a build compiled with SuppliedCredentials, in creds
// (see WithCredentials), whose values make the build's Secret, created just before the
// PipelineRun and then owned by it. creds is nil for other builds.
func (c *Client) Submit(ctx context.Context, r *translate.Result, creds vars.Variables) (*Submitted, error) {
	return c.submit(ctx, r, creds, nil)
}

// submit is Submit, uploading a one-off build's artifact inputs from source onto its
// volume before its PipelineRun is created. If they cannot all be uploaded, the volume
// goes, and nothing is left of the build.
func (c *Client) submit(ctx context.Context, r *translate.Result, creds vars.Variables, source podexec.ArtifactSource) (*Submitted, error) {
	ns := c.target.Namespace
	runs := c.target.Tekton.TektonV1().PipelineRuns(ns)
	if existing, err := runs.Get(ctx, r.PipelineRun.Name, metav1.GetOptions{}); err == nil {
		if err := sameBuild("PipelineRun", existing, r.PipelineRun); err != nil {
			return nil, err
		}
		return &Submitted{Run: existing, Existed: true}, nil
	} else if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("looking for build %s: %w", r.PipelineRun.Name, err)
	}
	if err := c.target.acceptsBuilds(ctx); err != nil {
		return nil, err
	}
	var secret *corev1.Secret
	if r.CredentialSecret != nil {
		if creds == nil {
			return nil, fmt.Errorf("build %s was compiled for credentials its starter supplies, and none were given", r.PipelineRun.Name)
		}
		var err error
		if secret, err = resolveCredentials(r.CredentialSecret, r.Credentials, creds); err != nil {
			return nil, err
		}
	} else if err := c.checkCredentials(ctx, r.Credentials); err != nil {
		return nil, err
	}
	var pullSecret *corev1.Secret
	if r.ImagePullSecret != nil {
		lookup := creds
		if r.CredentialSecret == nil {
			lookup = secretVars{get: secretGetter(ctx, c.target.Kube.CoreV1().Secrets(ns)), creds: credentialsByVar(r.Credentials)}
		}
		var err error
		if pullSecret, err = imagePullSecret(r.ImagePullSecret, r.ImagePulls, lookup); err != nil {
			return nil, err
		}
	}
	if err := c.checkNodes(ctx, r); err != nil {
		return nil, err
	}
	for _, t := range r.Tasks {
		// Task names are hashes of their content: one that exists is this one.
		if _, err := c.target.Tekton.TektonV1().Tasks(ns).Create(ctx, t, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("creating Task %s: %w", t.Name, err)
		}
	}
	if r.PipelineRun.Spec.PipelineRef != nil {
		if err := c.applyPipeline(ctx, r.Pipeline); err != nil {
			return nil, err
		}
	}
	pr := r.PipelineRun.DeepCopy()
	if r.RunnerImage != "" {
		pr.Annotations[runspec.AnnotationRunnerImage] = r.RunnerImage
	}
	var warnings []string
	if pullSecret != nil {
		if w := c.withServiceAccountPullSecrets(ctx, pr, pullSecret.Name); w != "" {
			warnings = append(warnings, w)
		}
	}
	claim, volumeWarnings, err := pvc.Prepare(ctx, c.target.Kube, c.target.Tekton, ns, pr)
	if err != nil {
		return nil, fmt.Errorf("preparing the build volume of %s: %w", pr.Name, err)
	}
	warnings = append(warnings, volumeWarnings...)
	if err := c.pods.Upload(ctx, r, claim, source); err != nil {
		del := c.target.Kube.CoreV1().PersistentVolumeClaims(ns).Delete(context.WithoutCancel(ctx), claim, metav1.DeleteOptions{})
		if apierrors.IsNotFound(del) {
			del = nil
		}
		return nil, errors.Join(err, del)
	}
	// The build's Secrets, of credentials and of image pull credentials.
	var secrets []*corev1.Secret
	for _, s := range []*corev1.Secret{secret, pullSecret} {
		if s == nil {
			continue
		}
		created, err := c.createCredentialSecret(ctx, s)
		if err != nil {
			return nil, errors.Join(err, c.deleteCredentialSecrets(ctx, secrets))
		}
		secrets = append(secrets, created)
	}
	run, err := runs.Create(ctx, pr, metav1.CreateOptions{})
	raced := apierrors.IsAlreadyExists(err)
	if raced {
		run, err = runs.Get(ctx, pr.Name, metav1.GetOptions{})
	}
	if err != nil {
		err = fmt.Errorf("creating PipelineRun %s: %w", pr.Name, err)
		if !raced {
			// Secrets of credentials for no run: they go.
			err = errors.Join(err, c.deleteCredentialSecrets(ctx, secrets))
		}
		return nil, err
	}
	for _, s := range secrets {
		if err := c.ownCredentialSecret(ctx, s.Name, run); err != nil {
			// The Secret would outlive the run: neither stays.
			return nil, errors.Join(err, c.deleteRun(ctx, run), c.deleteCredentialSecrets(ctx, secrets))
		}
	}
	if err := pvc.Own(ctx, c.target.Kube, ns, claim, run); err != nil {
		return nil, fmt.Errorf("giving the build volume %s to %s: %w", claim, run.Name, err)
	}
	return &Submitted{Run: run, Warnings: warnings}, nil
}

// checkNodes refuses a build whose pods need what no node can give, as the nodes report
// it: the kubelet would fail to start them forever, and the build would hang. Pods that
// want user namespaces of their own (hostUsers: false) need a runtime that says it
// supports them; pods that mount the runner's image as a volume
// (translate.Options.RunnerImageVolume) a kubelet and a runtime that mount images. A user
// who may not list nodes cannot tell: the build goes ahead.
func (c *Client) checkNodes(ctx context.Context, r *translate.Result) error {
	tpl := r.PipelineRun.Spec.TaskRunTemplate.PodTemplate
	userNamespaces := tpl != nil && tpl.HostUsers != nil && !*tpl.HostUsers
	imageVolumes := slices.ContainsFunc(r.Tasks, func(t *v1.Task) bool {
		return slices.ContainsFunc(t.Spec.Volumes, func(v corev1.Volume) bool { return v.Image != nil })
	})
	if imageVolumes && c.mountedRecently() {
		// Every node was found to mount images a moment ago (the choice of a backend that
		// mounts the runner where it can): not listed again for each build.
		imageVolumes = false
	}
	if !userNamespaces && !imageVolumes {
		return nil
	}
	nodes, err := c.target.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if apierrors.IsForbidden(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("listing nodes to check what their runtimes support: %w", err)
	}
	if userNamespaces && !slices.ContainsFunc(nodes.Items, func(n corev1.Node) bool {
		return slices.ContainsFunc(n.Status.RuntimeHandlers, func(h corev1.NodeRuntimeHandler) bool {
			return h.Features != nil && h.Features.UserNamespaces != nil && *h.Features.UserNamespaces
		})
	}) {
		return fmt.Errorf("user namespaces were asked for (--user-namespaces), but none of the %d nodes' container runtimes supports them (status.runtimeHandlers[].features.userNamespaces): the build's pods would never start", len(nodes.Items))
	}
	if imageVolumes && len(nodes.Items) > 0 && !slices.ContainsFunc(nodes.Items, func(n corev1.Node) bool { return mayMountImages(n.Status.NodeInfo) }) {
		runtimes := map[string]bool{}
		for _, n := range nodes.Items {
			runtimes[n.Status.NodeInfo.ContainerRuntimeVersion+", kubelet "+n.Status.NodeInfo.KubeletVersion] = true
		}
		return fmt.Errorf("the runner's image as a volume was asked for (--runner-image-volume), but none of the %d nodes mounts images as volumes "+
			"(Kubernetes' image volumes need a kubelet of 1.33 or later and containerd 2.1 or CRI-O 1.31 or later; the nodes run %s): the build's pods would never start",
			len(nodes.Items), strings.Join(slices.Sorted(maps.Keys(runtimes)), "; "))
	}
	return nil
}

// samePipeline tells whether the Pipeline there is p, as written or with Tekton's
// defaults applied as its webhook applies them.
func samePipeline(ctx context.Context, there, p *v1.Pipeline) bool {
	if !maps.Equal(there.Labels, p.Labels) || !maps.Equal(there.Annotations, p.Annotations) {
		return false
	}
	if equality.Semantic.DeepEqual(there.Spec, p.Spec) {
		return true
	}
	want := p.DeepCopy()
	want.SetDefaults(ctx)
	return equality.Semantic.DeepEqual(there.Spec, want.Spec)
}

// sameBuild checks that an object of a kind found under a build's name (its PipelineRun,
// its Secret of credentials) is that build's (the same team, pipeline, job and build, by
// the exact names in its annotations), so that a build never attaches to another's run,
// nor takes another's Secret.
func sameBuild(kind string, existing, want metav1.Object) error {
	for _, k := range buildKeys {
		if existing.GetAnnotations()[k] != want.GetAnnotations()[k] {
			return fmt.Errorf("%s %s is not this build: its %s is %q, not %q", kind, existing.GetName(), k, existing.GetAnnotations()[k], want.GetAnnotations()[k])
		}
	}
	return nil
}

// applyPipeline creates the job's Pipeline, or updates it to this version of the job.
// Running builds keep the spec they started with: Tekton copies it into their status.
// A Pipeline that is this version already (as Tekton's defaults left it) is not written:
// builds of a job started at once do not race to update it.
func (c *Client) applyPipeline(ctx context.Context, p *v1.Pipeline) error {
	pipelines := c.target.Tekton.TektonV1().Pipelines(c.target.Namespace)
	_, err := pipelines.Create(ctx, p, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		if err != nil {
			return fmt.Errorf("creating Pipeline %s: %w", p.Name, err)
		}
		return nil
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := pipelines.Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if samePipeline(ctx, cur, p) {
			return nil
		}
		next := cur.DeepCopy()
		next.Labels, next.Annotations, next.Spec = p.Labels, p.Annotations, p.Spec
		_, err = pipelines.Update(ctx, next, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("updating Pipeline %s: %w", p.Name, err)
	}
	return nil
}

// checkCredentials checks that each ((var)) has a Secret, with the key it needs, the way
// the runner will look it up (credentialSecret).
func (c *Client) checkCredentials(ctx context.Context, creds []translate.Credential) error {
	ns := c.target.Namespace
	get := secretGetter(ctx, c.target.Kube.CoreV1().Secrets(ns))
	var problems []string
	for _, cred := range creds {
		used, keys, empty, err := credentialSecret(cred, get)
		if err != nil {
			return err
		}
		_, hasKey := keys[cred.Key]
		_, hasValue := keys["value"]
		switch {
		case used == "" && empty != "":
			problems = append(problems, fmt.Sprintf("((%s)): Secret %s is empty (give it a key `value`)", cred.Var, empty))
		case used == "":
			problems = append(problems, fmt.Sprintf("((%s)): no Secret %s (create one, with a key `value`)", cred.Var, strings.Join(cred.Secrets, " or ")))
		case cred.Key != "" && !hasKey && !hasValue:
			problems = append(problems, fmt.Sprintf("((%s)): Secret %s has no key %q", cred.Var, used, cred.Key))
		}
	}
	if len(problems) > 0 {
		return &MissingCredentialsError{Namespace: ns, Problems: problems}
	}
	return nil
}

// NextBuild is the number of a job's next build: one more than the highest it has.
func (c *Client) NextBuild(ctx context.Context, team, pipeline, job string) (int, error) {
	sel := labels.SelectorFromSet(labels.Set{
		runspec.LabelTeam:     runspec.LabelValue(team),
		runspec.LabelPipeline: runspec.LabelValue(pipeline),
		runspec.LabelJob:      runspec.LabelValue(job),
	})
	list, err := c.target.Tekton.TektonV1().PipelineRuns(c.target.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return 0, fmt.Errorf("listing the builds of %s/%s: %w", pipeline, job, err)
	}
	highest := 0
	for _, r := range list.Items {
		if r.Annotations[runspec.LabelPipeline] != pipeline || r.Annotations[runspec.LabelJob] != job || r.Annotations[runspec.LabelTeam] != team {
			continue
		}
		if n, err := strconv.Atoi(r.Annotations[runspec.LabelBuild]); err == nil && n > highest {
			highest = n
		}
	}
	return highest + 1, nil
}
