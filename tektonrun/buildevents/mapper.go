package buildevents

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	"knative.dev/pkg/apis"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/event"
	"github.com/concourse-tekton/concourse-tekton/pvc"
	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/translate"
)

// Observation is what the cluster says of one build, fetched before mapping: the
// PipelineRun, and for each of its PipelineTasks the TaskRun, its pod and the lines of the
// step's log read so far. The mapper is pure: the same observation maps to the same events.
type Observation struct {
	Run   *v1.PipelineRun
	Steps map[string]*StepObservation
	// Settled says the run ended a while ago: a TaskRun it names that is not there was
	// deleted (pruned), not delayed by the watch.
	Settled bool
}

// StepObservation is one PipelineTask of a build.
type StepObservation struct {
	TaskRun *v1.TaskRun
	// Pod is the TaskRun's pod, nil when it is not known (not yet created, or deleted).
	Pod *corev1.Pod
	// Log are the lines of the step container's log, in order, read so far.
	Log []LogLine
	// LogDone says Log is the whole log: read to its end after the container ended.
	LogDone bool
}

// Map computes the build's events that after does not cover, in Concourse's order: each
// step's events in order (head, log lines, end), a step only once every step it runs after
// has ended, and the final status last. final tells the build has ended and every event
// was mapped.
func Map(o Observation, after *Cursor) (events []Event, final bool) {
	if after == nil {
		after = &Cursor{}
	}
	m := &mapper{obs: o, after: after}
	return m.run()
}

type mapper struct {
	obs     Observation
	after   *Cursor
	events  []Event
	skipped map[string]bool
	// deps are the walk's nodes' direct dependencies; ancestors and imageKeys memoize what
	// fetchedBefore computes from them.
	deps      map[string][]string
	ancestors map[string]map[string]bool
	imageKeys map[string]string
}

func (m *mapper) emit(k Key, e event.Event) {
	m.add(Event{Key: k, Event: e})
}

// emitPipeline is emit of a set_pipeline step's pipeline, in place of an event.
func (m *mapper) emitPipeline(k Key, p *PipelineToSet) {
	m.add(Event{Key: k, Pipeline: p})
}

func (m *mapper) add(ev Event) {
	if m.after.Covers(ev.Key) {
		return
	}
	if o := m.obs.Steps[ev.Key.Step]; o != nil && o.TaskRun != nil && ev.Key.Step != "" {
		ev.TaskRun = o.TaskRun.Name
	}
	m.events = append(m.events, ev)
}

func (m *mapper) run() ([]Event, bool) {
	run := m.obs.Run
	if run == nil || run.Status.StartTime == nil {
		return nil, false
	}
	m.emit(Key{Part: PartHead}, event.Status{Status: event.BuildStatusStarted, Time: runStart(run)})
	spec := run.Status.PipelineSpec
	if spec == nil {
		return m.events, false
	}
	runDone := Done(run.Status.GetCondition(apis.ConditionSucceeded))
	m.skipped = map[string]bool{}
	for _, s := range run.Status.SkippedTasks {
		m.skipped[s.Name] = true
	}
	children := map[string]bool{}
	for _, c := range run.Status.ChildReferences {
		children[c.PipelineTaskName] = true
	}
	nodes := runWalkOrder(run, spec)
	m.deps = make(map[string][]string, len(nodes))
	for _, n := range nodes {
		m.deps[n.name] = n.deps
	}
	done := map[string]bool{}
	// Each step is mapped once: its events are in m.events, and the cursor does not move
	// until the caller delivered them.
	mapped := map[string]bool{}
	var verdict *v1.TaskRun
	// Tasks are listed in a valid order (translate emits them so), but a DAG walk to a
	// fixed point costs little and does not rely on it.
	for progress := true; progress; {
		progress = false
		for _, n := range nodes {
			if mapped[n.name] || !allDone(n.deps, done) {
				continue
			}
			stepDone := false
			switch obs := m.obs.Steps[n.name]; {
			case m.after.ended(n.name):
				// Every event of the step was delivered: nothing to map again.
				stepDone = true
			case n.across != nil && n.isEnd:
				m.acrossEnd(n)
				stepDone = true
			case n.across != nil:
				stepDone = m.acrossHead(n, runDone)
			case obs != nil && obs.TaskRun != nil:
				var isVerdict bool
				stepDone, isVerdict = m.step(n.name, obs)
				if isVerdict {
					verdict = obs.TaskRun
				}
			case children[n.name] && !m.obs.Settled:
				// The run names a TaskRun the caches do not hold yet (the watches deliver
				// kinds in no particular order): wait for it.
			default:
				stepDone = m.skipped[n.name] || runDone
			}
			if n.across == nil || stepDone {
				// A step's events are mapped once per observation; an across step's head
				// is looked at again as its steps appear.
				mapped[n.name] = true
			}
			if stepDone {
				done[n.name] = true
				progress = true
			}
		}
	}
	if !runDone || len(done) < len(nodes) {
		return m.events, false
	}
	status, at := finalStatus(run, verdict, fusedVerdict(m.obs))
	m.emit(Key{Part: PartEnd}, event.Status{Status: status, Time: at})
	return m.events, true
}

