package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/concourse-tekton/concourse-tekton/concourse/vars"
	"github.com/concourse-tekton/concourse-tekton/runner/eval"
	"github.com/concourse-tekton/concourse-tekton/runner/redact"
	"github.com/concourse-tekton/concourse-tekton/runner/state"
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// The causes a step's context ends with; their texts are Concourse's error events, but
// errStopped's, which says what Concourse's nearest case (a container destroyed under a
// running step) would not.
var (
	errInterrupted = errors.New("interrupted")
	errTimeout     = errors.New("timeout exceeded")
	// errStopped: the runner was signalled (SIGTERM, SIGINT), which a build's abort never
	// does (it writes the abort marker): Kubernetes stopped the step's pod, deleted or
	// evicted by someone else.
	errStopped = errors.New("the step's pod was stopped before the step ended: deleted or evicted by someone other than this build")
)

// step is what a mode works with.
type step struct {
	spec    runspec.Spec
	opts    options
	paths   runspec.Paths
	state   state.Dir
	secrets *redact.Secrets
	stdout  *redact.Writer
	stderr  *redact.Writer
	vars    *buildVars
	// exitStatus is the exit status of the step's process (task, in or out), once it
	// exited: finish-task, finish-get and finish-put report it.
	exitStatus *int
	// failure is why the step did not finish: Concourse's error event ("interrupted",
	// "timeout exceeded" or a message). It is a result, not a log line, so that logs stay
	// the process's own output.
	failure string
	// shared are the shared resource caches the step found or saved (its result
	// runspec.ResultResourceCache).
	shared []runspec.ResourceCacheRecord
}

// body is a leaf mode: Concourse's (ok, err) of a step. Join and verdict compute an
// outcome instead (computeOutcome).
type body func(ctx context.Context, s *step) (ok bool, err error)

var bodies = map[runspec.Mode]body{
	runspec.ModeTask:        runTask,
	runspec.ModeGet:         runGet,
	runspec.ModePut:         runPut,
	runspec.ModeCheck:       runCheck,
	runspec.ModeLoadVar:     runLoadVar,
	runspec.ModeRun:         runRun,
	runspec.ModeSetPipeline: runSetPipeline,
	runspec.ModeResolve:     runResolve,
	runspec.ModePublish:     runPublish,
	runspec.ModeAcross:      runAcross,
}

// runStep runs the step of spec and returns the runner's exit code: the outcome's
// (runspec.Outcome.ExitCode), but for a join that recorded its outcome, which exits 0:
// a join only computes an outcome, which its result carries, and its TaskRun shows as
// failed (in tkn, in the PipelineRun's counts) only when the join itself broke.
//
// With opts.verdict, once the step succeeded, the runner records the build's verdict too,
// in the same container: its results beside the step's (runspec.ResultVerdict and
// runspec.ResultVerdictError), its lines in no log (the step's is the build's output).
// When the step did not succeed, the build's VerdictTask records the build, as it does
// when the verdict is a step of its own.
func runStep(ctx context.Context, spec runspec.Spec, opts options, stdout, stderr io.Writer) int {
	code := runOne(ctx, spec, opts, stdout, stderr, false)
	if opts.verdict == nil || code != 0 {
		return code
	}
	return runOne(ctx, *opts.verdict, opts, io.Discard, io.Discard, true)
}

// runOne runs one step; inline says it is a verdict run in the container of the step
// before it (whose results stay).
func runOne(ctx context.Context, spec runspec.Spec, opts options, stdout, stderr io.Writer, inline bool) int {
	s := newStep(spec, opts, stdout, stderr)
	fused := spec.Verdict != nil && spec.Verdict.Fused
	if fused && !inline {
		// In the pod of the build's last step, whose results its own termination message
		// holds: Tekton would repeat them in this step's, where they may not fit (the
		// kubelet shares 12 KiB among the pod's containers).
		if err := s.clearResults(); err != nil {
			s.logf("%v", err)
			s.stderr.Flush()
			return runspec.Errored.ExitCode()
		}
	}
	outcome := s.execute(ctx)
	if fused && outcome != runspec.Succeeded {
		// The build's VerdictTask records a build that did not succeed (it runs when
		// this step's TaskRun did not succeed).
		s.logf("its verdict is left to the %s task", runspec.VerdictTask)
		s.stderr.Flush()
		return runspec.Failed.ExitCode()
	}
	broken := false
	if err := s.record(outcome); err != nil {
		s.fail(err)
		outcome, broken = runspec.Errored, true
	}
	if s.spec.Verdict != nil {
		// Only now that the build's outcome is recorded.
		s.leaveCaches(outcome)
	}
	if err := s.writeEnd(); err != nil {
		s.logf("%v", err)
		outcome, broken = runspec.Errored, true
	}
	s.stdout.Flush()
	s.stderr.Flush()
	if s.spec.Join != nil && !broken {
		return 0
	}
	return outcome.ExitCode()
}

