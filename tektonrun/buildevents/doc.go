// Package buildevents maps what the cluster says of a build to Concourse's build events:
// an Observation (the PipelineRun, each step's TaskRun and pod, the lines of its log read
// so far) in, the events a consumer has not had yet (after its Cursor) out, each with a
// stable Key. It is pure: it fetches nothing and talks to no cluster (it imports no
// client), and the same observation maps to the same events in every process.
//
// It is also the one reader of the facts the code around it acts on, read as the mapper
// reads them: a TaskRun's spec and results (taskrun.go), a container's log as the API
// serves it (LogReader), the markers a step's runner writes in its log (markers.go: a
// set_pipeline step's pipeline is an Event's Pipeline, a check's versions are
// VersionsFound), and the redaction of a build's credentials in its events (Redact).
package buildevents