func allDone(deps []string, done map[string]bool) bool {
	for _, d := range deps {
		if !done[d] {
			return false
		}
	}
	return true
}

// fusedVerdict is the TaskRun of the build's last step when that holds the build's
// verdict (runspec.LabelVerdict): looked for among all the steps, since that step's own
// events may have been delivered, and it not mapped again, before the run ended.
func fusedVerdict(o Observation) *v1.TaskRun {
	for _, so := range o.Steps {
		if so != nil && so.TaskRun != nil && so.TaskRun.Labels[runspec.LabelVerdict] == runspec.VerdictFused {
			return so.TaskRun
		}
	}
	return nil
}

// finalStatus is the verdict's outcome: the verdict task's, else the one the build's
// last step recorded (fused); a run without one was cancelled (aborted) or broke
// (errored).
func finalStatus(run *v1.PipelineRun, verdict, fused *v1.TaskRun) (event.BuildStatus, int64) {
	at := runStart(run)
	if run.Status.CompletionTime != nil {
		at = run.Status.CompletionTime.Unix()
	}
	if verdict != nil {
		if t := endTime(verdict, nil); t != 0 {
			at = t
		}
	}
	for _, tr := range []*v1.TaskRun{verdict, fused} {
		if tr == nil {
			continue
		}
		switch o, _ := pvc.VerdictOutcome(tr); o {
		case runspec.Succeeded, runspec.Failed, runspec.Errored, runspec.Aborted:
			if t := endTime(tr, nil); t != 0 {
				at = t
			}
			return event.BuildStatus(o), at
		}
	}
	if c := run.Status.GetCondition(apis.ConditionSucceeded); c != nil && strings.HasPrefix(c.Reason, "Cancelled") || buildAborted(run) {
		return event.BuildStatusAborted, at
	}
	return event.BuildStatusErrored, at
}

// buildAborted tells whether the build was aborted: by Abort (which marks its run before
// anything else), or by cancelling its run (tkn pipelinerun cancel).
func buildAborted(run *v1.PipelineRun) bool {
	return run.Annotations[pvc.AnnotationAborted] != "" || run.Spec.Status != ""
}

