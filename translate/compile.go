package translate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/tektoncd/pipeline/pkg/apis/pipeline/pod"
	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/vars"
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// The compile scheme (DESIGN §3). Every leaf step is a PipelineTask running the step
// runner, with `onError: continue` and its Concourse outcome as the result `outcome`.
// Composite steps become guards: each compiled node knows the condition under which it
// starts (its entry) and answers "did it end in one of these outcomes?" with a condition
// later tasks can take as their entry. Cheap answers are `when` expressions over a leaf's
// outcome; "failed" of a composite step is an OR of ways to fail (failedTerms), for which
// an on_failure hook is compiled once each (hookCopies); an answer no `when` can give
// ("errored", which a pod that never started cannot report, and other ORs) comes from a
// join task: the runner evaluating the node's subtree from the outcomes in the build's
// state directory.
//
// This file holds that machinery and the dispatch over plan types; compile_leaf.go
// compiles the steps that run (get, put, task, check, load_var, set_pipeline),
// compile_composite.go the steps that arrange others, compile_across.go across.

// cond is a PipelineTask's entry condition: every `when` holds, after the tasks in after.
type cond struct {
	when  v1.WhenExpressions
	after []string
	// failing, in a condition of failedTerms, is the leaf whose failure it says.
	failing string
}

// and is the condition that both c and o hold: their whens, and their afters each once,
// in order.
func (c cond) and(o cond) cond {
	out := cond{when: make(v1.WhenExpressions, 0, len(c.when)+len(o.when)), failing: c.failing}
	out.when = append(append(out.when, c.when...), o.when...)
	if out.failing == "" {
		out.failing = o.failing
	}
	n := len(c.after) + len(o.after)
	if n == 0 {
		return out
	}
	out.after = make([]string, 0, n)
	// Mostly a few: a scan of them costs less than a set, which many need.
	var seen map[string]bool
	if n > 16 {
		seen = make(map[string]bool, n)
	}
	for _, after := range [2][]string{c.after, o.after} {
		for _, a := range after {
			if seen[a] || seen == nil && slices.Contains(out.after, a) {
				continue
			}
			if seen != nil {
				seen[a] = true
			}
			out.after = append(out.after, a)
		}
	}
	return out
}

// outcomes is a set of Concourse outcomes, in a fixed order.
type outcomes []runspec.Outcome

var (
	anyOutcome   = outcomes{runspec.Succeeded, runspec.Failed, runspec.Errored, runspec.Aborted}
	onlySuccess  = outcomes{runspec.Succeeded}
	failedOrErr  = outcomes{runspec.Failed, runspec.Errored}
	onlyFailed   = outcomes{runspec.Failed}
	onlyErrored  = outcomes{runspec.Errored}
	onlyAborted  = outcomes{runspec.Aborted}
	everyOutcome = len(anyOutcome)
)

func (s outcomes) has(o runspec.Outcome) bool {
	for _, x := range s {
		if x == o {
			return true
		}
	}
	return false
}

func (s outcomes) values() []string {
	out := make([]string, len(s))
	for i, o := range s {
		out[i] = string(o)
	}
	return out
}

// handle is a compiled plan node.
type handle struct {
	tree  runspec.Node
	name  string
	entry cond
	// tasks are every PipelineTask of the node, for "after it finished".
	tasks []string
	// leaf is set when the node is one PipelineTask whose outcome result is the node's.
	leaf string
	// step is the PipelineTask of the node's own step, whose results (its image, its
	// version) are the step's: the leaf, or the last PipelineTask of a prepared step.
	step string
	// success, when set, is a cheap condition for "the node succeeded".
	success *cond
	// successBy, when set, makes success on first need (lazySuccess): a node whose
	// success no one asks for makes no join for it.
	successBy func() *cond
	// join is the node's join task, made on first need.
	join string
	// failedBy, when set, makes the node's failedTerms, on first need (most nodes are
	// never asked).
	failedBy func() []cond
	failed   []cond
}

