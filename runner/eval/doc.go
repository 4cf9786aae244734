// Package eval computes the Concourse outcome of a composite step from the outcomes of its
// leaves, by the rules of Concourse's exec package (do, in_parallel, across, retry, try,
// timeout and the five hooks). It is pure: the plan tree and the recorded facts in, an
// outcome out.
//
// A leaf with no recorded outcome is one of two things. The evaluator only reaches a leaf
// when everything before it let it run (its guard held); such a leaf with no outcome either
// has not finished yet (Partial: the composite is still pending) or never will (Final: its
// pod died without writing one, for example on an image pull failure, which Concourse
// reports as an error). Leaves past a step that did not let them run are never looked at,
// so they contribute nothing, as in Concourse.
//
// A slotted across (its values known only at run time) has more slots than it may use:
// only the first Facts.Present[id] are its substeps, and the others are not looked at.
// With no count recorded, the across is like a leaf with no outcome.
package eval