// step maps one TaskRun, and tells whether the step has ended and is the verdict.
func (m *mapper) step(name string, o *StepObservation) (bool, bool) {
	tr := o.TaskRun
	trDone := Done(tr.Status.GetCondition(apis.ConditionSucceeded))
	spec, ok := StepSpec(tr)
	if !ok {
		// Not a step of ours (someone edited the Pipeline): nothing to say.
		return trDone, false
	}
	outcome, _ := runspec.ParseOutcome(Result(tr, runspec.ResultOutcome))
	switch {
	case spec.Mode == runspec.ModeJoin || spec.Mode == runspec.ModeVerdict:
		return trDone, spec.Mode == runspec.ModeVerdict
	case outcome == runspec.NeverRan:
		// A step whose fail-fast group fired before it started: Concourse never started it.
		return trDone, false
	}
	origin := event.Origin{ID: concourse.PlanID(spec.PlanID)}
	switch {
	case spec.Mode == runspec.ModeResolve && spec.Resolve != nil:
		origin.ID = concourse.PlanID(spec.Resolve.TaskPlanID)
	case spec.Mode == runspec.ModePublish && spec.Publish != nil:
		origin.ID = concourse.PlanID(spec.Publish.TaskPlanID)
	}
	state := containerState(tr, o.Pod)
	started := ran(state)
	if trDone && outcome == "" && !started && tr.Spec.Status == v1.TaskRunSpecStatusCancelled && buildAborted(m.obs.Run) {
		// A step whose pod never started, cancelled by the build's abort (Abort cancels
		// the steps whose pods wait for a node): Concourse interrupts a step that waits
		// for a worker. What it showed before it looked for one, then the interruption.
		outcome = runspec.Aborted
		m.waitingHead(name, spec, origin, tr)
	}
	troubled := trDone && outcome == ""
	// A task that errored with no exit status never ran its process: Concourse stops it
	// between initializing and selecting a worker (missing inputs, an unknown user).
	processless := trDone && spec.Mode == runspec.ModeTask && outcome == runspec.Errored && Result(tr, runspec.ResultExitStatus) == ""
	announces := runspec.AnnouncesStart(spec)
	mark := startMark(announces, o.Log)
	if !trDone && started && len(o.Log) == 0 {
		// Tekton starts every step's container at once and each waits for the one before:
		// the runner began when the runner's install ended.
		if !installed(tr, o.Pod) {
			return false, false
		}
	}
	if !trDone && started && announces && mark < 0 {
		// Its runner may still end it without starting it (missing inputs, a fail-fast
		// group that fired): it is shown once the runner says it started.
		return false, false
	}
	if !trDone && state.Terminated != nil && spec.Mode == runspec.ModeTask && !m.after.pastHead(name) {
		// Its process may never have run (processless): that is known from its results,
		// which come with the TaskRun's end, and a step after it in the pod (a fused
		// verdict) keeps the TaskRun going a while after the task's container ended.
		return false, false
	}
	if !started && !trDone {
		if o.Pod != nil && Unschedulable(o.Pod) {
			// Concourse initializes a step before it looks for a worker to run it on.
			m.waitingHead(name, spec, origin, tr)
			m.emit(Key{Step: name, Part: PartWait}, event.WaitingForWorker{Time: unix(o.Pod.CreationTimestamp.Time), Origin: origin})
		}
		return false, false
	}
	switch {
	case spec.Mode == runspec.ModeAcross && (started || troubled):
		m.emit(Key{Step: name, Part: PartHead}, event.Initialize{Origin: origin, Time: startTime(tr)})
	case !internal(spec.Mode) && (started || troubled) && !m.after.pastHead(name):
		cfg, err := m.taskConfig(spec, tr)
		if err != nil {
			m.emit(Key{Step: name, Part: PartHead}, unreadable(origin, startTime(tr), "the task's config", err))
			break
		}
		fetch := imageFetchOf{digest: imageDigest(tr, o.Pod)}
		if started {
			fetch.reused = m.fetchedBefore(name, imageKey(spec, cfg))
		}
		m.head(name, spec, origin, startTime(tr), worker(tr, o.Pod), cfg, fetch, started, processless)
	}
	source := event.OriginSourceStderr
	if spec.Mode == runspec.ModeTask {
		// Concourse runs a task's process with a TTY: everything it writes is stdout.
		source = event.OriginSourceStdout
	}
	logOrigin := event.Origin{ID: origin.ID, Source: source}
	f, framed := stepFrame(spec.Mode, o, outcome, origin)
	// The runner's start mark is not output: the step's log events are its other lines.
	for n := m.after.next(name, PartLog); ; n++ {
		i := n
		if mark >= 0 && n >= mark {
			i++
		}
		if i >= len(o.Log) {
			break
		}
		l := o.Log[i]
		k := Key{Step: name, Part: PartLog, N: n}
		if frameLike(spec.Mode, l.Text) {
			if !trDone || !o.LogDone {
				// Whether it is the step's frame shows once the step has ended.
				return false, false
			}
			if i == len(o.Log)-1 && framed {
				if f.pipeline != nil {
					m.emitPipeline(k, f.pipeline)
				}
				// A check's versions are a result of the check's (VersionsFound).
				continue
			}
		}
		m.emit(k, event.Log{Time: unix(l.Time), Origin: logOrigin, Payload: l.Text})
	}
	if !trDone || started && !o.LogDone {
		return false, false
	}
	m.end(name, spec, origin, tr, o.Pod, outcome)
	return true, false
}

// internal tells the modes of steps Concourse has no step for: a resolve step reads its
// task's config, a publish step pushes the artifact its task runs, an across step's
// resolver evaluates its values. Their logs and errors are shown at their step's origin,
// with no initialize, start or finish of their own.
func internal(m runspec.Mode) bool {
	return m == runspec.ModeResolve || m == runspec.ModePublish || m == runspec.ModeAcross
}

