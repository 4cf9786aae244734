package tektonrun

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"knative.dev/pkg/apis"

	"github.com/concourse-tekton/concourse-tekton/internal/pages"
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// A target's state is Concourse's worker states: running (it takes new builds), landing
// (no new build starts; the running ones finish), landed (landing, and none runs),
// retiring (landing, then everything of ours goes: Retire). What an operator set is a
// ConfigMap of the namespace, StateConfigMap, which every starter of builds reads (run,
// execute, the ATC's engine, its worker registrar); without it the target is running.
type TargetState string

const (
	StateRunning  TargetState = "running"
	StateLanding  TargetState = "landing"
	StateLanded   TargetState = "landed"
	StateRetiring TargetState = "retiring"
)

// StateConfigMap is the ConfigMap that holds what an operator set of a target's state,
// in its key "state" (landing or retiring), with when in "since".
const StateConfigMap = "concourse-tekton-target"

// ErrNotRunning is the error of a build started on a target that is not running; errors.Is
// finds it in Submit's.
var ErrNotRunning = errors.New("the target takes no new builds")

// Status is a target's state, and how many of its builds run.
type Status struct {
	State TargetState `json:"state"`
	// Since is when an operator landed or retired it (zero: running).
	Since time.Time `json:"since,omitzero"`
	// Running is how many of its builds have not ended.
	Running int `json:"running"`
}

// set is what an operator set: landing, retiring, or "" (running).
func (t *Target) set(ctx context.Context) (TargetState, time.Time, error) {
	cm, err := t.Kube.CoreV1().ConfigMaps(t.Namespace).Get(ctx, StateConfigMap, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return StateRunning, time.Time{}, nil
	case err != nil:
		return "", time.Time{}, fmt.Errorf("reading the state of target %s: %w", t.Name, err)
	}
	since, _ := time.Parse(time.RFC3339, cm.Data["since"])
	switch s := TargetState(cm.Data["state"]); s {
	case StateLanding, StateRetiring:
		return s, since, nil
	default:
		return "", time.Time{}, fmt.Errorf("target %s: ConfigMap %s says state %q, neither %s nor %s", t.Name, StateConfigMap, s, StateLanding, StateRetiring)
	}
}

// State is the target's state as an operator set it (running, landing or retiring): one
// read, where Status also counts the running builds.
func (t *Target) State(ctx context.Context) (TargetState, error) {
	state, _, err := t.set(ctx)
	return state, err
}

// Status is the target's state: as an operator set it, landed once a landing target
// runs no build.
func (t *Target) Status(ctx context.Context) (Status, error) {
	state, since, err := t.set(ctx)
	if err != nil {
		return Status{}, err
	}
	running, err := t.runningBuilds(ctx)
	if err != nil {
		return Status{}, err
	}
	if state == StateLanding && running == 0 {
		state = StateLanded
	}
	return Status{State: state, Since: since, Running: running}, nil
}

// runningBuilds counts the target's builds that have not ended.
func (t *Target) runningBuilds(ctx context.Context) (int, error) {
	n := 0
	err := pages.Each(ctx, oursPaged(), "PipelineRuns", func(opts metav1.ListOptions) (string, error) {
		l, err := t.Tekton.TektonV1().PipelineRuns(t.Namespace).List(ctx, opts)
		if err != nil {
			return "", err
		}
		for _, pr := range l.Items {
			if c := pr.Status.GetCondition(apis.ConditionSucceeded); c == nil || c.IsUnknown() {
				n++
			}
		}
		return l.Continue, nil
	})
	if err != nil {
		return 0, fmt.Errorf("counting the running builds of target %s: %w", t.Name, err)
	}
	return n, nil
}

// oursPaged lists the objects of ours, 500 a page.
func oursPaged() metav1.ListOptions {
	return paged(runspec.LabelManagedBy + "=" + runspec.ManagedBy)
}

// paged lists the objects a label selector selects, 500 a page.
func paged(selector string) metav1.ListOptions {
	return metav1.ListOptions{LabelSelector: selector, Limit: 500}
}

// Usage is what a target holds of ours, as Concourse counts a worker's: the pods of its
// builds that have not ended (containers) and its volumes.
type Usage struct {
	Containers int `json:"containers"`
	Volumes    int `json:"volumes"`
}

