package tektonrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Permission is one verb on one resource the backend needs in the target's namespace.
type Permission struct{ Group, Resource, Subresource, Verb string }

// String reads like `kubectl auth can-i`: "create pods/exec", "get pipelineruns.tekton.dev".
func (p Permission) String() string {
	s := p.Verb + " " + p.Resource
	if p.Group != "" {
		s += "." + p.Group
	}
	if p.Subresource != "" {
		s += "/" + p.Subresource
	}
	return s
}

// MarshalJSON writes the fields in lower case, leaving out an empty group (the core group)
// and an empty subresource.
func (p Permission) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Group       string `json:"group,omitempty"`
		Resource    string `json:"resource"`
		Subresource string `json:"subresource,omitempty"`
		Verb        string `json:"verb"`
	}{p.Group, p.Resource, p.Subresource, p.Verb})
}

// tektonGroupVersion is the Tekton API the backend speaks.
const tektonGroupVersion = "tekton.dev/v1"

// Permissions lists every verb the backend uses. Only namespaced ones: Check asks about
// them in the target's namespace (creating SelfSubjectAccessReviews, which every
// authenticated user may, is left out).
var Permissions = []Permission{
	// Tasks and Pipelines are applied: created, or updated when they exist.
	{"tekton.dev", "tasks", "", "get"},
	{"tekton.dev", "tasks", "", "list"},
	{"tekton.dev", "tasks", "", "create"},
	{"tekton.dev", "tasks", "", "update"},
	{"tekton.dev", "pipelines", "", "get"},
	{"tekton.dev", "pipelines", "", "list"},
	{"tekton.dev", "pipelines", "", "create"},
	{"tekton.dev", "pipelines", "", "update"},
	// A build is a PipelineRun: started, watched, aborted (patched to cancelled), reaped.
	{"tekton.dev", "pipelineruns", "", "get"},
	{"tekton.dev", "pipelineruns", "", "list"},
	{"tekton.dev", "pipelineruns", "", "watch"},
	{"tekton.dev", "pipelineruns", "", "create"},
	{"tekton.dev", "pipelineruns", "", "patch"},
	{"tekton.dev", "pipelineruns", "", "delete"},
	// Its TaskRuns are the steps whose status becomes build events.
	{"tekton.dev", "taskruns", "", "get"},
	{"tekton.dev", "taskruns", "", "list"},
	{"tekton.dev", "taskruns", "", "watch"},
	{"tekton.dev", "taskruns", "", "patch"},
	// Pods: the steps' logs, hijacking (exec), and pods the backend runs itself.
	{"", "pods", "", "get"},
	{"", "pods", "", "list"},
	{"", "pods", "", "watch"},
	{"", "pods", "", "create"},
	{"", "pods", "", "delete"},
	{"", "pods", "log", "get"},
	{"", "pods", "exec", "create"},
	// A transfer's exec is a WebSocket first (Kubernetes 1.30+), which opens with a GET.
	{"", "pods", "exec", "get"},
	// Credentials are read from Secrets; a build whose credentials its starter supplies
	// (an ATC's, WithCredentials) has a Secret of its own, made, owned by its run, and
	// replaced when a start was interrupted.
	{"", "secrets", "", "get"},
	{"", "secrets", "", "create"},
	{"", "secrets", "", "patch"},
	{"", "secrets", "", "delete"},
	// The service account a build's pods run as: its imagePullSecrets join the build's
	// own in the pods that pull with those (Kubernetes gives a pod its service
	// account's only when it names none).
	{"", "serviceaccounts", "", "get"},
	// Build volumes: made before their run, then owned by it (patched); gc deletes them.
	{"", "persistentvolumeclaims", "", "get"},
	{"", "persistentvolumeclaims", "", "list"},
	{"", "persistentvolumeclaims", "", "create"},
	{"", "persistentvolumeclaims", "", "patch"},
	{"", "persistentvolumeclaims", "", "delete"},
	// A clone whose provisioning failed says why in an event of its claim's.
	{"", "events", "", "list"},
	// An ended build's events are archived in ConfigMaps it owns (Client.Archive), read
	// back once its pods are gone. The target's state (land, retire) is a ConfigMap too.
	{"", "configmaps", "", "get"},
	{"", "configmaps", "", "list"},
	{"", "configmaps", "", "create"},
	{"", "configmaps", "", "update"},
	{"", "configmaps", "", "delete"},
	// Retiring a target deletes everything of ours.
	{"tekton.dev", "pipelineruns", "", "deletecollection"},
	{"tekton.dev", "pipelines", "", "deletecollection"},
	{"tekton.dev", "tasks", "", "deletecollection"},
	{"", "pods", "", "deletecollection"},
	{"", "persistentvolumeclaims", "", "deletecollection"},
	{"", "secrets", "", "list"},
	{"", "secrets", "", "deletecollection"},
	{"", "configmaps", "", "deletecollection"},
}

