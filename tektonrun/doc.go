// Package tektonrun runs compiled builds on a Kubernetes cluster with Tekton: it checks
// and steers the target (its lifecycle, its permissions), submits PipelineRuns, and
// follows them through one watch per kind, handing what it fetched to the pure mapping
// of buildevents, which turns it into Concourse build events. The follower only reads
// and maps: what a build needs done as it goes is done by the Observers its starter
// passes in. The work inside the builds' pods (abort, intercept, artifact transfers) is
// podexec's, which the Client fronts.
package tektonrun