// stub is the handle of a node that could not be compiled; the compiler has failed, so
// nothing reads it beyond the rest of the walk.
func stub(id concourse.PlanID, kind runspec.Kind, name string, e cond) *handle {
	return &handle{tree: runspec.Node{ID: string(id), Kind: kind}, name: name, entry: e}
}

// scope is the Concourse context a subtree runs in.
type scope struct {
	layers     []runspec.Layer
	hookStatus string
	scope      []string
	// acrossVars are the enclosing across steps' values for this substep.
	acrossVars map[string]any
	// slots are the enclosing across steps' slots (values known only at run time), and
	// runtimeVars their vars' names.
	slots       []runspec.AcrossSlot
	runtimeVars []string
}

func (s scope) with(l runspec.Layer) scope {
	s.layers = append(append([]runspec.Layer{}, s.layers...), l)
	return s
}

// withTimeout is s inside the timeout d of step id; no timeout leaves s as it is.
func (s scope) withTimeout(id concourse.PlanID, d string) scope {
	if d == "" {
		return s
	}
	return s.with(runspec.Layer{Kind: runspec.LayerTimeout, ID: string(id), Duration: d})
}

func outcomeOf(task string) string { return "$(tasks." + task + ".results.outcome)" }

// test is the condition under which a task runs exactly when h ended in one of s.
func (c *compiler) test(h *handle, s outcomes) cond {
	switch {
	case len(s) == everyOutcome:
		// "h finished": runAfter holds for skipped tasks too, and h's own entry tells
		// whether h was entered at all.
		return h.entry.and(cond{after: h.tasks})
	case len(s) == 1 && s[0] == runspec.Succeeded && c.resolveSuccess(h) != nil:
		return *h.success
	case h.leaf != "" && !s.has(runspec.Errored):
		return outcomeIn(h.leaf, s)
	}
	j := c.joinFor(h)
	return outcomeIn(j, s)
}

// outcomeIn is the condition under which a task runs after the task that publishes an
// outcome (a leaf, a join) when that outcome is one of s.
func outcomeIn(task string, s outcomes) cond {
	return cond{when: v1.WhenExpressions{{Input: outcomeOf(task), Operator: "in", Values: s.values()}}, after: []string{task}}
}

// endedRun is a run's outcomes other than an error or an abort: what a leaf that failed
// or succeeded published.
var endedRun = outcomes{runspec.Succeeded, runspec.Failed}

// joinFor makes (once) the task that publishes h's outcome: the runner, in its own image.
func (c *compiler) joinFor(h *handle) string {
	if h.join != "" {
		return h.join
	}
	spec := c.spec(runspec.ModeJoin, concourse.PlanID(h.tree.ID), h.name, scope{})
	spec.Join = &runspec.Join{Tree: h.tree}
	h.join = c.taskName("join-" + h.name)
	c.tasks = append(c.tasks, c.pipelineTask(h.join, c.opts.RunnerImage, taskVariant{}, &spec, h.entry.and(cond{after: h.tasks})))
	return h.join
}

// failedTerms are conditions of which one holds when h failed, and none when it did not:
// `when` expressions over the outcomes of leaves, each reading only leaves that have run
// when it holds (Tekton skips a task whose `when` reads a result nobody wrote). A hook
// that runs when h failed is compiled once for each of them, instead of after a join
// (hook): a failure is an OR of ways to fail, which no one `when` can say, and a join is
// a pod on the critical path of every build, failed or not. nil when h has no such
// conditions, or more than maxFailedTerms.
func (c *compiler) failedTerms(h *handle) []cond {
	if h.failedBy != nil {
		h.failed, h.failedBy = h.failedBy(), nil
	}
	if h.failed != nil {
		return h.failed
	}
	if h.leaf != "" {
		t := c.test(h, onlyFailed)
		t.failing = h.leaf
		return []cond{t}
	}
	return nil
}

// maxFailedTerms bounds the ways to fail a node's failedTerms list; maxHookCopies
// bounds the steps a hook compiled once for each of them adds to the Pipeline.
const (
	maxFailedTerms = 16
	maxHookCopies  = 64
)