// head is initialize, selected-worker and start, in the order Concourse sends them for
// each kind of step; a step whose container never started (its image could not be
// pulled, say) was only initialized. A step whose container started fetched its image
// first, right after initialize (imageFetch, typeImageFetch); a task that then stopped
// before its process (processless) goes no further.
func (m *mapper) head(name string, spec runspec.Spec, origin event.Origin, at int64, node string, cfg concourse.TaskConfig, fetch imageFetchOf, started, processless bool) {
	evs := headEvents(spec, origin, at, node, cfg)
	switch {
	case !started:
		evs = evs[:1]
	case spec.Mode == runspec.ModeTask:
		rest := evs[1:]
		if processless {
			rest = nil
		}
		evs = append(append(evs[:1:1], imageFetch(spec, cfg, origin, at, node, fetch)...), rest...)
	default:
		evs = append(append(evs[:1:1], typeImageFetch(spec.PulledImage, at, node, fetch)...), evs[1:]...)
	}
	for i, e := range append(imageAnnouncement(spec, at), evs...) {
		m.emit(Key{Step: name, Part: PartHead, N: i}, e)
	}
}

// imageAnnouncement is, for the first step of the fetch of a task's image that steps of
// the build do (runspec.Spec.ImagePlans), the events by which Concourse announces that
// fetch on the task's origin before the fetch's own: image-check, then image-get. None for
// any other step.
func imageAnnouncement(spec runspec.Spec, at int64) []event.Event {
	var evs []event.Event
	for _, plan := range spec.ImagePlans {
		var p struct{ ID string }
		if err := json.Unmarshal(plan, &p); err != nil {
			evs = append(evs, unreadable(event.Origin{ID: concourse.PlanID(spec.PlanID)}, at, "the plan of an image's fetch", err))
			continue
		}
		if task, ok := strings.CutSuffix(p.ID, "/image-check"); ok {
			evs = append(evs, event.ImageCheck{Time: at, Origin: event.Origin{ID: concourse.PlanID(task)}, Plan: plan})
		} else if task, ok := strings.CutSuffix(p.ID, "/image-get"); ok {
			evs = append(evs, event.ImageGet{Time: at, Origin: event.Origin{ID: concourse.PlanID(task)}, Plan: plan})
		}
	}
	return evs
}

// headEvents are a step's initialize, selected-worker and start, in Concourse's order for
// its kind of step, before any fetch of an image.
func headEvents(spec runspec.Spec, origin event.Origin, at int64, node string, cfg concourse.TaskConfig) []event.Event {
	sel := event.SelectedWorker{Time: at, Origin: origin, WorkerName: node}
	shown := event.NewTaskConfig(cfg)
	switch spec.Mode {
	case runspec.ModeTask:
		return []event.Event{event.InitializeTask{Time: at, Origin: origin, TaskConfig: shown}, sel, event.StartTask{Time: at, Origin: origin, TaskConfig: shown}}
	case runspec.ModeGet:
		return []event.Event{event.InitializeGet{Origin: origin, Time: at}, event.StartGet{Origin: origin, Time: at}, sel}
	case runspec.ModePut:
		return []event.Event{event.InitializePut{Origin: origin, Time: at}, sel, event.StartPut{Origin: origin, Time: at}}
	case runspec.ModeCheck:
		return []event.Event{event.InitializeCheck{Origin: origin, Time: at, Name: spec.Name}, sel, event.Start{Origin: origin, Time: at}}
	}
	// load_var and set_pipeline run in the ATC, on no worker.
	return []event.Event{event.Initialize{Origin: origin, Time: at}, event.Start{Origin: origin, Time: at}}
}

// waitingHead is the beginning of the head of a step whose pod waits for a node, what
// Concourse shows before it looks for a worker (waiting-for-worker comes next): the
// step's initialize, and a get's start-get unless the image of a custom type is fetched
// between them. The rest of the head follows under the same keys once the pod is
// scheduled, as head makes them then, so that a process attaching later maps the same
// head whole. Internal steps have no head, and a head already delivered is not made again.
func (m *mapper) waitingHead(name string, spec runspec.Spec, origin event.Origin, tr *v1.TaskRun) {
	if internal(spec.Mode) || m.after.pastHead(name) {
		return
	}
	at := startTime(tr)
	cfg, err := m.taskConfig(spec, tr)
	if err != nil {
		// In place of the head, as head shows it.
		m.emit(Key{Step: name, Part: PartHead}, unreadable(origin, at, "the task's config", err))
		return
	}
	evs, n := headEvents(spec, origin, at, "", cfg), 1
	if spec.Mode == runspec.ModeGet && spec.PulledImage == nil {
		n = 2
	}
	for i, e := range append(imageAnnouncement(spec, at), evs[:n]...) {
		m.emit(Key{Step: name, Part: PartHead, N: i}, e)
	}
}

