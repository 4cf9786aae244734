// Package runspec is the command line of the step runner (cmd/concourse-runner), shared by
// the translator that writes it and the runner that reads it: one Spec per leaf step, its
// JSON encoding, the outcome words, and the layout of the build volume both sides rely on.
// It uses the standard library only and does no I/O beyond encoding and decoding.
//
// # Argv
//
// Every TaskRun that runs a step runs the runner twice: a first step copies the binary out
// of the runner image into an emptyDir shared by the steps, then the step's own container
// (the user's image) runs it:
//
//	concourse-runner install /concourse-runner/concourse-runner
//	/concourse-runner/concourse-runner step --spec=<json>
//
// Spec.Args gives the second argv: `step` runs the step in the mode its spec says
// (Spec.Mode). A mode word in its place (task, get, ...) is checked against the spec's.
// The JSON is compact and deterministic (object keys sorted, fields in a fixed order), so
// the translator can pass it as one Tekton param. A spec never carries credentials: secret
// values are resolved by the runner at run time from ((vars)) left in the spec.
//
// The abort mode is meant for `kubectl exec` into any running pod of a build; it needs no
// spec, only the build volume:
//
//	concourse-runner abort [--volume=/concourse]
//
// A one-off build's artifacts travel through a transfer pod of the runner image that
// mounts the build volume and waits (hold, for at most --timeout), into which the starter
// execs receive (an upload, before the PipelineRun exists: the tar stream on stdin goes
// into the directory --dir of the volume, which is registered as the artifact --name in
// the root scope) and send (a download, once the build has ended: the artifact --name of
// the root scope as a tar stream on stdout):
//
//	concourse-runner hold [--timeout=1h]
//	concourse-runner receive --dir=volumes/<plan>/<name> --name=<name> [--volume=/concourse]
//	concourse-runner send --name=<name> [--volume=/concourse]
//
// An operator's shell in a step's container (concourse-tekton intercept) is the runner's
// intercept mode, given the step's spec: it works out the step's working directory,
// environment and user as the step does, and replaces itself with the command:
//
//	/concourse-runner/concourse-runner intercept --spec=<json> [-- COMMAND ARGS...]
//
// # Outcomes and exit codes
//
// Every runner writes its Outcome to <Paths.Results>/outcome (a Tekton result) and to the
// state directory (below) before it exits, and exits with Outcome.ExitCode: 0 succeeded,
// 1 failed, 2 errored, 3 aborted (fly's codes), 4 never-ran. Only a succeeded step exits 0.
// Other results written to Paths.Results: `version` and `metadata` (get, put, check),
// `versions` (check: the versions the check script printed, oldest first, as a JSON list;
// when they do not all fit in the 4 KiB of a pod's termination message that Tekton
// passes results in, the newest that fit, always the last, and all of them in a frame,
// the last line of the step's log (CheckedVersions); `version` is the last of them), `image` and `config` (resolve; with SuppliedCredentials also `vars`, the ((vars)) of the
// task file its starter supplies in the task's vars Secret, TaskVarsSecret),
// `count` (across: how many combinations of values it found),
// `exit-status` (the process of a task, get or put, once it exited) and `error` (why the
// step did not finish: "interrupted", "timeout exceeded" or a message, redacted;
// Concourse's error event). The error is a result and not a log line, so
// that the log is the process's own output. Guards in the Pipeline are `when` expressions over the
// outcome result; a missing result (the pod never got to write it) fails every guard.
//
// # The pipeline a set_pipeline step sets
//
// A set_pipeline step cannot set a pipeline from its pod: the runner reads and validates
// the child pipeline and hands it to the backend in its log, as one line on stdout that is
// an OSC escape sequence (PipelineToSet.Frame; see frame.go), its only output when it succeeds. A
// backend honours that line only as the last line of a set_pipeline step that succeeded,
// and shows it to no one: an ATC sets the pipeline (Concourse's team rules, diff, save),
// the CLI says "setting pipeline: NAME".
//
// # A step's start
//
// A task whose inputs are missing and a step of a fail-fast group that fired end without
// having started, which Concourse shows as initialized only, or not at all. Their runner
// says when they do start, with one line on stdout (StartMark, an OSC escape sequence)
// before any of their output, so that a backend shows them started from that line and
// not from the time their container has run (AnnouncesStart says which steps write it).
//
// # Build volume layout
//
// One volume per build, mounted at Paths.Volume (default /concourse) in every pod.
// Plan IDs contain '/' (`5/image-get`, across substeps `a/0/1`); every path element made
// from a plan ID, scope or name goes through Escape.
//
//	volumes/<plan>/<name>/          an artifact produced by step <plan> (get: <name> is the
//	                                step name; task: the output's name after output_mapping)
//	work/<plan>/                    what the translator may mount at /tmp/build for step
//	                                <plan> (Paths.Work); artifacts made there (a get's
//	                                /tmp/build/get, a task's outputs) are registered in place
//	caches/<step name>/<cache path>/ the task caches of a job build (Concourse keys them by
//	                                job, step name and path; the volume is the job's)
//	caches/%resources/<key>/        the job's resource caches (ResourceCachesDir)
//	caches/%stamps/<step name>/<cache path>  the ID of the ATC's record of a task cache
//	                                the task saved it with, or "unrecorded" (CacheRecords)
//	state/
//	  aborted                       the abort marker: the build was aborted
//	  outcomes/<plan>               the outcome word of a leaf (or of a join's composite)
//	  failfast/<group>              a fail-fast group fired (content: the child that fired)
//	  started/<child>               a fail-fast group's child has started
//	  deadlines/<plan>              when a timeout started (RFC 3339, written once)
//	  detach/<plan>                 whether a hook started with its context done
//	  scopes/<scope>/artifacts/<name>  the artifact registry: a volume path relative to
//	                                the volume root; registering a name again overwrites
//	  scopes/<scope>/vars/<name>    local vars (load_var, get metadata, across values), JSON
//	  results/<plan>                the version and metadata a get, put or check produced,
//	                                read by a get's version_from
//	  across/<plan>                 the combinations of values an across step's resolver
//	                                found (JSON: the vars' names, a list of values each)
//
// Scopes: the root scope is "" (escaped as "%"); an across substep combination opens a
// child scope named after its plan ID. Spec.Scope lists the scopes a step runs in,
// outermost first, the root implied. Reads fall through from the innermost scope to the
// root; writes go to the innermost. So artifacts and local vars made inside an across are
// not visible after it, as in Concourse.
//
// # Across over values known only at run time
//
// An across step whose values come from a ((var)) or a load_var cannot be unrolled by the
// translator, and a Pipeline cannot grow when the build runs. The translator makes a
// resolver step (mode across, the across step's plan ID) and a fixed number of slots,
// copies of the substep with plan IDs <across>/<i>/<k>, not interpolated. The resolver
// evaluates the values as Concourse does, writes their combinations to across/<plan> and
// publishes their count; slot i is guarded by `count` > i, so the slots the build does not
// use are skipped by Tekton and start no pod. Each step of slot i has Spec.AcrossSlots
// naming its combination: the runner reads it, interpolates the spec with its values (as
// Concourse interpolates a substep's template) and adds them to the step's local vars.
// A Join or Verdict tree marks such an across Node.Slotted: only as many of its steps as
// the resolver found combinations are its substeps, the others count for nothing.
//
// # What the translator provides in the pod
//
//   - the build volume at Paths.Volume; for get and task steps preferably also its
//     directory WorkPath(planID) mounted at /tmp/build, with Paths.Work set to it, so that
//     fetched artifacts and task outputs are registered where they are made (otherwise
//     the runner copies them into volumes/);
//   - the Kubernetes Secrets the build may read, mounted under Paths.Creds (a directory
//     per Secret, a file per key; var sources in a subdirectory each); with
//     SuppliedCredentials, the step's keys of the build's own Secret there instead (a
//     file per var, CredentialKey);
//   - an emptyDir at /scratch for tasks (Concourse gives every container one);
//   - for resource steps, the resource type's image with its scripts at /opt/resource;
//   - the pod's image, resources, privileges and container limits: the runner only
//     runs the process.
//
// # Context
//
// Spec.Context is the chain of Concourse contexts a leaf runs under, outermost first: the
// build's own (abort) is implied at the root; a timeout layer adds a deadline shared by
// every leaf under it (the first to start records the start); a fail-fast layer makes the
// leaf stop when the group fires; a detach layer marks a hook that Concourse runs with
// context.Background(): an ensure hook when the context above it is already done when the
// hook starts (the first leaf of the hook to start records whether it was), on_error and
// on_abort hooks always (Layer.Always). A detached leaf ignores the layers above its
// detach layer: the abort, their deadlines and their fail-fast groups.
package runspec
