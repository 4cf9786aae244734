package runspec

import "encoding/json"

// Kind is the kind of a plan node in a Join or Verdict tree.
type Kind string

// The kinds of plan nodes.
const (
	KindLeaf       Kind = "leaf"
	KindDo         Kind = "do"
	KindInParallel Kind = "in_parallel"
	KindAcross     Kind = "across"
	KindRetry      Kind = "retry"
	KindTry        Kind = "try"
	KindTimeout    Kind = "timeout"
	KindOnSuccess  Kind = "on_success"
	KindOnFailure  Kind = "on_failure"
	KindOnError    Kind = "on_error"
	KindOnAbort    Kind = "on_abort"
	KindEnsure     Kind = "ensure"
)

// Node is the shape of a plan, as much as outcomes need: leaves by plan ID, composites
// with their children.
type Node struct {
	ID   string `json:"id"`
	Kind Kind   `json:"kind"`
	// Steps are the children of do, in_parallel, across (one per combination) and retry
	// (one per attempt).
	Steps []Node `json:"steps,omitempty"`
	// Step is the wrapped step of try, timeout and the hooks.
	Step *Node `json:"step,omitempty"`
	// Hook is the hook of on_success, on_failure, on_error, on_abort and ensure.
	Hook *Node `json:"hook,omitempty"`
	// FailFast is set on an in_parallel or across with fail_fast.
	FailFast bool `json:"fail_fast,omitempty"`
	// Slotted is set on an across whose values are known only at run time: its Steps
	// are its slots, and only as many as its resolver wrote combinations are present;
	// the others never run and count for nothing.
	Slotted bool `json:"slotted,omitempty"`
	// Substeps are, on an across whose values are known at compile time and in the
	// verdict's tree alone, the public form of each of its substeps with its values
	// (concourse/event.PublicSubstep): what its across-substeps event lists.
	Substeps []json.RawMessage `json:"substeps,omitempty"`
}

// Children are n's child nodes, in plan order: its Steps, then its Step and its Hook.
// They point into n, so that a walk may change them.
func (n *Node) Children() []*Node {
	out := make([]*Node, 0, len(n.Steps)+2)
	for i := range n.Steps {
		out = append(out, &n.Steps[i])
	}
	for _, c := range []*Node{n.Step, n.Hook} {
		if c != nil {
			out = append(out, c)
		}
	}
	return out
}

// Outcome is how a step ended, Concourse's build statuses plus NeverRan.
type Outcome string

// The outcomes.
const (
	Succeeded Outcome = "succeeded"
	Failed    Outcome = "failed"
	Errored   Outcome = "errored"
	Aborted   Outcome = "aborted"
	// NeverRan is recorded by a step that was not started: its fail-fast group had fired,
	// or the build was aborted, before it began.
	NeverRan Outcome = "never-ran"
)

// ParseOutcome reads an outcome word; ok is false for anything else.
func ParseOutcome(s string) (Outcome, bool) {
	switch o := Outcome(s); o {
	case Succeeded, Failed, Errored, Aborted, NeverRan:
		return o, true
	}
	return "", false
}

// ExitCode is the runner's exit status for the outcome: fly's codes, and 4 for NeverRan.
func (o Outcome) ExitCode() int {
	switch o {
	case Succeeded:
		return 0
	case Failed:
		return 1
	case Aborted:
		return 3
	case NeverRan:
		return 4
	}
	return 2
}