// ClusterPermissions lists what the backend reads outside the target's namespace, each
// optional: without it, what it tells is taken as unknown (and said so) rather than failing
// a build. Check does not ask about them; the Helm chart grants them.
var ClusterPermissions = []Permission{
	// The namespace's enforced Pod Security level (podsecurity.go), by its name.
	{"", "namespaces", "", "get"},
	// The nodes' versions and runtimes: whether they mount images (imagevolume.go), and
	// whether the cluster is one node (the advice on Tekton's affinity assistant).
	{"", "nodes", "", "list"},
	// A build volume's class, the default one when none is named, and whether its CSI
	// driver clones volumes (task caches and resource caches carried from build to build).
	{"storage.k8s.io", "storageclasses", "", "get"},
	{"storage.k8s.io", "storageclasses", "", "list"},
	{"storage.k8s.io", "csidrivers", "", "get"},
}

// CheckReport says whether a target can run builds, and what it lacks.
type CheckReport struct {
	Target          string
	ServerVersion   string // from the discovery client; empty if unreachable
	Reachable       bool
	TektonInstalled bool         // the tekton.dev/v1 group serves pipelineruns (discovery)
	Missing         []Permission // not granted, in table order
	// Granted: every permission was granted (or taken as granted: CheckOptions), none
	// missing and none whose review failed.
	Granted bool
	// PodSecurity is the namespace's enforced Pod Security level and the step pods it
	// would reject; nil when the namespace could not be read (Err says why).
	PodSecurity *PodSecurity
	// Status is the target's state (running, landing, landed, retiring) and how many
	// builds run; nil when it could not be read (Err says why). A target that is not
	// running is still OK: it is as an operator wants it.
	Status *Status
	// Runner is how the builds of a backend that mounts the runner where it can (run,
	// execute and the web node by default) get it; nil when the check assumed the
	// permissions granted (a heartbeat: it would list every node each time) or the
	// cluster's version could not be read (Err says why).
	Runner *RunnerMount
	// Advice is what the cluster's operator could change in Tekton for faster builds,
	// each a sentence; it never makes the report fail.
	Advice []string
	// Err is why the API server is unreachable, or, when it answers, why a question could
	// not be answered (then the permissions it concerns are neither granted nor missing).
	Err error
}

// OK reports whether the target answers, serves Tekton and grants every permission.
func (r CheckReport) OK() bool {
	return r.Reachable && r.TektonInstalled && len(r.Missing) == 0 && r.Err == nil && !r.PodSecurity.Blocks()
}

// MarshalJSON writes the report with Err as a string and with OK, for `-o json`.
func (r CheckReport) MarshalJSON() ([]byte, error) {
	out := struct {
		Target          string       `json:"target"`
		ServerVersion   string       `json:"serverVersion,omitempty"`
		Reachable       bool         `json:"reachable"`
		TektonInstalled bool         `json:"tektonInstalled"`
		Missing         []Permission `json:"missing"`
		PodSecurity     *PodSecurity `json:"podSecurity,omitempty"`
		Status          *Status      `json:"status,omitempty"`
		Runner          *RunnerMount `json:"runner,omitempty"`
		Advice          []string     `json:"advice,omitempty"`
		Error           string       `json:"error,omitempty"`
		OK              bool         `json:"ok"`
	}{
		Target:          r.Target,
		ServerVersion:   r.ServerVersion,
		Reachable:       r.Reachable,
		TektonInstalled: r.TektonInstalled,
		Missing:         r.Missing,
		PodSecurity:     r.PodSecurity,
		Status:          r.Status,
		Runner:          r.Runner,
		Advice:          r.Advice,
		OK:              r.OK(),
	}
	if out.Missing == nil {
		out.Missing = []Permission{}
	}
	if r.Err != nil {
		out.Error = r.Err.Error()
	}
	return json.Marshal(out)
}

// statusNeeds are the permissions Target.Status takes.
var statusNeeds = []Permission{{"", "configmaps", "", "get"}, {"tekton.dev", "pipelineruns", "", "list"}}

// checkConcurrency bounds the access reviews in flight, well under the client's burst.
const checkConcurrency = 8