// Usage counts the target's pods that have not ended and its volumes, ours alone: the pods
// of builds (Tekton gives the pods it makes a managed-by label of its own, but keeps the
// build's), and the claims of ours.
func (t *Target) Usage(ctx context.Context) (Usage, error) {
	var u Usage
	err := pages.Each(ctx, paged(buildSelector), "pods", func(opts metav1.ListOptions) (string, error) {
		l, err := t.Kube.CoreV1().Pods(t.Namespace).List(ctx, opts)
		if err != nil {
			return "", err
		}
		for _, p := range l.Items {
			if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed && p.DeletionTimestamp == nil {
				u.Containers++
			}
		}
		return l.Continue, nil
	})
	if err == nil {
		err = pages.Each(ctx, oursPaged(), "PersistentVolumeClaims", func(opts metav1.ListOptions) (string, error) {
			l, err := t.Kube.CoreV1().PersistentVolumeClaims(t.Namespace).List(ctx, opts)
			if err != nil {
				return "", err
			}
			u.Volumes += len(l.Items)
			return l.Continue, nil
		})
	}
	if err != nil {
		return Usage{}, fmt.Errorf("counting the containers and volumes of target %s: %w", t.Name, err)
	}
	return u, nil
}

// acceptsBuilds fails with ErrNotRunning unless the target is running.
func (t *Target) acceptsBuilds(ctx context.Context) error {
	state, since, err := t.set(ctx)
	if err != nil {
		return err
	}
	if state != StateRunning {
		return fmt.Errorf("%w: target %s is %s since %s (concourse-tekton land --undo takes builds again)", ErrNotRunning, t.Name, state, since.Format(time.RFC3339))
	}
	return nil
}

// Land makes the target take no new build; those running finish. Landing one that is
// retiring changes nothing.
func (t *Target) Land(ctx context.Context) error {
	return t.setState(ctx, StateLanding)
}

// Resume makes a landed (or landing) target take builds again. A retiring one stays
// retiring.
func (t *Target) Resume(ctx context.Context) error {
	state, _, err := t.set(ctx)
	if err != nil || state == StateRunning {
		return err
	}
	if state == StateRetiring {
		return fmt.Errorf("target %s is retiring: it takes no builds until Retire has removed everything", t.Name)
	}
	err = t.Kube.CoreV1().ConfigMaps(t.Namespace).Delete(ctx, StateConfigMap, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("resuming target %s: %w", t.Name, err)
	}
	return nil
}

// setState records state (landing or retiring) unless the target is retiring already.
func (t *Target) setState(ctx context.Context, state TargetState) error {
	cms := t.Kube.CoreV1().ConfigMaps(t.Namespace)
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: StateConfigMap, Labels: map[string]string{runspec.LabelManagedBy: runspec.ManagedBy}},
		Data:       map[string]string{"state": string(state), "since": time.Now().UTC().Format(time.RFC3339)},
	}
	_, err := cms.Create(ctx, cm, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		if err != nil {
			return fmt.Errorf("%s target %s: %w", verbing(state), t.Name, err)
		}
		return nil
	}
	old, err := cms.Get(ctx, StateConfigMap, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("%s target %s: %w", verbing(state), t.Name, err)
	}
	if TargetState(old.Data["state"]) == state || TargetState(old.Data["state"]) == StateRetiring {
		return nil
	}
	cm.ResourceVersion = old.ResourceVersion
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("%s target %s: %w", verbing(state), t.Name, err)
	}
	return nil
}

func verbing(s TargetState) string {
	if s == StateRetiring {
		return "retiring"
	}
	return "landing"
}

// RetireProgress is told what Retire is waiting for and what it removed.
type RetireProgress func(format string, args ...any)

