package eval

import (
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// Facts are what the build's state directory recorded.
type Facts struct {
	// Outcomes maps leaf plan IDs to their recorded outcomes.
	Outcomes map[string]runspec.Outcome
	// Fired holds the plan IDs of the fail-fast groups that fired: the aborts of their
	// children are their own doing and, as in Concourse, left out of their result.
	Fired map[string]bool
	// Present maps the plan IDs of slotted across steps (runspec.Node.Slotted) to how
	// many combinations their resolvers wrote: their first Present slots ran, the others
	// are absent.
	Present map[string]int
	// Aborted says the build was aborted (its abort marker is written): a leaf reached
	// with no outcome was interrupted before it started (a step whose pod waited for a
	// node, cancelled by the abort), as Concourse interrupts a step that waits for a
	// worker.
	Aborted bool
}

// Final is the outcome of the tree once every leaf that was going to run has run: a leaf
// the evaluator reaches with no outcome is errored (its pod broke), or aborted in a build
// that was aborted.
func Final(tree runspec.Node, facts Facts) runspec.Outcome {
	e := evaluator{facts: facts, absent: runspec.Errored}
	if facts.Aborted {
		e.absent = runspec.Aborted
	}
	return e.eval(tree)
}

// Partial is the outcome of the tree so far: done is false while some leaf that will run
// has not recorded its outcome.
func Partial(tree runspec.Node, facts Facts) (o runspec.Outcome, done bool) {
	e := evaluator{facts: facts, absent: pending}
	o = e.eval(tree)
	if o == pending {
		return "", false
	}
	return o, true
}

// pending is the outcome of a step that has not ended yet.
const pending runspec.Outcome = "pending"

const (
	succeeded = runspec.Succeeded
	failed    = runspec.Failed
	errored   = runspec.Errored
	aborted   = runspec.Aborted
	neverRan  = runspec.NeverRan
)

type evaluator struct {
	facts  Facts
	absent runspec.Outcome
}

func (e evaluator) eval(n runspec.Node) runspec.Outcome {
	switch n.Kind {
	case runspec.KindLeaf:
		if o, ok := e.facts.Outcomes[n.ID]; ok {
			return o
		}
		return e.absent
	case runspec.KindDo:
		return e.do(n.Steps)
	case runspec.KindInParallel, runspec.KindAcross:
		return e.parallel(n)
	case runspec.KindRetry:
		return e.retry(n.Steps)
	}
	if n.Step == nil {
		// A wrapper without its step is refused by runspec's validation; reaching one
		// anyway is the evaluator's input being broken, which is an error, not a panic.
		return errored
	}
	step := e.eval(*n.Step)
	if step == pending || step == neverRan {
		return step
	}
	switch n.Kind {
	case runspec.KindTry:
		if step == aborted {
			return aborted
		}
		return succeeded
	case runspec.KindTimeout:
		// The runner records a deadline as a failure ("timeout exceeded"), which is what
		// the timeout step turns it into.
		return step
	case runspec.KindOnSuccess:
		if step != succeeded {
			return step
		}
		return e.then(n.Hook)
	case runspec.KindOnFailure:
		if step != failed {
			return step
		}
		switch hook := e.then(n.Hook); hook {
		case pending, aborted, errored:
			return hook
		}
		return failed
	case runspec.KindOnError:
		if step != errored {
			return step
		}
		if e.then(n.Hook) == pending {
			return pending
		}
		return errored
	case runspec.KindOnAbort:
		if step != aborted {
			return step
		}
		if e.then(n.Hook) == pending {
			return pending
		}
		return aborted
	case runspec.KindEnsure:
		hook := e.then(n.Hook)
		switch {
		case hook == pending:
			return pending
		case step == aborted || hook == aborted:
			return aborted
		case step == errored || hook == errored:
			return errored
		case step == succeeded && hook == succeeded:
			return succeeded
		}
		return failed
	}
	return errored
}

// then evaluates a step that runs after another one of the same composite has run: if
// it never ran, its context was cancelled under it, which Concourse reports as an abort.
func (e evaluator) then(n *runspec.Node) runspec.Outcome {
	if n == nil {
		return errored
	}
	if o := e.eval(*n); o != neverRan {
		return o
	}
	return aborted
}

func (e evaluator) do(steps []runspec.Node) runspec.Outcome {
	for i, s := range steps {
		o := e.eval(s)
		if i > 0 && o == neverRan {
			o = aborted
		}
		if o != succeeded {
			return o
		}
	}
	return succeeded
}

func (e evaluator) retry(attempts []runspec.Node) runspec.Outcome {
	last := succeeded
	for i, a := range attempts {
		last = e.eval(a)
		if i > 0 && last == neverRan {
			last = aborted
		}
		if last != failed && last != errored {
			return last
		}
	}
	return last
}

func (e evaluator) parallel(n runspec.Node) runspec.Outcome {
	steps := n.Steps
	if n.Slotted {
		// An absent slot is neither a success nor a failure: it is not a step at all.
		present, ok := e.facts.Present[n.ID]
		if !ok {
			return e.absent
		}
		steps = steps[:max(0, min(present, len(steps)))]
	}
	ownAborts := n.FailFast && e.facts.Fired[n.ID]
	ran, anyAborted, anyErrored, anyFailed := len(steps) == 0, false, false, false
	isPending, ownAborted := false, false
	for _, s := range steps {
		switch e.eval(s) {
		case pending:
			isPending = true
		case neverRan:
		case aborted:
			ran = true
			anyAborted = anyAborted || !ownAborts
			ownAborted = ownAborted || ownAborts
		case errored:
			ran, anyErrored = true, true
		case failed:
			ran, anyFailed = true, true
		default:
			ran = true
		}
	}
	switch {
	case isPending:
		return pending
	case !ran:
		return neverRan
	case anyAborted:
		return aborted
	case anyErrored:
		return errored
	case anyFailed:
		return failed
	case ownAborted:
		// A group that fired has a child that failed or errored; if none is to be seen,
		// the facts are inconsistent and the aborts are all there is to report.
		return aborted
	}
	return succeeded
}