// end is how the step ended: Concourse's finish event, or an error event (timeout,
// interruption, a message) instead of it; a pod that broke before the runner could say
// anything gets a diagnostic in its log first.
func (m *mapper) end(name string, spec runspec.Spec, origin event.Origin, tr *v1.TaskRun, pod *corev1.Pod, outcome runspec.Outcome) {
	at := endTime(tr, pod)
	var evs []event.Event
	if spec.Mode == runspec.ModeAcross {
		// An across step's resolver starts the across step once it wrote its warnings.
		evs = append(evs, event.Start{Origin: origin, Time: at})
	}
	message, isError := endError(tr, pod, outcome)
	switch {
	case outcome == "":
		evs = append(evs,
			event.Log{Time: at, Origin: event.Origin{ID: origin.ID, Source: event.OriginSourceStderr}, Payload: diagnose(tr, pod).block},
			event.Error{Message: message, Origin: origin, Time: at})
	case isError:
		evs = append(evs, event.Error{Message: message, Origin: origin, Time: at})
	case internal(spec.Mode):
		// A resolve step's task has events of its own; an across step's resolver has
		// only its warnings and errors, at the across step's origin (its plan ID).
	default:
		evs = []event.Event{finish(spec, origin, tr, outcome, at)}
	}
	for i, e := range evs {
		m.emit(Key{Step: name, Part: PartEnd, N: i, Last: i == len(evs)-1}, e)
	}
}

// endError is the message of the error a step ended with instead of its finish event,
// if it did: a pod that broke, a message of the runner's, errored, interrupted.
func endError(tr *v1.TaskRun, pod *corev1.Pod, outcome runspec.Outcome) (string, bool) {
	failure := Result(tr, runspec.ResultError)
	switch {
	case outcome == "":
		return diagnose(tr, pod).message, true
	case failure != "":
		return failure, true
	case outcome == runspec.Errored:
		return "errored", true
	case outcome == runspec.Aborted:
		return "interrupted", true
	}
	return "", false
}

// unreadable is the error event a step shows in place of an event the mapper cannot make
// from what the step's TaskRun or spec says (a runner or a compiler of another release):
// what Concourse shows of a step that errored, an error event with the reason.
func unreadable(origin event.Origin, at int64, what string, err error) event.Event {
	return event.Error{Origin: origin, Time: at, Message: fmt.Sprintf("reading %s: %v", what, err)}
}

func finish(spec runspec.Spec, origin event.Origin, tr *v1.TaskRun, outcome runspec.Outcome, at int64) event.Event {
	ok := outcome == runspec.Succeeded
	status := 0
	if !ok {
		status = 1
	}
	if s, err := strconv.Atoi(Result(tr, runspec.ResultExitStatus)); err == nil {
		status = s
	}
	var version concourse.Version
	var metadata concourse.Metadata
	if spec.Mode == runspec.ModeGet || spec.Mode == runspec.ModePut {
		for _, r := range []struct {
			name string
			into any
		}{{runspec.ResultVersion, &version}, {runspec.ResultMetadata, &metadata}} {
			// None: the step produced none (it failed before it had one).
			if raw := Result(tr, r.name); raw != "" {
				if err := json.Unmarshal([]byte(raw), r.into); err != nil {
					return unreadable(origin, at, "the step's "+r.name, err)
				}
			}
		}
	}
	switch spec.Mode {
	case runspec.ModeTask:
		return event.FinishTask{Time: at, ExitStatus: event.ExitStatus(status), Origin: origin}
	case runspec.ModeGet:
		return event.FinishGet{Origin: origin, Time: at, ExitStatus: event.ExitStatus(status), FetchedVersion: version, FetchedMetadata: metadata}
	case runspec.ModePut:
		return event.FinishPut{Origin: origin, Time: at, ExitStatus: event.ExitStatus(status), CreatedVersion: version, CreatedMetadata: metadata}
	}
	return event.Finish{Origin: origin, Time: at, Succeeded: ok}
}