// seqFailed is failedTerms of nodes that run one after another, each once the one
// before it succeeded (a do): the node fails when one of them fails, and only the one
// that failed has run last. nil when one of them has none.
func (c *compiler) seqFailed(nodes []*handle) []cond {
	var terms []cond
	for _, n := range nodes {
		t := c.failedTerms(n)
		if t == nil {
			return nil
		}
		terms = append(terms, t...)
	}
	if len(terms) == 0 || len(terms) > maxFailedTerms {
		return nil
	}
	return terms
}

// resolveSuccess is h's success condition, made now if h makes it on first need.
func (c *compiler) resolveSuccess(h *handle) *cond {
	if h.successBy != nil {
		h.success, h.successBy = h.successBy(), nil
	}
	return h.success
}

// lazySuccess is a handle's successBy: f, called on first need, under the name suffix of
// the copy being compiled now (hookCopies), so that a join f makes is named as one made
// now would be.
func (c *compiler) lazySuccess(f func() *cond) func() *cond {
	suffix := c.nameSuffix
	return func() *cond {
		saved := c.nameSuffix
		c.nameSuffix = suffix
		defer func() { c.nameSuffix = saved }()
		return f()
	}
}

// successOf is a cheap success condition for h, if it has one.
func (c *compiler) successOf(h *handle) *cond {
	if c.resolveSuccess(h) != nil {
		return h.success
	}
	if h.leaf != "" {
		s := c.test(h, onlySuccess)
		return &s
	}
	return nil
}

type compiler struct {
	opts Options
	// encoded is finish's buffer for the specs' JSON.
	encoded []byte
	// imagePlans are the public plans of the fetches of task images that steps of the
	// build do, by the plan ID of the fetch's first step (runspec.Spec.ImagePlans).
	imagePlans map[concourse.PlanID][]json.RawMessage
	tasks      []v1.PipelineTask
	names      map[string]bool
	// taskDefs are the shared Task definitions, by name.
	taskDefs map[string]*v1.Task
	// taskNames are the Tasks' names by their variant's key.
	taskNames map[string]string
	// keyBuf is stepTask's buffer for a variant's key.
	keyBuf []byte
	// acrossSubsteps are the public substeps of each across step whose values are known
	// at compile time, by its plan ID, for the verdict's tree (withSubsteps).
	acrossSubsteps map[string][]json.RawMessage
	// runSpecs are per-PipelineTask pod settings (node selectors for tags).
	runSpecs []v1.PipelineTaskRunSpec
	// specs are the runner specs of the PipelineTasks, encoded into their params at the end
	// (a fail-fast group adds its layer to its children's specs after compiling them).
	specs map[string]*runspec.Spec
	// variants are the PipelineTasks' Task variants.
	variants map[string]taskVariant
	// nameSuffix, while a copy of an on_failure hook compiles (hookCopies), ends the
	// names of its tasks: what the copy is for.
	nameSuffix string
	// failureHooks are the tasks of the on_failure hooks compiled once for each way
	// their step can fail (hookCopies), by the hook node's plan ID.
	failureHooks map[concourse.PlanID][]string
	// fused is the task that holds the build's verdict after its step (fuseVerdict), if
	// any, and fusedSpec that verdict's spec.
	fused     string
	fusedSpec *runspec.Spec
	// pulls are the credentials of the images pulled with some (registryImage), by image.
	pulls map[string]ImagePull
	// runtimePulls are the images of the tasks whose config is a file read at run time,
	// with supplied credentials: their resolve steps say which credentials, if any, the
	// build's starter adds to the build's Secret of them (runspec.ResultPull).
	runtimePulls map[string]bool
	// secrets are the Secrets the build reads credentials from.
	secrets map[string]bool
	creds   map[string]Credential
	// secretsFor keeps what secretsOf made, by the references it was given.
	secretsFor map[string][]secretMount
	// images are the artifacts a task can run (`image: name`) as they are, by name: the
	// image the get that fetched it from a registry names (a result reference), or the
	// mock resource's own image for its fetch of itself. Any other artifact is published
	// to the build's registry for the task (publish).
	images map[string]string
	// publishes counts the publish steps: the Pipeline then takes the image registry.
	publishes int
	// shares counts the steps that share resource caches (sharesCaches): the Pipeline
	// then takes the image registry too.
	shares int
	// origins map the IDs the compiler makes (an across substep's renumbered nodes, a get's
	// check) to the ID of the node of the input plan they come from, for errors.
	origins map[concourse.PlanID]concourse.PlanID
	// artifactInputs and artifactOutputs are a one-off build's (Result.ArtifactInputs).
	artifactInputs  []ArtifactInput
	artifactOutputs []string
	warnings        []*UnsupportedError
	err             error
}

