// Package tektonengine is the web node's build engine on Kubernetes: an
// engine.StepperFactory whose stepper runs a build's whole plan as one Tekton
// PipelineRun, through tektonrun, and saves the build's events as Concourse's own
// steps save them.
//
// The ATC keeps what it does for every build: the tracking lock, the abort
// notification (a cancelled context) and the final status, which it records from
// what Step.Run returns. A web node that restarts runs its running builds' plans
// again; the stepper then attaches to their runs and saves only the events the
// build does not have yet.
//
// Check builds (lidar's and fly check-resource's) run Concourse's check step logic
// with its own check delegate, the check itself as a one-step run, and save the
// version found through the resource config scope (check.go).
package tektonengine
