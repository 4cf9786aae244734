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
//
// set_pipeline steps set their pipeline in the ATC (setpipeline.go): the step's runner
// reads and validates the child pipeline and hands it over in its log
// (buildevents.Event.Pipeline); the stepper then runs Concourse's SetPipelineStep logic
// with Concourse's own delegate, teams and builds (validation, team rules, diff, save).
// One difference: the step's pod has succeeded by then, so the steps after it may have
// started. When the ATC's part fails the step (an invalid pipeline) or errors it (a team
// not found or not permitted, a failed save), its end is saved as Concourse shows it, the
// run is aborted, and the build ends failed or errored, without its hooks.
package tektonengine