// Check asks the cluster whether the target can run builds: whether its API server
// answers, whether it serves Tekton, and which Permissions the client's user lacks in the
// namespace. It reports rather than fails: a report with OK false says why.
func (t *Target) Check(ctx context.Context) CheckReport {
	return t.CheckWith(ctx, CheckOptions{})
}

// CheckOptions tune CheckWith.
type CheckOptions struct {
	// AssumeGranted takes every permission as granted, without asking: for a caller that
	// checks the target often (a worker's heartbeat) and found them all granted a moment
	// ago. Permissions are a few dozen access reviews, and change only when an operator
	// changes them; how builds get the runner (CheckReport.Runner, a listing of every
	// node) is not asked either; the rest is asked each time.
	AssumeGranted bool
}

// CheckWith is Check, tuned by o.
func (t *Target) CheckWith(ctx context.Context, o CheckOptions) CheckReport {
	r := CheckReport{Target: t.Name}
	disc := t.Kube.Discovery()
	v, err := withContext(ctx, disc.ServerVersion)
	if err != nil {
		r.Err = fmt.Errorf("asking the API server its version: %w", err)
		return r
	}
	r.Reachable, r.ServerVersion = true, v.GitVersion

	var lookupErr error
	resources, err := withContext(ctx, func() (*metav1.APIResourceList, error) {
		return disc.ServerResourcesForGroupVersion(tektonGroupVersion)
	})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		lookupErr = fmt.Errorf("looking up %s: %w", tektonGroupVersion, err)
	default:
		r.TektonInstalled = slices.ContainsFunc(resources.APIResources, func(res metav1.APIResource) bool {
			return res.Name == "pipelineruns"
		})
	}

	var reviewErr error
	if !o.AssumeGranted {
		allowed, failed := t.accessReviews(ctx, Permissions)
		for i, p := range Permissions {
			switch {
			case failed[i] != nil:
				// Neither granted nor missing. The first failure says why: the others are
				// most likely the same.
				if reviewErr == nil {
					reviewErr = failed[i]
				}
			case !allowed[i]:
				r.Missing = append(r.Missing, p)
			}
		}
	}
	r.Granted = reviewErr == nil && len(r.Missing) == 0
	flags, flagsErr := t.tektonFlags(ctx)
	r.Advice = flags.advice(t.oneNode(ctx))
	var ps *PodSecurity
	psErr := flagsErr
	if psErr == nil {
		ps, psErr = t.podSecurity(ctx, flags)
	}
	r.PodSecurity = ps
	if psErr == nil {
		t.setPodSecurity(ps)
	}
	var runnerErr error
	if !o.AssumeGranted {
		var m RunnerMount
		if m, runnerErr = t.runnerMount(ctx, v.GitVersion); runnerErr == nil {
			r.Runner = &m
		}
	}
	// The state, unless the permissions it takes are missing (and reported so).
	var statusErr error
	if !slices.ContainsFunc(r.Missing, func(p Permission) bool { return slices.Contains(statusNeeds, p) }) {
		var status Status
		if status, statusErr = t.Status(ctx); statusErr == nil {
			r.Status = &status
		}
	}
	r.Err = errors.Join(lookupErr, reviewErr, psErr, statusErr, runnerErr)
	return r
}

// accessReviews asks one SelfSubjectAccessReview per permission, a few at a time, and
// returns the answers in perms' order: whether it is allowed, or why the question failed.
func (t *Target) accessReviews(ctx context.Context, perms []Permission) (allowed []bool, failed []error) {
	allowed = make([]bool, len(perms))
	failed = make([]error, len(perms))
	sem := make(chan struct{}, checkConcurrency)
	var wg sync.WaitGroup
	for i, p := range perms {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			review := &authorizationv1.SelfSubjectAccessReview{
				Spec: authorizationv1.SelfSubjectAccessReviewSpec{
					ResourceAttributes: &authorizationv1.ResourceAttributes{
						Namespace:   t.Namespace,
						Group:       p.Group,
						Resource:    p.Resource,
						Subresource: p.Subresource,
						Verb:        p.Verb,
					},
				},
			}
			got, err := t.Kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
			if err != nil {
				failed[i] = fmt.Errorf("asking whether %s is allowed in namespace %s: %w", p, t.Namespace, err)
				return
			}
			allowed[i] = got.Status.Allowed
		})
	}
	wg.Wait()
	return allowed, failed
}

// withContext runs f, which takes no context (discovery calls do not), and stops waiting
// for it when ctx ends; f then finishes on its own, within the client's timeout.
func withContext[T any](ctx context.Context, f func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := f()
		done <- result{v, err}
	}()
	select {
	case res := <-done:
		return res.v, res.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}
