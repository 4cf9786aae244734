// Package gc keeps a target clean the way Concourse's garbage collector keeps its workers
// and database: a job's builds beyond its build_log_retention go with everything they made
// (TaskRuns, pods, volumes, pushed images), and what no build needs any more (volumes with
// no run, pods of ended runs, debug and upload pods past their time) goes too; running
// builds, the volume a job's next build takes its caches from, and the events of every
// kept build stay.
//
// Retain and Defaults.Policy are Concourse's retention rules, pure. Plan decides, from the
// objects of a namespace and the clock, what to delete and why, and does no I/O. Sweep is
// the shell: it lists the namespace's objects by label in pages, archives the events of
// builds whose pods it deletes (tektonrun.Client.Archive), releases from the builds it
// deletes the volumes still within their grace period as cache sources
// (pvc.AnnotationReleased), deletes under UID preconditions, and reports.
//
// What goes with what: a build's PipelineRun owns its TaskRuns (and they their pods), its
// volume, its credentials Secret, its archive and its intercept pods, so deleting the
// PipelineRun deletes them all (background propagation). When the pods of a kept build
// go is Concourse's rule for containers: at once when it succeeded or is not its job's
// latest ended build; after Rules.FailedGrace when it is the latest and did not succeed
// (to be intercepted); a one-off build's after Rules.OneOffGrace.
package gc
