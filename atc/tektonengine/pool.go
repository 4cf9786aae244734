package tektonengine

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/concourse/concourse"
	"github.com/concourse/concourse/atc"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/concourse-tekton/concourse-tekton/concourse/event"
	"github.com/concourse-tekton/concourse-tekton/tektonrun"
	"github.com/concourse-tekton/concourse-tekton/tektonrun/buildevents"
)

// Worker is one target of the web node as the ATC knows it: a worker of that name and
// those tags, whose builds run as Runs on Target.
type Worker struct {
	Name string
	Tags []string
	// Team is the team whose worker this is (empty: every team's).
	Team   string
	Target *tektonrun.Target
	Runs   Runs
}

// Pool runs each build on one of several targets, chosen as Concourse chooses a worker
// for a step (atc/worker/pool.go): one that is running and whose tags match the steps'
// (a step with tags needs a worker with all of them; a step without, a worker without
// tags); among those, the one running the fewest builds (Concourse's
// fewest-build-containers), the first given on a tie. A build is one PipelineRun, so it
// runs whole on one target: a build whose steps have tags runs on a target with every
// tag of its steps, and its untagged steps run there too. A build whose run exists on a
// target (started before the web node restarted) is attached to there. Its steps show
// the worker as the one selected (the run says the node its pod ran on). A target that
// is a team's worker (Worker.Team) takes only that team's builds, and the team's builds
// run only there while one of its own is running and matches (Concourse's team
// workers). A build with a privileged step runs only where the namespace admits
// privileged pods. When no target is running and matches, the build errors as a
// Concourse step does, with "no workers satisfying: ..." (NoWorkersError).
type Pool struct {
	Workers []Worker
}

var _ Runs = (*Pool)(nil)

// Start starts the build on the target Pool chooses, or attaches to its run.
func (p *Pool) Start(ctx context.Context, planJSON []byte, ref BuildRef) (Run, error) {
	specs, tags, matching, err := p.matching(planJSON, ref.team())
	if err != nil {
		return nil, err
	}
	// Only a matching target can have been given the build before (unless the workers'
	// tags changed since: then the build starts again on one that matches).
	for _, w := range matching {
		found, err := w.runs(ctx, ref)
		if err != nil {
			return nil, err
		}
		if found {
			return w.start(ctx, planJSON, ref)
		}
	}
	candidates, unreadable := candidates(ctx, matching)
	for _, w := range ownFirst(candidates, ref.team()) {
		run, err := w.start(ctx, planJSON, ref)
		if errors.Is(err, tektonrun.ErrNotRunning) {
			continue // landed since
		}
		return run, err
	}
	if unreadable != nil {
		return nil, unreadable
	}
	return nil, noWorkers(specs, tags, p.running(ctx, ref.team()))
}

// matching are the workers of the team's that take its builds and whose tags match a
// build's steps', with what the steps need.
func (p *Pool) matching(planJSON []byte, team string) ([]workerSpec, []string, []*Worker, error) {
	var plan atc.Plan
	if err := json.Unmarshal(planJSON, &plan); err != nil {
		return nil, nil, nil, fmt.Errorf("decoding the build plan: %w", err)
	}
	specs := workerSpecs(&plan)
	tags := neededTags(specs)
	var matching []*Worker
	var refused []string
	privileged := slices.IndexFunc(specs, func(s workerSpec) bool { return s.privileged })
	for i := range p.Workers {
		w := &p.Workers[i]
		if !w.serves(team) || !w.satisfies(specs, tags) {
			continue
		}
		if privileged >= 0 {
			// A namespace whose Pod Security refuses privileged pods (as its latest check
			// found) cannot run the build: it is refused now, not when its pod is.
			if why := w.Target.LastPodSecurity().PrivilegedRefused(); why != "" {
				refused = append(refused, fmt.Sprintf("worker %s's %s", w.Name, why))
				continue
			}
		}
		matching = append(matching, w)
	}
	if len(matching) == 0 && len(refused) > 0 {
		s := specs[privileged]
		return specs, tags, nil, &NoWorkersError{PlanID: s.plan, Spec: s.description(), Refused: "privileged: " + strings.Join(refused, "; ")}
	}
	return specs, tags, matching, nil
}

