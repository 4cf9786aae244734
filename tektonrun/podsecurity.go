package tektonrun

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"

	"github.com/concourse-tekton/concourse-tekton/translate"
)

// PodSecurity is what the namespace's Pod Security admission enforces, and which kinds
// of step pod it would reject.
type PodSecurity struct {
	// Level and Version are the namespace's enforced level and version
	// (pod-security.kubernetes.io/enforce and -version): privileged when it sets none.
	Level   string `json:"level"`
	Version string `json:"version"`
	// Rejected are the kinds of step pod it forbids, each with why.
	Rejected []RejectedSteps `json:"rejected"`
	// Unknown says why the level could not be read (the namespace is not readable: a
	// user granted only the namespace's own permissions); then Level is "unknown".
	Unknown string `json:"unknown,omitempty"`
	// TektonSecurityContext tells whether Tekton gives its own init containers a security
	// context "restricted" admits (its feature flag set-security-context); unknown, as
	// Tekton's default, is false.
	TektonSecurityContext bool `json:"tektonSecurityContext"`
}

// Tekton's feature flags: the ConfigMap of its installation; the flag that gives its
// init containers Pod Security "restricted" security contexts; the flag that makes each
// pod's first step wait until the controller marked the pod ready; the flag that gives
// each PipelineRun with a volume an affinity-assistant pod to keep its pods on one node
// (Tekton's default "workspaces"; "pipelineruns" and "isolate-pipelinerun" too, not
// "disabled").
const (
	tektonNamespace        = "tekton-pipelines"
	tektonFeatureFlags     = "feature-flags"
	flagSetSecurityContext = "set-security-context"
	flagInjectedSidecars   = "running-in-environment-with-injected-sidecars"
	flagCoschedule         = "coschedule"
)

// tektonFlags are the feature flags of Tekton's installation that the checks read.
type tektonFlags struct {
	read bool // the ConfigMap was read: else every flag is Tekton's default
	// setSecurityContext: set-security-context (Tekton's default false).
	setSecurityContext bool
	// injectedSidecars: running-in-environment-with-injected-sidecars (default true).
	injectedSidecars bool
	// assistants: coschedule gives each build an affinity-assistant pod.
	assistants bool
}

// tektonFlags reads Tekton's feature flags where they can be read (a ConfigMap of
// Tekton's own namespace, which a user of the namespace alone may not read): else
// Tekton's defaults, unread.
func (t *Target) tektonFlags(ctx context.Context) (tektonFlags, error) {
	f := tektonFlags{injectedSidecars: true, assistants: true}
	cm, err := t.Kube.CoreV1().ConfigMaps(tektonNamespace).Get(ctx, tektonFeatureFlags, metav1.GetOptions{})
	if err != nil {
		return f, ctx.Err()
	}
	flag := func(name string, def bool) bool {
		v, ok := cm.Data[name]
		if !ok {
			return def
		}
		return strings.EqualFold(strings.TrimSpace(v), "true")
	}
	f.read = true
	f.setSecurityContext = flag(flagSetSecurityContext, false)
	f.injectedSidecars = flag(flagInjectedSidecars, true)
	if v, ok := cm.Data[flagCoschedule]; ok {
		f.assistants = strings.TrimSpace(v) != "disabled"
	}
	return f, nil
}

// oneNode tells whether the cluster has one node: its nodes could be listed, and there
// was one.
func (t *Target) oneNode(ctx context.Context) bool {
	nodes, err := t.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{Limit: 2})
	return err == nil && len(nodes.Items) == 1 && nodes.Continue == ""
}