// imageFetch are the events of the image check and get Concourse runs for a task's
// image_resource (concourse-semantics.md, 4.3), for a task whose registry image the
// kubelet pulled, as the compiler planned it (runspec.Spec.PulledImage): image-check and
// image-get carry the public sub-plans for the UI, then the check's events and the get's
// (fetchEvents). A task whose config is a file is planned here, as the compiler plans
// the others, of the config its resolve step read. An image of another type is the
// mock's mirror of itself, or fetched by steps of the build, which show their own events.
func imageFetch(spec runspec.Spec, cfg concourse.TaskConfig, origin event.Origin, at int64, node string, fetch imageFetchOf) []event.Event {
	ir := pulledImageResource(spec, cfg)
	if ir == nil {
		return nil
	}
	p := spec.PulledImage
	if p == nil {
		var err error
		if p, err = translate.PulledTaskImage(concourse.PlanID(spec.PlanID), *ir, nil, nil, false); err != nil {
			return []event.Event{unreadable(origin, at, "the plan of the image's fetch", err)}
		}
	}
	var evs []event.Event
	if p.CheckPlan != nil {
		evs = append(evs, event.ImageCheck{Time: at, Origin: origin, Plan: p.CheckPlan})
	}
	evs = append(evs, event.ImageGet{Time: at, Origin: origin, Plan: p.GetPlan})
	return append(evs, fetchEvents(*p, at, node, fetch)...)
}

// typeImageFetch are the events of the check and get of a resource step's custom type's
// image, which the node pulled: Concourse shows them between the step's initialize and
// the rest of its head (concourse-semantics.md, 4.3), with no image-check or image-get.
func typeImageFetch(p *runspec.PulledImage, at int64, node string, fetch imageFetchOf) []event.Event {
	if p == nil {
		return nil
	}
	return fetchEvents(*p, at, node, fetch)
}

// imageFetchOf is what the mapper knows of a step's image's fetch: the digest the node
// pulled, and whether a step the step runs after fetched the same image (fetchedBefore).
type imageFetchOf struct {
	digest string
	reused bool
}

// fetchEvents are the events of the check (unless the version is pinned) and the get of
// an image the node pulled, on the step's worker; the get's version is the digest the
// node pulled, or the pinned version. The pull has no log of Concourse's. A check whose
// image a step before it in the build fetched is found done since the build started, as
// Concourse's check step finds it: it only initializes and finishes.
func fetchEvents(p runspec.PulledImage, at int64, node string, fetch imageFetchOf) []event.Event {
	var evs []event.Event
	if p.CheckID != "" {
		co := event.Origin{ID: concourse.PlanID(p.CheckID)}
		evs = append(evs, event.InitializeCheck{Origin: co, Time: at, Name: p.Name})
		if !fetch.reused {
			evs = append(evs, event.SelectedWorker{Time: at, Origin: co, WorkerName: node}, event.Start{Origin: co, Time: at})
		}
		evs = append(evs, event.Finish{Origin: co, Time: at, Succeeded: true})
	}
	version := concourse.Version{}
	if p.Version != nil {
		version = p.Version
	}
	if fetch.digest != "" {
		version = concourse.Version{"digest": fetch.digest}
	}
	gor := event.Origin{ID: concourse.PlanID(p.GetID)}
	return append(evs, event.InitializeGet{Origin: gor, Time: at}, event.StartGet{Origin: gor, Time: at},
		event.SelectedWorker{Time: at, Origin: gor, WorkerName: node},
		event.FinishGet{Origin: gor, Time: at, FetchedVersion: version})
}

// pulledImageResource is the image_resource of a task that the node pulled as the task's
// image: a registry-image or docker-image one, unless the task runs an artifact.
func pulledImageResource(spec runspec.Spec, cfg concourse.TaskConfig) *concourse.ImageResource {
	ir := cfg.ImageResource
	if spec.Mode != runspec.ModeTask || spec.Task == nil || spec.Task.ImageArtifact || ir == nil || !runspec.RegistryImageType(ir.Type) {
		return nil
	}
	return ir
}