// candidates are the workers of matching that run, the one running the fewest builds
// first (the first given on a tie). A target that cannot be read is left out, as
// Concourse leaves out a stalled worker; its error is the build's when no other target
// can take it (unreadable).
func candidates(ctx context.Context, matching []*Worker) (running []*Worker, unreadable error) {
	type candidate struct {
		w       *Worker
		running int
	}
	var candidates []candidate
	for _, w := range matching {
		state, err := w.Target.State(ctx)
		if err != nil {
			unreadable = cmp.Or(unreadable, err)
			continue
		}
		if state == tektonrun.StateRunning {
			candidates = append(candidates, candidate{w: w})
		}
	}
	if len(candidates) > 1 {
		// Only a choice needs the running builds counted.
		counted := candidates[:0]
		for _, c := range candidates {
			st, err := c.w.Target.Status(ctx)
			if err != nil {
				unreadable = cmp.Or(unreadable, err)
				continue
			}
			c.running = st.Running
			counted = append(counted, c)
		}
		candidates = counted
	}
	slices.SortStableFunc(candidates, func(a, b candidate) int { return a.running - b.running })
	for _, c := range candidates {
		running = append(running, c.w)
	}
	return running, unreadable
}

// start starts the build on the worker's target: its steps show the worker as theirs
// (selected worker: <worker>), as Concourse's do, where the run says the node.
func (w *Worker) start(ctx context.Context, planJSON []byte, ref BuildRef) (Run, error) {
	run, err := w.Runs.Start(ctx, planJSON, ref)
	if err != nil {
		return nil, err
	}
	return workerRun{Run: run, worker: w.Name}, nil
}

// workerRun is a run on a worker of a Pool.
type workerRun struct {
	Run
	worker string
}

func (r workerRun) Worker() string { return r.worker }

func (r workerRun) Events(ctx context.Context, emit func(buildevents.Event) error) (event.BuildStatus, error) {
	return r.Run.Events(ctx, func(e buildevents.Event) error {
		if sw, ok := e.Event.(event.SelectedWorker); ok {
			sw.WorkerName = r.worker
			e.Event = sw
		}
		return emit(e)
	})
}

// runs tells whether the build's run is on the worker's target.
func (w *Worker) runs(ctx context.Context, ref BuildRef) (bool, error) {
	name := ref.Meta.RunName()
	pr, err := w.Target.Tekton.TektonV1().PipelineRuns(w.Target.Namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("looking for the run of build %d on worker %s (%s/%s): %w", ref.ID, w.Name, w.Target.Namespace, name, err)
	}
	switch owner := pr.Annotations[AnnotationBuildID]; owner {
	case strconv.Itoa(ref.ID):
		return true, nil
	case "":
		// Created, not claimed yet (the web node stopped in between): this build's unless
		// it was made before the build started.
		return !createdBefore(pr, ref), nil
	}
	return false, nil
}

// running are the workers that take the team's builds, for NoWorkersError; an error
// reading a target's state leaves it out.
func (p *Pool) running(ctx context.Context, team string) []*Worker {
	var running []*Worker
	for i := range p.Workers {
		w := &p.Workers[i]
		if !w.serves(team) {
			continue
		}
		if state, err := w.Target.State(ctx); err == nil && state == tektonrun.StateRunning {
			running = append(running, w)
		}
	}
	return running
}

// workerSpec is what a step needs of its worker, as Concourse's worker.Spec: a base
// resource type (a get, put or check, and a task's image_resource check), a platform (a
// task), tags.
type workerSpec struct {
	plan         atc.PlanID
	resourceType string
	platform     string
	tags         []string
	// privileged: the step's container is privileged (a task's privileged: true, a
	// resource type's privileged: true).
	privileged bool
}

// description is worker.Spec.Description.
func (s workerSpec) description() string {
	var attrs []string
	if s.resourceType != "" {
		attrs = append(attrs, fmt.Sprintf("resource type '%s'", s.resourceType))
	}
	if s.platform != "" {
		attrs = append(attrs, fmt.Sprintf("platform '%s'", s.platform))
	}
	for _, tag := range s.tags {
		attrs = append(attrs, fmt.Sprintf("tag '%s'", tag))
	}
	return strings.Join(attrs, ", ")
}

