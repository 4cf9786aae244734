package tektonrun

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/event"
	"github.com/concourse-tekton/concourse-tekton/concourse/vars"
	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/tektonrun/buildevents"
	"github.com/concourse-tekton/concourse-tekton/tektonrun/podexec"
	"github.com/concourse-tekton/concourse-tekton/translate"
)

// Backend runs Concourse build plans on one target: for the ATC, a Kubernetes worker. It
// takes the plans the ATC's planner makes (atc.Plan JSON), runs each as one PipelineRun,
// and gives back the build's events as the ATC's. It is safe for concurrent use; Close it
// to stop its watches.
type Backend struct {
	client *Client
	// defaults are the compile options every build starts from: images, scheduling,
	// volumes. A build's names come from its BuildMeta.
	defaults translate.Options
	// autoRunnerVolume: builds mount the runner's image where the cluster can
	// (MountRunnerWhereSupported).
	autoRunnerVolume bool
}

// NewBackend returns a backend of the target; defaults say how plans are compiled
// (translate.Options: runner and resource images, service account, storage class, ...).
func NewBackend(t *Target, defaults translate.Options) *Backend {
	return &Backend{client: NewClient(t), defaults: defaults}
}

// Close stops the backend's watches and log streams.
func (b *Backend) Close() { b.client.Close() }

// SetLogSource makes the backend read its builds' logs from src (a log store kept
// outside the cluster, a harness whose simulated nodes serve none) instead of the API's
// pods/log. Call it before the backend follows a build.
func (b *Backend) SetLogSource(src LogSource) { b.client.logs = src }

// CheckOverExec makes the checks of check sessions go through pods/exec (the API server
// and the kubelet) rather than over the pod network to their pods' runners: for a
// process that cannot reach the pods' IPs. Call it before the backend runs a check.
func (b *Backend) CheckOverExec() { b.client.pods.ExecChecks = true }

// SimulateSessions makes the backend reach the runners of its check sessions' pods
// through stream in place of pods/exec and at host's address in place of their IPs: for
// a harness whose simulated nodes (kwok) run no containers, which serves the sessions
// elsewhere. Call it before the backend runs a check.
func (b *Backend) SimulateSessions(stream podexec.Streamer, host func(*corev1.Pod) string) {
	b.client.pods.Stream, b.client.pods.SessionHost = stream, host
}

// Client is the backend's cluster client.
func (b *Backend) Client() *Client { return b.client }

// BuildMeta names a build: its team, pipeline and job (a one-off build has none: it is
// named after its pipeline "one-off"), and its name. An empty Build is the job's next
// build number on the target (the CLI's run); the ATC gives its own.
type BuildMeta struct {
	Team     string
	Pipeline string
	Job      string
	Build    string
	// InstanceVars are the instance vars of an instanced pipeline (none: not one). Two
	// instances of a pipeline, like two teams' pipelines of one name, never share a
	// Pipeline or a PipelineRun (see translate.Scope).
	InstanceVars map[string]any
	// Retention is the job's build log retention, which gc applies to its builds (nil:
	// the target's defaults).
	Retention *concourse.BuildLogRetention
	// The ATC's IDs of the team, pipeline, job and build, and who created the build, for
	// its steps (translate.Options); zero when the build is no web node's.
	TeamID, PipelineID, JobID, BuildID int64
	CreatedBy                          string
	// Check says the build is a check build (translate.Options.Check).
	Check bool
}

// withDefaults fills in the names a one-off build lacks.
func (m BuildMeta) withDefaults() BuildMeta {
	m.Team = cmp.Or(m.Team, "main")
	m.Pipeline = cmp.Or(m.Pipeline, "one-off")
	m.Job = cmp.Or(m.Job, "build")
	return m
}

// RunName is the name of the build's PipelineRun (Build must be set): what Run names it
// on any target, so that a starter of builds on several targets finds the target a build
// runs on.
func (m BuildMeta) RunName() string {
	m = m.withDefaults()
	return translate.RunName(translate.Scope(m.Team, m.Pipeline, m.InstanceVars), m.Job, m.Build)
}

// Build is a build on the cluster.
type Build struct {
	// Name is its PipelineRun's name, in Namespace.
	Name      string
	Namespace string
	// Meta is the build's team, pipeline, job and name.
	Meta BuildMeta
	// Existed says the build was there already: Run attached to it.
	Existed bool
	// Compiled is what Run compiled the plan into (the objects it created, or would have
	// had the build not existed); nil for a build from Attach.
	Compiled *translate.Result
	// Warnings say what the build will lack (see Submitted).
	Warnings []string
	client   *Client
	// creds are the build's supplied credentials (WithCredentials), which the observer
	// of its followers that makes the vars Secrets of its task files needs.
	creds vars.Variables
}