// imageKey says which image's check a step shows ("" none): a task's image_resource by
// its type and source (Concourse's resource config), a custom type's image by the type.
func imageKey(spec runspec.Spec, cfg concourse.TaskConfig) string {
	if ir := pulledImageResource(spec, cfg); ir != nil && ir.Version == nil {
		source, err := json.Marshal(ir.Source)
		if err != nil {
			return ""
		}
		return "image\x00" + ir.Type + "\x00" + string(source)
	}
	if p := spec.PulledImage; p != nil && p.CheckID != "" {
		return "type\x00" + p.Name
	}
	return ""
}

// fetchedBefore tells whether a step that the step named runs after (its ancestors in the
// walk) started, and so showed the check of the image key, which Concourse's check of it
// then finds done since the build started. Steps that run beside it are not counted: their
// checks may run at the same time. The ancestors' state is final when the step starts.
func (m *mapper) fetchedBefore(name, key string) bool {
	if key == "" {
		return false
	}
	for a := range m.ancestorsOf(name) {
		o := m.obs.Steps[a]
		if o == nil || o.TaskRun == nil || !ran(containerState(o.TaskRun, o.Pod)) {
			continue
		}
		k, seen := m.imageKeys[a]
		if !seen {
			if spec, ok := StepSpec(o.TaskRun); ok && spec.Mode != runspec.ModeJoin && spec.Mode != runspec.ModeVerdict {
				// A step whose config cannot be read showed that error in place of its
				// head, and no image's check.
				if cfg, err := m.taskConfig(spec, o.TaskRun); err == nil {
					k = imageKey(spec, cfg)
				}
			}
			if m.imageKeys == nil {
				m.imageKeys = map[string]string{}
			}
			m.imageKeys[a] = k
		}
		if k == key {
			return true
		}
	}
	return false
}

// ancestorsOf are the walk's nodes the node named runs after, directly or not.
func (m *mapper) ancestorsOf(name string) map[string]bool {
	if a, ok := m.ancestors[name]; ok {
		return a
	}
	if m.ancestors == nil {
		m.ancestors = map[string]map[string]bool{}
	}
	out := map[string]bool{}
	m.ancestors[name] = out // a cycle, which Tekton refuses, ends here
	for _, d := range m.deps[name] {
		out[d] = true
		for a := range m.ancestorsOf(d) {
			out[a] = true
		}
	}
	return out
}

// imageDigest is the digest the step's image was pulled at, from the image ID of its
// container: the TaskRun's record of it, or the pod's.
func imageDigest(tr *v1.TaskRun, pod *corev1.Pod) string {
	id := ""
	for _, s := range tr.Status.Steps {
		if (s.Name == runspec.StepRun || s.Container == runspec.StepContainer) && s.ImageID != "" {
			id = s.ImageID
		}
	}
	if id == "" {
		return ImageDigest(pod, runspec.StepContainer)
	}
	return digestOf(id)
}

// ImageDigest is the digest of the image the node pulled for a container of pod (nil:
// none), "" when its status does not say.
func ImageDigest(pod *corev1.Pod, container string) string {
	if pod == nil {
		return ""
	}
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name == container {
			return digestOf(s.ImageID)
		}
	}
	return ""
}

// digestOf is the sha256 digest of an image ID (NAME@sha256:...), "" for another.
func digestOf(id string) string {
	if _, digest, ok := strings.Cut(id, "@"); ok && strings.HasPrefix(digest, "sha256:") {
		return digest
	}
	return ""
}

// taskConfig is the task's config for initialize-task and start-task: the plan's, or the
// one its resolve step read from a file (none while it has not).
func (m *mapper) taskConfig(spec runspec.Spec, tr *v1.TaskRun) (concourse.TaskConfig, error) {
	var cfg concourse.TaskConfig
	if spec.Mode != runspec.ModeTask || spec.Task == nil {
		return cfg, nil
	}
	raw := spec.Task.Config
	if raw == nil {
		if text := m.resolvedConfig(spec.PlanID); text != "" {
			if err := json.Unmarshal([]byte(text), &raw); err != nil {
				return cfg, err
			}
		}
	}
	data, err := json.Marshal(raw)
	if err != nil {
		return cfg, err
	}
	return cfg, json.Unmarshal(data, &cfg)
}

func (m *mapper) resolvedConfig(taskPlanID string) string {
	names := make([]string, 0, len(m.obs.Steps))
	for name := range m.obs.Steps {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		o := m.obs.Steps[name]
		if o.TaskRun == nil {
			continue
		}
		if s, ok := StepSpec(o.TaskRun); ok && s.Mode == runspec.ModeResolve && s.Resolve != nil && s.Resolve.TaskPlanID == taskPlanID {
			return Result(o.TaskRun, runspec.ResultConfig)
		}
	}
	return ""
}