// derive records that the node id was made from the input plan's node from.
func (c *compiler) derive(id, from concourse.PlanID) {
	if c.origins == nil {
		c.origins = map[concourse.PlanID]concourse.PlanID{}
	}
	c.origins[id] = from
}

// fail records the first construct the translation cannot express. The error names the
// node of the input plan, so that the caller can place it at the step it came from.
func (c *compiler) fail(p *concourse.Plan, step, format string, args ...any) {
	if c.err != nil {
		return
	}
	c.err = &UnsupportedError{PlanID: c.origin(p.ID), Step: step, Reason: fmt.Sprintf(format, args...)}
}

// warn records something that compiles but will error when the build runs, once per
// node of the input plan.
func (c *compiler) warn(p *concourse.Plan, step, format string, args ...any) {
	w := &UnsupportedError{PlanID: c.origin(p.ID), Step: step, Reason: fmt.Sprintf(format, args...)}
	for _, seen := range c.warnings {
		if *seen == *w {
			return
		}
	}
	c.warnings = append(c.warnings, w)
}

// origin is the node of the input plan that the compiler's node id was made from.
func (c *compiler) origin(id concourse.PlanID) concourse.PlanID {
	for {
		from, ok := c.origins[id]
		if !ok {
			return id
		}
		id = from
	}
}

// taskName returns a unique, readable PipelineTask name.
func (c *compiler) taskName(base string) string {
	if c.nameSuffix != "" {
		base += "-" + c.nameSuffix
	}
	name := labelName(base)
	for i := 2; c.names[name]; i++ {
		name = labelName(fmt.Sprintf("%s-%d", base, i))
	}
	c.names[name] = true
	return name
}

func (c *compiler) spec(mode runspec.Mode, planID concourse.PlanID, name string, sc scope) runspec.Spec {
	return runspec.Spec{
		Mode:   mode,
		PlanID: string(planID),
		Name:   name,
		// Each run gives the name (see runspec.ParamBuildName, finish); the rest is the
		// build's context, once for the whole build (buildContext).
		Build:               runspec.Build{Name: buildNamePlaceholder},
		HookStatus:          sc.hookStatus,
		Context:             sc.layers,
		Scope:               sc.scope,
		AcrossVars:          sc.acrossVars,
		AcrossSlots:         sc.slots,
		VarSources:          c.opts.VarSources,
		SuppliedCredentials: c.opts.SuppliedCredentials,
		ImagePlans:          c.imagePlans[planID],
	}
}

// buildContext is what each step knows of the build but its name, the JSON of
// runspec.AnnotationBuildContext: the job's part, the same for each of its builds, for
// its Pipeline, and with the build's own ID and creator for the build's run.
func (c *compiler) buildContext() (job, build string, err error) {
	b := runspec.Build{
		TeamID:        c.opts.TeamID,
		TeamName:      c.opts.Team,
		PipelineName:  c.pipelineField(),
		InstanceVars:  c.opts.InstanceVars,
		JobName:       c.jobField(),
		ExternalURL:   c.opts.ExternalURL,
		Check:         c.opts.Check,
		RevealSecrets: c.opts.RevealSecrets,
	}
	if b.PipelineName != "" {
		b.PipelineID = c.opts.PipelineID
	}
	if b.JobName != "" {
		b.JobID = c.opts.JobID
	}
	jobJSON, err := json.Marshal(b)
	if err != nil {
		return "", "", fmt.Errorf("encoding the build's context: %w", err)
	}
	b.ID, b.CreatedBy = c.opts.BuildID, c.opts.CreatedBy
	buildJSON, err := json.Marshal(b)
	if err != nil {
		return "", "", fmt.Errorf("encoding the build's context: %w", err)
	}
	return string(jobJSON), string(buildJSON), nil
}