// RunOption changes how Run starts a build.
type RunOption func(*runConfig)

type runConfig struct {
	oneOff     bool
	uploads    podexec.ArtifactSource
	creds      vars.Variables
	taskCaches map[string]map[string]int
}

// WithTaskCaches has the build's tasks use the records an ATC holds of the job's task
// caches (translate.Options.TaskCaches): by step name, the ID of each cache path's
// record; a cache whose record is gone (fly clear-task-cache) starts empty. Once the
// build has ended, Build.TaskCaches lists the caches its tasks used, for the ATC to
// record those it has no record of. nil records none (an empty map: none yet).
func WithTaskCaches(records map[string]map[string]int) RunOption {
	return func(c *runConfig) {
		c.taskCaches = records
		if c.taskCaches == nil {
			c.taskCaches = map[string]map[string]int{}
		}
	}
}

// WithCredentials has creds supply the build's credentials, as an ATC's credential manager
// and its pipeline's var_sources supply a Concourse build's, instead of its steps reading
// them from the namespace's Secrets: before anything of the build is created, every
// ((var)) of its plan (local vars aside) is looked up in creds; the values go to one
// Secret of the build, which its PipelineRun owns, and each step sees only its own vars.
// A var creds does not have errors the step that needs it, when it runs, with Concourse's
// "undefined vars: ..." (Concourse looks a step's vars up as it runs the step).
// The vars of a task file, read when the step runs, are looked up in creds by the
// build's follower (Build.Events) once the file is read: follow such a build for it to
// go on past the task.
// They are redacted in the build's events as credentials are. nil: the namespace's
// Secrets.
func WithCredentials(creds vars.Variables) RunOption {
	return func(c *runConfig) { c.creds = creds }
}

// OneOff runs the plan as a one-off build (fly execute; translate.Options.OneOff):
// source supplies its artifact inputs, which are uploaded onto its volume before its
// PipelineRun is created (nil: it has none), and Build.Artifacts downloads its outputs
// once it has ended.
func OneOff(source podexec.ArtifactSource) RunOption {
	return func(c *runConfig) { c.oneOff, c.uploads = true, source }
}

// RunPlan compiles a build plan (atc.Plan JSON) and starts it. Running a build that exists
// (same BuildMeta) attaches to it: the call is idempotent.
func (b *Backend) RunPlan(ctx context.Context, planJSON []byte, meta BuildMeta, options ...RunOption) (*Build, error) {
	var plan concourse.Plan
	if err := json.Unmarshal(planJSON, &plan); err != nil {
		return nil, fmt.Errorf("decoding the build plan: %w", err)
	}
	return b.Run(ctx, plan, meta, options...)
}

// Run compiles a build plan and starts it, as RunPlan.
func (b *Backend) Run(ctx context.Context, plan concourse.Plan, meta BuildMeta, options ...RunOption) (*Build, error) {
	var cfg runConfig
	for _, o := range options {
		o(&cfg)
	}
	r, meta, err := b.compile(ctx, plan, meta, cfg)
	if err != nil {
		return nil, err
	}
	sub, err := b.client.submit(ctx, r, cfg.creds, cfg.uploads)
	if err != nil {
		return nil, err
	}
	return &Build{Name: sub.Run.Name, Namespace: sub.Run.Namespace, Meta: meta, Existed: sub.Existed, Compiled: r, Warnings: sub.Warnings, client: b.client, creds: cfg.creds}, nil
}

// compile compiles a build's plan for the target, as Run starts it; the build's name is
// the job's next when meta has none.
func (b *Backend) compile(ctx context.Context, plan concourse.Plan, meta BuildMeta, cfg runConfig) (*translate.Result, BuildMeta, error) {
	buildPipeline := meta.Pipeline
	meta = meta.withDefaults()
	if meta.Build == "" {
		n, err := b.client.NextBuild(ctx, meta.Team, meta.Pipeline, meta.Job)
		if err != nil {
			return nil, meta, err
		}
		meta.Build = strconv.Itoa(n)
	}
	opts := b.defaults
	opts.Team, opts.Pipeline, opts.Job, opts.Build = meta.Team, meta.Pipeline, meta.Job, meta.Build
	if len(meta.InstanceVars) > 0 {
		opts.InstanceVars = meta.InstanceVars
	}
	opts.BuildLogRetention = meta.Retention
	opts.TeamID, opts.PipelineID, opts.JobID, opts.BuildID, opts.CreatedBy = meta.TeamID, meta.PipelineID, meta.JobID, meta.BuildID, meta.CreatedBy
	opts.Check = meta.Check
	opts.SuppliedCredentials = cfg.creds != nil
	opts.OneOff = cfg.oneOff
	opts.TaskCaches = cfg.taskCaches
	opts.RunnerImageVolume = b.mountRunner(ctx)
	if cfg.oneOff {
		// A pipeline's one-off build (fly execute -j) is its pipeline's.
		opts.BuildPipeline = buildPipeline
	}
	r, err := translate.Translate(plan, opts)
	if err != nil {
		return nil, meta, fmt.Errorf("compiling build %s: %w", meta.Build, err)
	}
	return r, meta, nil
}

