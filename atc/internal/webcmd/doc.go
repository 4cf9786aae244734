// Package webcmd is the command line of concourse-tekton's web node: Concourse's own
// web command (atccmd.RunCommand, with its flags and CONCOURSE_* environment variables)
// and the defaults `concourse web` fills in around it, without the TSA, since no worker
// registers over SSH; and the --tekton-* flags that make builds run on Kubernetes
// (tektonengine) and the namespace a worker (tektonworker).
//
// It compiles against the unpatched Concourse module; only the main package, which sets
// the engine hook to WebCommand.StepperFactory, needs the patched one.
package webcmd