// runName is the name of the build's PipelineRun.
func (c *compiler) runName() string {
	return RunName(Scope(c.opts.Team, c.opts.Pipeline, c.opts.InstanceVars), c.opts.Job, c.opts.Build)
}

// compile compiles p to run when e holds, in scope sc.
func (c *compiler) compile(p *concourse.Plan, e cond, sc scope) *handle {
	if !c.runtimeGuard(p, sc) {
		return stub(p.ID, runspec.KindLeaf, "unsupported", e)
	}
	switch {
	case p.Get != nil:
		return c.get(p, e, sc)
	case p.Put != nil:
		return c.put(p, e, sc)
	case p.Task != nil:
		return c.task(p, e, sc)
	case p.LoadVar != nil:
		return c.loadVar(p, e, sc)
	case p.SetPipeline != nil:
		return c.setPipeline(p, e, sc)
	case p.Do != nil:
		return c.do(p, e, sc)
	case p.InParallel != nil:
		in := p.InParallel
		return c.parallel(group{id: p.ID, kind: runspec.KindInParallel, steps: in.Steps, limit: in.Limit, failFast: in.FailFast}, e, sc)
	case p.Across != nil:
		return c.across(p, e, sc)
	case p.Retry != nil:
		return c.retry(p, e, sc)
	case p.Try != nil:
		return c.try(p, e, sc)
	case p.Timeout != nil:
		return c.timeout(p, e, sc)
	case p.OnSuccess != nil, p.OnFailure != nil, p.OnError != nil, p.OnAbort != nil, p.Ensure != nil:
		return c.hook(p, e, sc)
	case p.Check != nil:
		return c.check(p, e, sc)
	case p.Run != nil:
		return c.run(p, e, sc)
	case p.ArtifactInput != nil, p.ArtifactOutput != nil:
		if c.opts.OneOff {
			return c.artifact(p, e, sc)
		}
		c.fail(p, "", "artifact inputs and outputs are for one-off builds (execute), not pipelines")
	default:
		c.fail(p, "", "empty plan node")
	}
	return stub(p.ID, runspec.KindLeaf, "unsupported", e)
}

// leaf adds the PipelineTask of one step, named <mode>-<step>.
func (c *compiler) leaf(spec runspec.Spec, image string, variant taskVariant, tags concourse.Tags, e cond) *handle {
	kind := strings.ReplaceAll(string(spec.Mode), "_", "-")
	name := c.taskName(kind + "-" + spec.Name)
	variant.sharedCaches = c.sharesCaches(spec)
	account, err := c.opts.Identity.account(c.opts.Team, spec.Mode, tags)
	if err != nil && c.err == nil {
		c.err = &UnsupportedError{PlanID: c.origin(concourse.PlanID(spec.PlanID)), Step: spec.Name, Reason: err.Error()}
	}
	if account != "" {
		variant.identityAudience, variant.identityExpiration = c.opts.Identity.audience(), c.opts.Identity.expiration()
	}
	c.tasks = append(c.tasks, c.pipelineTask(name, image, variant, &spec, e))
	c.nodeSelector(name, tags)
	if account != "" {
		c.taskRunSpec(name).ServiceAccountName = account
	}
	if variant.runAs != 0 {
		// The build volume is written by every step: the kubelet gives it (its root, and
		// once all that is in it) to a group of the user's, as Kubernetes does for a pod
		// that does not run as root.
		c.podTemplate(name).SecurityContext = &corev1.PodSecurityContext{
			FSGroup:             ptr(variant.runAs),
			FSGroupChangePolicy: ptr(corev1.FSGroupChangeOnRootMismatch),
		}
	}
	return &handle{tree: runspec.Node{ID: spec.PlanID, Kind: runspec.KindLeaf}, name: strings.TrimPrefix(name, kind+"-"), entry: e, tasks: []string{name}, leaf: name, step: name}
}