// workerSpecs are the specs of the plan's steps that need a worker, in the plan's order:
// the first is the first step to run.
func workerSpecs(plan *atc.Plan) []workerSpec {
	var specs []workerSpec
	plan.Each(func(p *atc.Plan) {
		switch {
		case p.Get != nil:
			specs = append(specs, workerSpec{plan: p.ID, resourceType: p.Get.TypeImage.BaseType, tags: p.Get.Tags, privileged: p.Get.TypeImage.Privileged})
		case p.Put != nil:
			specs = append(specs, workerSpec{plan: p.ID, resourceType: p.Put.TypeImage.BaseType, tags: p.Put.Tags, privileged: p.Put.TypeImage.Privileged})
		case p.Check != nil:
			specs = append(specs, workerSpec{plan: p.ID, resourceType: p.Check.TypeImage.BaseType, tags: p.Check.Tags, privileged: p.Check.TypeImage.Privileged})
		case p.Task != nil:
			s := workerSpec{plan: p.ID, tags: p.Task.Tags, privileged: p.Task.Privileged}
			if c := p.Task.Config; c != nil {
				// A task's image_resource is checked first, in a container of its type.
				if c.ImageResource != nil {
					s.resourceType = c.ImageResource.Type
				} else {
					s.platform = c.Platform
				}
			}
			specs = append(specs, s)
		}
	})
	return specs
}

// neededTags are the tags of all the steps, each once, sorted.
func neededTags(specs []workerSpec) []string {
	var tags []string
	for _, s := range specs {
		tags = append(tags, s.tags...)
	}
	slices.Sort(tags)
	return slices.Compact(tags)
}

// serves tells whether the worker takes the team's builds: its own team's, or every
// team's.
func (w *Worker) serves(team string) bool {
	return tektonrun.Serves(w.Team, team)
}

// ownFirst are the workers of running that are the team's own, when it has any, else
// the others (tektonrun.OwnFirst).
func ownFirst(running []*Worker, team string) []*Worker {
	return tektonrun.OwnFirst(running, func(w *Worker) string { return w.Team }, team)
}

// satisfies tells whether the worker can run a build of those steps, needing those tags
// (see Pool).
func (w *Worker) satisfies(specs []workerSpec, tags []string) bool {
	for _, s := range specs {
		if s.platform != "" && s.platform != "linux" {
			return false
		}
	}
	return tektonrun.FitsTags(w.Tags, tags)
}

// NoWorkersError is the error of a build no running worker can run: Concourse's
// NoCompatibleWorkersError, at the first step no running worker matches (the first step
// with tags when each matches one but none all), which the build's error event names.
type NoWorkersError struct {
	PlanID atc.PlanID
	// Spec is the step's worker spec, as Concourse describes it.
	Spec string
	// Refused, when not empty, says why the workers that match otherwise cannot run the
	// step: they refuse privileged containers (a Concourse worker never does).
	Refused string
}

func (e *NoWorkersError) Error() string {
	msg := fmt.Sprintf("no workers satisfying: %s, version: '%s'", e.Spec, concourse.WorkerVersion)
	if e.Refused != "" {
		msg += " (" + e.Refused + ")"
	}
	return msg
}

// noWorkers is the NoWorkersError of a build of those steps, needing those tags, given
// the running workers.
func noWorkers(specs []workerSpec, tags []string, running []*Worker) error {
	if len(specs) == 0 {
		return &NoWorkersError{}
	}
	for _, s := range specs {
		if !slices.ContainsFunc(running, func(w *Worker) bool { return w.satisfies([]workerSpec{s}, s.tags) }) {
			return &NoWorkersError{PlanID: s.plan, Spec: s.description()}
		}
	}
	// Each step has a worker, none has them all: the first tagged step, needing all.
	first := specs[0]
	for _, s := range specs {
		if len(s.tags) > 0 {
			first = s
			break
		}
	}
	first.tags = tags
	return &NoWorkersError{PlanID: first.plan, Spec: first.description()}
}