// advice is what the cluster's operator could change in Tekton for faster builds, on a
// cluster of one node or more (oneNode).
func (f tektonFlags) advice(oneNode bool) []string {
	if !f.read {
		return nil
	}
	var out []string
	if f.injectedSidecars {
		out = append(out, "each step pod waits for Tekton's controller to mark it ready before its first step "+
			"("+flagInjectedSidecars+": \"true\", Tekton's default): unless the cluster injects sidecars "+
			"into pods (a service mesh such as Istio), set it to \"false\" in ConfigMap "+tektonNamespace+"/"+
			tektonFeatureFlags+" and steps start seconds sooner")
	}
	if f.assistants && oneNode {
		out = append(out, "each build runs an affinity-assistant pod besides its steps, to keep them on one node "+
			"("+flagCoschedule+", Tekton's default \"workspaces\"): on a cluster of one node, set it to "+
			"\"disabled\" in ConfigMap "+tektonNamespace+"/"+tektonFeatureFlags+" and each build runs a pod fewer "+
			"(not where nodes may be added: a build's pods then need it to share their volume)")
	}
	return out
}

// RejectedSteps is one kind of step pod a namespace forbids, and why.
type RejectedSteps struct {
	Steps   string   `json:"steps"`
	Reasons []string `json:"reasons"`
}

// PrivilegedRefused says why the namespace refuses privileged steps' pods ("": it
// admits them, or its level is unknown).
func (p *PodSecurity) PrivilegedRefused() string {
	if p == nil {
		return ""
	}
	for _, r := range p.Rejected {
		if r.Steps == translate.PrivilegedSteps {
			return fmt.Sprintf("namespace enforces Pod Security %s: %s", p.Level, strings.Join(r.Reasons, "; "))
		}
	}
	return ""
}

// LastPodSecurity is what the target's latest check found of its namespace's Pod Security
// (nil: no check found it yet).
func (t *Target) LastPodSecurity() *PodSecurity {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lastPodSecurity
}

func (t *Target) setPodSecurity(ps *PodSecurity) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lastPodSecurity = ps
}

// Blocks tells whether the namespace forbids steps every pipeline has (not only the
// privileged ones the pipeline asks for).
func (p *PodSecurity) Blocks() bool {
	return p != nil && len(p.Rejected) > 1
}

// podSecurity reads the namespace's enforced Pod Security level and evaluates every kind
// of step pod against it with Kubernetes' own checks.
func (t *Target) podSecurity(ctx context.Context, flags tektonFlags) (*PodSecurity, error) {
	ns, err := t.Kube.CoreV1().Namespaces().Get(ctx, t.Namespace, metav1.GetOptions{})
	if apierrors.IsForbidden(err) {
		return &PodSecurity{Level: "unknown", Unknown: fmt.Sprintf("namespace %s cannot be read (get namespaces is not granted)", t.Namespace)}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading namespace %s for its Pod Security level: %w", t.Namespace, err)
	}
	lv, err := psaapi.ParseLevel(levelOr(ns.Labels[psaapi.EnforceLevelLabel], string(psaapi.LevelPrivileged)))
	if err != nil {
		return nil, fmt.Errorf("namespace %s: %s: %w", t.Namespace, psaapi.EnforceLevelLabel, err)
	}
	ver, err := psaapi.ParseVersion(levelOr(ns.Labels[psaapi.EnforceVersionLabel], "latest"))
	if err != nil {
		return nil, fmt.Errorf("namespace %s: %s: %w", t.Namespace, psaapi.EnforceVersionLabel, err)
	}
	ps := &PodSecurity{Level: string(lv), Version: ver.String(), Rejected: []RejectedSteps{}, TektonSecurityContext: flags.setSecurityContext}
	eval, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		return nil, err
	}
	for _, kind := range translate.StepKinds(translate.DefaultRunnerImage) {
		spec := translate.PodSpec(kind.Task, ps.TektonSecurityContext)
		var reasons []string
		for _, r := range eval.EvaluatePod(psaapi.LevelVersion{Level: lv, Version: ver}, &ns.ObjectMeta, &spec) {
			if !r.Allowed {
				reasons = append(reasons, r.ForbiddenReason+" ("+r.ForbiddenDetail+")")
			}
		}
		if len(reasons) > 0 {
			ps.Rejected = append(ps.Rejected, RejectedSteps{Steps: kind.Name, Reasons: reasons})
		}
	}
	return ps, nil
}

func levelOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
