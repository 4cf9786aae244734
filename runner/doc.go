// Package runner is the step runner: the program that runs inside every Tekton pod of a
// build and gives its step Concourse's contract (the task container contract, the resource
// protocol, load_var, set_pipeline, outcomes, timeouts, fail-fast and abort, run-time vars
// and redaction). Its command line is a runspec.Spec; cmd/concourse-runner only calls Main.
//
// Everything the runner says goes to its own stdout and stderr, which Tekton keeps as the
// step's log: a task's output (stdout and stderr merged, as under Concourse's TTY) on
// stdout, a resource script's stderr and the runner's own messages on stderr, all with
// secrets redacted. A resource script's stdout is its result and is never logged.
package runner
