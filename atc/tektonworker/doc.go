// Package tektonworker shows a Kubernetes target to the ATC as a worker: saved in its
// database, as a worker registering through the TSA is, with the base resource types
// the target runs (type and image), and kept there while the web node runs: running
// while the target passes its check (tektonrun.Target.Check), stalled while it does not.
//
// The ATC plans a build's checks and image resources only for base resource types some
// worker has, and shows its workers in `fly workers`. Its builds run as PipelineRuns
// (tektonengine); its Garden server (Garden) makes no container but lets the web node
// enter its steps' pods (fly intercept, fly hijack), and its Reporter reports those as
// its containers. Its baggageclaim (Volumes) holds only fly execute's inputs and outputs:
// builds keep their files on volumes of their own.
package tektonworker