// sharesCaches tells whether a step shares its resource caches with the team's other
// jobs: a job build's get, or a step whose image is the mock resource fetching itself,
// when the build has an image registry (Options.ImageRegistry).
func (c *compiler) sharesCaches(spec runspec.Spec) bool {
	if c.opts.ImageRegistry == "" || c.opts.OneOff || c.opts.Job == "" {
		return false
	}
	return spec.Mode == runspec.ModeGet || (spec.MirroredImage != nil && len(spec.MirroredImage.Fetches) > 0)
}

// pipelineTask makes a PipelineTask running spec; its Task, its credentials and its spec
// are given by finish.
func (c *compiler) pipelineTask(name, image string, variant taskVariant, spec *runspec.Spec, e cond) v1.PipelineTask {
	c.specs[name] = spec
	c.variants[name] = variant
	params := v1.Params{{Name: runspec.ParamImage, Value: *v1.NewStructuredValues(image)}}
	if variant.taskVars != "" {
		params = append(params, v1.Param{Name: runspec.ParamTaskVars, Value: *v1.NewStructuredValues(variant.taskVars)})
	}
	if secret := variant.registrySecret(); secret != "" {
		for _, p := range []string{runspec.ParamImageRegistry, secret} {
			params = append(params, v1.Param{Name: p, Value: *v1.NewStructuredValues("$(params." + p + ")")})
		}
	}
	if variant.sharedCaches {
		c.shares++
		params = append(params, v1.Param{Name: runspec.ParamResourceCacheIndex, Value: *v1.NewStructuredValues(runspec.ResourceCacheIndex(c.opts.Team))})
	}
	pt := v1.PipelineTask{
		Name:       name,
		Params:     params,
		Workspaces: []v1.WorkspacePipelineTaskBinding{{Name: runspec.Workspace, Workspace: runspec.Workspace}},
		When:       e.when,
		OnError:    v1.PipelineTaskContinue,
		Timeout:    &metav1.Duration{},
	}
	pt.RunAfter = runAfter(&pt, e.after)
	return pt
}

// runAfter is after without the tasks pt reads a result of: Tekton runs a task after
// those whose results its params or `when` expressions read (v1.PipelineTask.Deps), so
// saying it again only lengthens the Pipeline.
func runAfter(pt *v1.PipelineTask, after []string) []string {
	var out []string
	for _, a := range after {
		ref := "$(tasks." + a + ".results."
		reads := slices.ContainsFunc(pt.When, func(w v1.WhenExpression) bool { return strings.Contains(w.Input, ref) }) ||
			slices.ContainsFunc(pt.Params, func(p v1.Param) bool { return strings.Contains(p.Value.StringVal, ref) })
		if !reads {
			out = append(out, a)
		}
	}
	return out
}

// buildNamePlaceholder stands for the build's name in a spec until finish makes it the
// run's param.
const buildNamePlaceholder = "concourse-tekton:build-name"