// newStep is a step of spec whose output goes, redacted, to stdout and stderr.
func newStep(spec runspec.Spec, opts options, stdout, stderr io.Writer) *step {
	paths := spec.Paths.WithDefaults()
	secrets := &redact.Secrets{}
	// The writers redact the secrets the step learns, unless the build reveals them:
	// then they redact nothing.
	shown := secrets
	if spec.Build.RevealSecrets {
		shown = &redact.Secrets{}
	}
	s := &step{
		spec:    spec,
		opts:    opts,
		paths:   paths,
		state:   state.New(paths.Volume),
		secrets: secrets,
		stdout:  &redact.Writer{W: stdout, Secrets: shown},
		stderr:  &redact.Writer{W: stderr, Secrets: shown},
	}
	s.vars = &buildVars{
		state:    s.state,
		scope:    spec.Scope,
		creds:    paths.Creds,
		taskVars: taskVarsDir(spec, paths),
		supplied: spec.SuppliedCredentials,
		pipeline: spec.Build.PipelineName,
		sources:  spec.VarSources,
		across:   spec.AcrossVars,
		secrets:  secrets,
	}
	return s
}

// logf writes one line of the runner's own to the step's log, redacted.
func (s *step) logf(format string, args ...any) {
	fmt.Fprintf(s.stderr, format+"\n", args...)
}

// interpolate resolves ((vars)) strictly with the build's vars: a missing one is an error.
func (s *step) interpolate(v any) (any, error) {
	return vars.Interpolate(v, s.vars, true)
}