// Attach returns the build whose PipelineRun is named run, to follow or abort it (from a
// process that did not start it).
func (b *Backend) Attach(run string) *Build {
	return &Build{Name: run, Namespace: b.client.target.Namespace, client: b.client}
}

// Events delivers the build's events to emit, in order, from where after stops, until the
// build ends, and returns its final status. A caller that keeps the cursor (or the keys
// of the events it saved) resumes in any process without gap or duplicate.
func (b *Build) Events(ctx context.Context, after buildevents.Cursor, emit func(buildevents.Event) error) (event.BuildStatus, error) {
	return b.client.follow(ctx, b.Name, after, emit, b.observers(), nil)
}

// observers are what each follower of the build hands what it sees to, each follower
// its own: for a build whose starter supplied its credentials, the maker of the vars
// Secrets of its task files; for every build, the index of its team's resource caches.
func (b *Build) observers() []Observer {
	var obs []Observer
	if b.creds != nil {
		obs = append(obs, newTaskVarsSupplier(b.client, b.creds))
	}
	return append(obs, newCacheIndexer(b.client))
}

// Abort aborts the build: running steps are interrupted, on_abort and ensure hooks run,
// and the build ends aborted.
func (b *Build) Abort(ctx context.Context) error {
	return b.client.Abort(ctx, b.Name)
}

// StepResult is how a one-step build (RunTask, CheckResource, GetResource, PutResource)
// ended.
type StepResult struct {
	Status     event.BuildStatus
	ExitStatus int
	// Version and Metadata are what a get or put produced, or the latest version a check
	// found.
	Version  concourse.Version
	Metadata concourse.Metadata
	// Versions are the versions a check found, oldest first, its Version the last: every
	// one its script printed (those its results carry, or, when there were more, those of
	// the frame its runner wrote: runspec.CheckedVersions). Only the newest that fit in
	// the results when the step's log is gone before it is read (a pruned pod).
	Versions []concourse.Version
	// Error is the step's error event ("interrupted", "timeout exceeded", a message).
	Error string
	// Stdout and Stderr are the step's log.
	Stdout, Stderr string
}

// Wait follows a one-step build to its end and gathers its result.
func (b *Build) Wait(ctx context.Context) (*StepResult, error) {
	var res StepResult
	var logs [2]strings.Builder
	var frames map[concourse.PlanID]runspec.CheckedVersions
	status, err := b.client.follow(ctx, b.Name, buildevents.Cursor{}, func(e buildevents.Event) error {
		switch ev := e.Event.(type) {
		case event.Log:
			if ev.Origin.Source == event.OriginSourceStdout {
				logs[0].WriteString(ev.Payload)
			} else {
				logs[1].WriteString(ev.Payload)
			}
		case event.Error:
			res.Error = ev.Message
		case event.FinishTask:
			res.ExitStatus = int(ev.ExitStatus)
		case event.FinishGet:
			if strings.HasSuffix(string(ev.Origin.ID), "/image-get") {
				// The get of a task's image, or of a custom type's: not the build's.
				return nil
			}
			res.ExitStatus, res.Version, res.Metadata = int(ev.ExitStatus), ev.FetchedVersion, ev.FetchedMetadata
		case event.FinishPut:
			res.ExitStatus, res.Version, res.Metadata = int(ev.ExitStatus), ev.CreatedVersion, ev.CreatedMetadata
		}
		return nil
	}, b.observers(), func(o buildevents.Observation) { frames = buildevents.VersionsFound(o) })
	if err != nil {
		return nil, err
	}
	res.Status = status
	res.Stdout, res.Stderr = logs[0].String(), logs[1].String()
	// A check's versions are no event's: they are its TaskRun's results. They are the
	// build's result even when an image's get, fetching the type's image, finished with
	// a version of its own.
	versions, err := b.client.checkedVersions(ctx, b.Name, frames)
	if err != nil {
		return nil, err
	}
	if n := len(versions); n > 0 {
		res.Versions, res.Version = versions, versions[n-1]
	}
	return &res, nil
}