// next is the first index of a part the cursor does not cover.
func (c *Cursor) next(step string, p Part) int {
	if s := c.steps[step]; s != nil {
		return *s.count(p)
	}
	return 0
}

// pastHead tells whether events of the step after its head were delivered: its head was,
// whole (a step's parts are delivered in order), and need not be mapped again.
func (c *Cursor) pastHead(step string) bool {
	return c.next(step, PartLog) > 0 || c.next(step, PartEnd) > 0
}

// endTime is when a step ended: its runner's container's end, which the kubelet reports
// once, else the TaskRun's completion. Tekton may write a TaskRun's completion time twice
// (a status update whose answer an apiserver restart lost is made again, with a new time),
// and a mapping must not depend on which of the two a process saw.
func endTime(tr *v1.TaskRun, pod *corev1.Pod) int64 {
	if s := containerState(tr, pod); s.Terminated != nil && !s.Terminated.FinishedAt.IsZero() {
		return s.Terminated.FinishedAt.Unix()
	}
	if tr.Status.CompletionTime != nil {
		return tr.Status.CompletionTime.Unix()
	}
	if tr.Status.StartTime != nil {
		return tr.Status.StartTime.Unix()
	}
	return 0
}

// containerState is the runner's container: from the TaskRun's step states, which outlive
// the pod, else from the pod.
func containerState(tr *v1.TaskRun, pod *corev1.Pod) corev1.ContainerState {
	for _, s := range tr.Status.Steps {
		if s.Name == runspec.StepRun || s.Container == runspec.StepContainer {
			if s.Running != nil || s.Terminated != nil {
				return s.ContainerState
			}
		}
	}
	if pod != nil {
		for _, s := range pod.Status.ContainerStatuses {
			if s.Name == runspec.StepContainer {
				return s.State
			}
		}
	}
	return corev1.ContainerState{}
}

// installed tells whether the step's runner was installed: its step can begin. A pod
// that has the runner's image as a volume (translate.Options.RunnerImageVolume) has no
// step that installs it: it is there from the start.
func installed(tr *v1.TaskRun, pod *corev1.Pod) bool {
	copies := false
	for _, s := range tr.Status.Steps {
		if s.Name == runspec.StepInstall || s.Container == runspec.InstallContainer {
			if s.Terminated != nil {
				return true
			}
			copies = true
		}
	}
	if pod == nil {
		return len(tr.Status.Steps) > 0 && !copies
	}
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name == runspec.InstallContainer && s.State.Terminated != nil {
			return true
		}
	}
	return !copies && !slices.ContainsFunc(pod.Spec.Containers, func(c corev1.Container) bool { return c.Name == runspec.InstallContainer })
}

// ran tells whether a container started: Tekton marks the steps of a pod that failed
// before they started as terminated too, but without a container.
func ran(s corev1.ContainerState) bool {
	return s.Running != nil || s.Terminated != nil && s.Terminated.ContainerID != ""
}

// runStart is when the build started: its PipelineRun's creation, which never changes
// (a run made without one, by a test, its start). The run's Status.StartTime can change
// once: Tekton's controller, reconciling from a cache that has not yet seen its first
// status write, sets it again a second later, and a mapping must not depend on which of
// the two a process saw (a follower during the build, `events` after it).
func runStart(run *v1.PipelineRun) int64 {
	switch {
	case !run.CreationTimestamp.IsZero():
		return run.CreationTimestamp.Unix()
	case run.Status.StartTime != nil:
		return run.Status.StartTime.Unix()
	}
	return 0
}

// startTime is when the step began: the TaskRun's start, which never changes (a
// container's start differs between its running and terminated states in Tekton's
// status, and a mapping must not depend on which one a process saw).
func startTime(tr *v1.TaskRun) int64 {
	if tr.Status.StartTime != nil {
		return tr.Status.StartTime.Unix()
	}
	return tr.CreationTimestamp.Unix()
}

// worker is the node the step's pod runs on: Concourse's worker.
func worker(tr *v1.TaskRun, pod *corev1.Pod) string {
	if pod != nil && pod.Spec.NodeName != "" {
		return pod.Spec.NodeName
	}
	return "unknown"
}

func unix(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}