// finish gives each task its runner spec, the credentials the spec's ((vars)) read (the
// Secrets they may come from, or with supplied credentials the keys of the build's
// Secret) and the Task of its variant: once the specs are complete (a fail-fast group
// adds its layer to its steps' specs after compiling them, the verdict goes to the last
// step's Task), from the spec's one encoding.
func (c *compiler) finish(tasks []v1.PipelineTask) {
	for i := range tasks {
		name, spec := tasks[i].Name, c.specs[tasks[i].Name]
		var err error
		if c.encoded, err = spec.AppendJSON(c.encoded[:0]); err != nil && c.err == nil {
			c.err = err
		}
		variant := c.variants[name]
		// A join or the verdict reads no credentials: a ((var)) in its spec is in the
		// build's names (a job named with one), which nothing interpolates.
		var refs []vars.Reference
		if spec.Mode != runspec.ModeJoin && spec.Mode != runspec.ModeVerdict {
			refs = refsIn(c.encoded, stringRefs)
		}
		if c.opts.SuppliedCredentials {
			if variant.credentials = c.suppliedKeys(refs); len(variant.credentials) > 0 {
				// The build's Secret is named after its PipelineRun.
				tasks[i].Params = slices.Insert(tasks[i].Params, 1, v1.Param{Name: paramCredentials, Value: *v1.NewStructuredValues("$(context.pipelineRun.name)")})
			}
		} else {
			variant.secrets = c.secretsOf(refs)
		}
		c.variants[name] = variant
		tasks[i].TaskRef = &v1.TaskRef{Name: c.stepTask(variant)}
		tasks[i].Params = append(tasks[i].Params, v1.Param{Name: runspec.ParamSpec, Value: *v1.NewStructuredValues(c.param(name, c.encoded))})
		if name == c.fused {
			if c.encoded, err = c.fusedSpec.AppendJSON(c.encoded[:0]); err != nil && c.err == nil {
				c.err = err
			}
			tasks[i].Params = append(tasks[i].Params, v1.Param{Name: runspec.ParamVerdictSpec, Value: *v1.NewStructuredValues(c.param(name, c.encoded))})
		}
	}
}

// param is the encoded spec of the task name as its param, made in one copy of it.
func (c *compiler) param(name string, encoded []byte) string {
	// But the build's name is the run's param: the one $( Tekton is to replace. (A
	// user's string cannot hold this unescaped quote-brace sequence.)
	const field = `"build":{"name":"`
	placeholder := field + buildNamePlaceholder + `"`
	at := bytes.Index(encoded, []byte(placeholder))
	if at < 0 && c.err == nil {
		c.err = fmt.Errorf("internal error: the spec of %s has no build name to give", name)
	}
	// Tekton reads $(...) in a param as a variable and rejects the ones it does not
	// know, such as a script's $(pwd). In JSON strings, \u0028 is '(' to the runner.
	var b strings.Builder
	b.Grow(len(encoded) + len("$(params."+runspec.ParamBuildName+")") + 5*bytes.Count(encoded, []byte("$(")))
	escaped := func(s []byte) {
		for {
			i := bytes.Index(s, []byte("$("))
			if i < 0 {
				b.Write(s)
				return
			}
			b.Write(s[:i])
			b.WriteString(`$\u0028`)
			s = s[i+2:]
		}
	}
	if at < 0 {
		escaped(encoded)
		return b.String()
	}
	escaped(encoded[:at])
	b.WriteString(field + "$(params." + runspec.ParamBuildName + `)"`)
	escaped(encoded[at+len(placeholder):])
	return b.String()
}

func (c *compiler) nodeSelector(task string, tags concourse.Tags) {
	if len(tags) == 0 || len(c.opts.NodeSelectors) == 0 {
		return
	}
	sel := map[string]string{}
	for _, t := range tags {
		for k, v := range c.opts.NodeSelectors[t] {
			sel[k] = v
		}
	}
	if len(sel) == 0 {
		return
	}
	c.podTemplate(task).NodeSelector = sel
}

// podTemplate is the pod template of one PipelineTask's pods, made on first use.
func (c *compiler) podTemplate(task string) *pod.Template {
	return c.taskRunSpec(task).PodTemplate
}

// taskRunSpec is the run spec of one PipelineTask's TaskRuns, made on first use.
func (c *compiler) taskRunSpec(task string) *v1.PipelineTaskRunSpec {
	for i := range c.runSpecs {
		if c.runSpecs[i].PipelineTaskName == task {
			return &c.runSpecs[i]
		}
	}
	c.runSpecs = append(c.runSpecs, v1.PipelineTaskRunSpec{PipelineTaskName: task, PodTemplate: &pod.Template{}})
	return &c.runSpecs[len(c.runSpecs)-1]
}