func (s *step) execute(ctx context.Context) runspec.Outcome {
	switch {
	case s.spec.Join != nil:
		o := s.computeOutcome(s.spec.Join.Tree)
		s.logf("%s: %s", s.spec.Join.Tree.ID, o)
		return o
	case s.spec.Verdict != nil:
		o := s.computeOutcome(s.spec.Verdict.Tree)
		s.logf("build %s", o)
		return o
	}
	if err := s.enterSlots(); err != nil {
		s.fail(err)
		return runspec.Errored
	}
	g, err := s.start()
	if err != nil {
		s.fail(err)
		return runspec.Errored
	}
	switch g.skip {
	case runspec.Aborted:
		s.fail(errInterrupted)
		return runspec.Aborted
	case runspec.Failed:
		s.fail(errTimeout)
		return runspec.Failed
	case runspec.NeverRan:
		return runspec.NeverRan
	}
	if s.spec.Error != "" {
		s.fail(errors.New(s.spec.Error))
		return runspec.Errored
	}
	if err := s.vars.trackLocalVars(); err != nil {
		s.fail(err)
		return runspec.Errored
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if !g.deadline.IsZero() {
		var cancelDeadline context.CancelFunc
		ctx, cancelDeadline = context.WithDeadlineCause(ctx, g.deadline, errTimeout)
		defer cancelDeadline()
	}
	if g.watchAbort || len(g.groups) > 0 {
		go s.watch(ctx, cancel, g)
	}
	if s.spec.Mode != runspec.ModeTask {
		// A task announces its start once its process started (runTask).
		s.announceStart()
	}
	ok, err := false, s.mirroredImageEnv(ctx, s.spec.MirroredImage)
	if err == nil {
		ok, err = bodies[s.spec.Mode](ctx, s)
	}
	switch {
	case err == nil && ok:
		return runspec.Succeeded
	case err == nil:
		return runspec.Failed
	case errors.Is(context.Cause(ctx), errStopped) && !s.state.Aborted():
		// A step whose pod Kubernetes stopped errors, as a step whose container goes
		// from under it does in Concourse; unless the build was aborted meanwhile.
		s.fail(errStopped)
		return runspec.Errored
	case errors.Is(err, errTimeout) || errors.Is(err, context.DeadlineExceeded):
		s.fail(errTimeout)
		return runspec.Failed
	case errors.Is(err, errInterrupted) || errors.Is(err, errStopped) || errors.Is(err, context.Canceled):
		s.fail(errInterrupted)
		return runspec.Aborted
	}
	s.fail(err)
	return runspec.Errored
}

// maxErrorResult keeps the error result within Tekton's 4 KiB of results per step, beside
// the version, versions and metadata (resultBudget).
const maxErrorResult = 512

// fail records why the step ended without finishing. The first cause wins.
func (s *step) fail(err error) {
	if s.failure == "" {
		s.failure = s.secrets.String(err.Error())
	}
}

// writeEnd writes the error and exit-status results.
func (s *step) writeEnd() error {
	var errs []error
	if s.failure != "" {
		msg := s.failure
		if len(msg) > maxErrorResult {
			msg = strings.ToValidUTF8(msg[:maxErrorResult-3], "") + "..."
		}
		errs = append(errs, s.writeResult(runspec.ResultError, []byte(msg)))
	}
	if s.exitStatus != nil {
		errs = append(errs, s.writeResult(runspec.ResultExitStatus, []byte(strconv.Itoa(*s.exitStatus))))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("recording the end of the step: %w", err)
	}
	return nil
}

// announceStart tells the backend that the step started, if it is one that may end
// without having started (runspec.AnnouncesStart). A write that fails is not the step's
// failure: its stdout is gone, and its output with it.
func (s *step) announceStart() {
	if runspec.AnnouncesStart(s.spec) {
		_, _ = io.WriteString(s.stdout, runspec.StartMark)
		_ = s.stdout.Flush()
	}
}

// exited remembers the exit status of the step's process.
func (s *step) exited(status int) {
	s.exitStatus = &status
}

// interruption is the error a body returns when its context ended.
func interruption(ctx context.Context) error {
	if cause := context.Cause(ctx); cause != nil {
		return cause
	}
	return errInterrupted
}

// guard is what the step's context layers say before it runs.
type guard struct {
	// skip, when set, is the outcome of a step that must not run.
	skip       runspec.Outcome
	deadline   time.Time
	watchAbort bool
	groups     []string
}

// start reads the step's context layers from the state directory (see runspec's doc):
// it records the starts of timeouts and fail-fast children, and the detach decisions of
// hooks, and says whether the step may run and until when.
func (s *step) start() (guard, error) {
	now := s.opts.clock.Now()
	g := guard{watchAbort: true}
	type member struct{ group, child string }
	var groups []member
	var deadlines []time.Time
	done := func() bool {
		if g.watchAbort && s.state.Aborted() {
			return true
		}
		for _, m := range groups {
			if s.state.Fired(m.group) {
				return true
			}
		}
		for _, d := range deadlines {
			if !now.Before(d) {
				return true
			}
		}
		return false
	}
	for _, l := range s.spec.Context {
		switch l.Kind {
		case runspec.LayerTimeout:
			d, err := time.ParseDuration(l.Duration)
			if err != nil {
				return guard{}, fmt.Errorf("invalid timeout of step %s: %w", l.ID, err)
			}
			start, err := s.state.DeadlineStart(l.ID, now)
			if err != nil {
				return guard{}, err
			}
			deadlines = append(deadlines, start.Add(d))
		case runspec.LayerFailFast:
			groups = append(groups, member{group: l.ID, child: l.Child.ID})
		case runspec.LayerDetach:
			detached, err := s.state.Detach(l.ID, l.Always || done())
			if err != nil {
				return guard{}, err
			}
			if detached {
				g.watchAbort, groups, deadlines = false, nil, nil
			}
		}
	}
	if g.watchAbort && s.state.Aborted() {
		return guard{skip: runspec.Aborted}, nil
	}
	for _, m := range groups {
		if s.state.Fired(m.group) {
			// A child already under way is cancelled; one not started never starts.
			if s.state.Started(m.child) {
				return guard{skip: runspec.Aborted}, nil
			}
			return guard{skip: runspec.NeverRan}, nil
		}
	}
	for _, d := range deadlines {
		if g.deadline.IsZero() || d.Before(g.deadline) {
			g.deadline = d
		}
	}
	if !g.deadline.IsZero() && !now.Before(g.deadline) {
		return guard{skip: runspec.Failed}, nil
	}
	for _, m := range groups {
		if err := s.state.ClaimStart(m.child); err != nil {
			return guard{}, err
		}
		g.groups = append(g.groups, m.group)
	}
	return g, nil
}

// watch polls the abort and fail-fast markers until ctx ends, and cancels it when one
// appears.
func (s *step) watch(ctx context.Context, cancel context.CancelCauseFunc, g guard) {
	t := time.NewTicker(s.opts.poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if g.watchAbort && s.state.Aborted() {
			cancel(errInterrupted)
			return
		}
		for _, group := range g.groups {
			if s.state.Fired(group) {
				cancel(errInterrupted)
				return
			}
		}
	}
}

// record writes the outcome to the state directory and as the Tekton result, and fires
// the fail-fast groups whose child this outcome ends, failed or errored.
func (s *step) record(o runspec.Outcome) error {
	var errs []error
	errs = append(errs, s.state.WriteOutcome(s.spec.PlanID, o))
	errs = append(errs, s.writeResult(runspec.ResultOutcome, []byte(o)))
	// Any leaf may be the last of its child (a hook that succeeded ends a failed child).
	for _, l := range s.spec.Context {
		if l.Kind != runspec.LayerFailFast {
			continue
		}
		end, done, err := s.evaluate(*l.Child, false)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if done && (end == runspec.Failed || end == runspec.Errored) {
			errs = append(errs, s.state.Fire(l.ID, l.Child.ID))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("recording the outcome: %w", err)
	}
	return nil
}

// evaluate computes a tree's outcome from the state directory: final, or so far.
func (s *step) evaluate(tree runspec.Node, final bool) (runspec.Outcome, bool, error) {
	var leaves, groups, slotted []string
	collect(tree, &leaves, &groups, &slotted)
	outcomes, err := s.state.Outcomes(leaves)
	if err != nil {
		return "", false, err
	}
	facts := eval.Facts{Outcomes: outcomes, Fired: s.state.FiredGroups(groups), Present: map[string]int{}, Aborted: final && s.state.Aborted()}
	for _, id := range slotted {
		c, found, err := s.state.ReadCombinations(id)
		if err != nil {
			return "", false, err
		}
		if found {
			facts.Present[id] = len(c.Values)
		}
	}
	if final {
		return eval.Final(tree, facts), true, nil
	}
	o, done := eval.Partial(tree, facts)
	return o, done, nil
}

// collect lists a tree's leaves, its fail-fast groups and its slotted across steps.
func collect(n runspec.Node, leaves, groups, slotted *[]string) {
	if n.Kind == runspec.KindLeaf {
		*leaves = append(*leaves, n.ID)
	}
	if n.FailFast {
		*groups = append(*groups, n.ID)
	}
	if n.Slotted {
		*slotted = append(*slotted, n.ID)
	}
	for _, c := range n.Children() {
		collect(*c, leaves, groups, slotted)
	}
}

// writeResult writes a Tekton result: the file's content is the value, byte for byte.
func (s *step) writeResult(name string, value []byte) error {
	if err := os.MkdirAll(s.paths.Results, 0o755); err != nil {
		return fmt.Errorf("writing result %s: %w", name, err)
	}
	if err := os.WriteFile(s.resultPath(name), value, 0o644); err != nil {
		return fmt.Errorf("writing result %s: %w", name, err)
	}
	return nil
}

// clearResults removes the results a step before this one wrote in the pod.
func (s *step) clearResults() error {
	entries, err := os.ReadDir(s.paths.Results)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("clearing the step's results: %w", err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(s.paths.Results, e.Name())); err != nil {
			return fmt.Errorf("clearing the step's results: %w", err)
		}
	}
	return nil
}

// resultPath is the file of a result. A fused verdict (runspec.Verdict.Fused) shares
// its pod's results with the step before it: its outcome and error have names of their
// own.
func (s *step) resultPath(name string) string {
	if v := s.spec.Verdict; v != nil && v.Fused {
		switch name {
		case runspec.ResultOutcome:
			name = runspec.ResultVerdict
		case runspec.ResultError:
			name = runspec.ResultVerdictError
		}
	}
	return filepath.Join(s.paths.Results, name)
}
