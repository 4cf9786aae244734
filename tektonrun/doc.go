// Package tektonrun runs compiled builds on a Kubernetes cluster with Tekton: it submits
// PipelineRuns, watches them, and maps their status and logs back to Concourse build events.
package tektonrun