// Retire takes the target out of service: it lands it as retiring, waits until none of
// its builds runs (polling every interval), then deletes everything of ours in the
// namespace (by the label app.kubernetes.io/managed-by=concourse-tekton: builds with
// what they own, Pipelines, Tasks, volumes, Secrets, ConfigMaps, pods), the state last,
// and waits until they are gone. Afterwards the namespace is as if no build had run: a
// new build may start there again.
func (t *Target) Retire(ctx context.Context, interval time.Duration, progress RetireProgress) error {
	if progress == nil {
		progress = func(string, ...any) {}
	}
	if err := t.setState(ctx, StateRetiring); err != nil {
		return err
	}
	if state, _, err := t.set(ctx); err != nil || state != StateRetiring {
		return errors.Join(err, fmt.Errorf("target %s did not become retiring", t.Name))
	}
	last := -1
	err := wait.PollUntilContextCancel(ctx, interval, true, func(ctx context.Context) (bool, error) {
		n, err := t.runningBuilds(ctx)
		if err != nil {
			return false, err
		}
		if n != last && n > 0 {
			progress("waiting for %d running builds to end", n)
		}
		last = n
		return n == 0, nil
	})
	if err != nil {
		return fmt.Errorf("retiring target %s: %w", t.Name, err)
	}
	ours := metav1.ListOptions{LabelSelector: runspec.LabelManagedBy + "=" + runspec.ManagedBy}
	background := metav1.DeletePropagationBackground
	del := metav1.DeleteOptions{PropagationPolicy: &background}
	ns := t.Namespace
	tk, kube := t.Tekton.TektonV1(), t.Kube.CoreV1()
	kinds := []struct {
		name  string
		del   func() error
		count func() (int, error)
	}{
		{"PipelineRuns", func() error { return tk.PipelineRuns(ns).DeleteCollection(ctx, del, ours) },
			func() (int, error) { l, err := tk.PipelineRuns(ns).List(ctx, ours); return lenOr(l, err) }},
		{"Pipelines", func() error { return tk.Pipelines(ns).DeleteCollection(ctx, del, ours) },
			func() (int, error) { l, err := tk.Pipelines(ns).List(ctx, ours); return lenOr(l, err) }},
		{"Tasks", func() error { return tk.Tasks(ns).DeleteCollection(ctx, del, ours) },
			func() (int, error) { l, err := tk.Tasks(ns).List(ctx, ours); return lenOr(l, err) }},
		{"pods", func() error { return kube.Pods(ns).DeleteCollection(ctx, del, ours) },
			func() (int, error) { l, err := kube.Pods(ns).List(ctx, ours); return lenOr(l, err) }},
		{"PersistentVolumeClaims", func() error { return kube.PersistentVolumeClaims(ns).DeleteCollection(ctx, del, ours) },
			func() (int, error) { l, err := kube.PersistentVolumeClaims(ns).List(ctx, ours); return lenOr(l, err) }},
		{"Secrets", func() error { return kube.Secrets(ns).DeleteCollection(ctx, del, ours) },
			func() (int, error) { l, err := kube.Secrets(ns).List(ctx, ours); return lenOr(l, err) }},
	}
	for _, k := range kinds {
		if err := k.del(); err != nil {
			return fmt.Errorf("retiring target %s: deleting its %s: %w", t.Name, k.name, err)
		}
	}
	// ConfigMaps: the archives, and the state last of all.
	notState := metav1.ListOptions{LabelSelector: ours.LabelSelector, FieldSelector: "metadata.name!=" + StateConfigMap}
	if err := kube.ConfigMaps(ns).DeleteCollection(ctx, del, notState); err != nil {
		return fmt.Errorf("retiring target %s: deleting its ConfigMaps: %w", t.Name, err)
	}
	kinds = append(kinds, struct {
		name  string
		del   func() error
		count func() (int, error)
	}{"ConfigMaps", nil, func() (int, error) { l, err := kube.ConfigMaps(ns).List(ctx, notState); return lenOr(l, err) }})
	for _, k := range kinds {
		err := wait.PollUntilContextCancel(ctx, interval, true, func(context.Context) (bool, error) {
			n, err := k.count()
			return n == 0, err
		})
		if err != nil {
			return fmt.Errorf("retiring target %s: waiting for its %s to go: %w", t.Name, k.name, err)
		}
		progress("removed its %s", k.name)
	}
	if err := kube.ConfigMaps(ns).Delete(ctx, StateConfigMap, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("retiring target %s: %w", t.Name, err)
	}
	return nil
}

// lenOr is the length of a list, or its error.
func lenOr(l runtime.Object, err error) (int, error) {
	if err != nil {
		return 0, err
	}
	return meta.LenList(l), nil
}