// checkedVersions are the versions the check step that is the build's plan found,
// oldest first (none: it found none, or the build is no check's). The checks of the
// images it fetched (their type's, ID <id>/image-check) and of gets are not the build's.
func (c *Client) checkedVersions(ctx context.Context, run string, frames map[concourse.PlanID]runspec.CheckedVersions) ([]concourse.Version, error) {
	trs, err := c.taskRunsOf(ctx, run)
	if err != nil {
		return nil, err
	}
	// The verdict's plan ID is the build's plan's: the verdict task's, or, when the build's
	// only step recorded the verdict itself (runspec.LabelVerdict), that of the verdict
	// spec it was given.
	root := ""
	specs := make([]runspec.Spec, len(trs.Items))
	for i := range trs.Items {
		tr := &trs.Items[i]
		if s, ok := buildevents.StepSpec(tr); ok {
			specs[i] = s
			if s.Mode == runspec.ModeVerdict {
				root = s.PlanID
			}
		}
		if tr.Labels[runspec.LabelVerdict] == runspec.VerdictFused {
			if v, err := runspec.Decode(buildevents.Param(tr.Spec.Params, runspec.ParamVerdictSpec)); err == nil {
				root = v.PlanID
			}
		}
	}
	for i := range trs.Items {
		if s := specs[i]; s.Mode == runspec.ModeCheck && s.PlanID == root {
			tr := &trs.Items[i]
			return buildevents.EveryVersion(checkResults(buildevents.Result(tr, runspec.ResultVersions), buildevents.Result(tr, runspec.ResultVersion)), frames[concourse.PlanID(s.PlanID)]), nil
		}
	}
	return nil, nil
}

// TaskCaches lists, by step name, the cache paths of the build's tasks whose caches are
// recorded (WithTaskCaches), as each reported them once it had saved them; a task that
// never got that far lists none.
func (b *Build) TaskCaches(ctx context.Context) (map[string][]string, error) {
	trs, err := b.client.taskRunsOf(ctx, b.Name)
	if err != nil {
		return nil, err
	}
	caches := map[string][]string{}
	for i := range trs.Items {
		tr := &trs.Items[i]
		s, ok := buildevents.StepSpec(tr)
		if !ok || s.Mode != runspec.ModeTask {
			continue
		}
		var paths []string
		if err := json.Unmarshal([]byte(buildevents.Result(tr, runspec.ResultCaches)), &paths); err != nil {
			continue
		}
		for _, p := range paths {
			if !slices.Contains(caches[s.Name], p) {
				caches[s.Name] = append(caches[s.Name], p)
			}
		}
	}
	for _, paths := range caches {
		slices.Sort(paths)
	}
	return caches, nil
}

// taskRunsOf lists the TaskRuns of the build whose PipelineRun is run, to read their
// results.
func (c *Client) taskRunsOf(ctx context.Context, run string) (*v1.TaskRunList, error) {
	trs, err := c.target.Tekton.TektonV1().TaskRuns(c.target.Namespace).List(ctx, metav1.ListOptions{LabelSelector: labelPipelineRun + "=" + run})
	if err != nil {
		return nil, fmt.Errorf("reading the results of build %s: %w", run, err)
	}
	return trs, nil
}

// checkResults reads a check step's versions from its versions and version results: the
// list, or, from a runner that wrote only the version, that one.
func checkResults(versions, version string) []concourse.Version {
	var list []concourse.Version
	if json.Unmarshal([]byte(versions), &list) == nil && len(list) > 0 && !slices.ContainsFunc(list, func(v concourse.Version) bool { return v == nil }) {
		return list
	}
	var v concourse.Version
	if json.Unmarshal([]byte(version), &v) == nil && v != nil {
		return []concourse.Version{v}
	}
	return nil
}

// The Orchestrator of the k8s-runtime RFC: each operation a one-step build.

// RunTask runs one task step.
func (b *Backend) RunTask(ctx context.Context, meta BuildMeta, id concourse.PlanID, task concourse.TaskPlan) (*Build, error) {
	return b.Run(ctx, concourse.Plan{ID: id, Task: &task}, meta)
}

// CheckResource checks a resource for versions; the build's result has them (Versions)
// and the latest (Version).
func (b *Backend) CheckResource(ctx context.Context, meta BuildMeta, id concourse.PlanID, check concourse.CheckPlan) (*Build, error) {
	meta.Check = true
	return b.Run(ctx, concourse.Plan{ID: id, Check: &check}, meta)
}

// GetResource fetches a version of a resource.
func (b *Backend) GetResource(ctx context.Context, meta BuildMeta, id concourse.PlanID, get concourse.GetPlan) (*Build, error) {
	return b.Run(ctx, concourse.Plan{ID: id, Get: &get}, meta)
}

// PutResource puts to a resource.
func (b *Backend) PutResource(ctx context.Context, meta BuildMeta, id concourse.PlanID, put concourse.PutPlan) (*Build, error) {
	return b.Run(ctx, concourse.Plan{ID: id, Put: &put}, meta)
}
