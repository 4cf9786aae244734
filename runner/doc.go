// Package runner is the step runner: the program that runs inside every Tekton pod of a
// build and gives its step Concourse's contract. Its command line is a runspec.Spec (see
// runspec for the argv, the outcomes and the build volume layout); cmd/concourse-runner
// only calls Main.
//
// The modes:
//
//   - task: the task container contract. Working directory /tmp/build/<8 hex of
//     sha256(step name)>; inputs as private copies of their artifacts (cowcopy: a write
//     never reaches the artifact); outputs registered after the process exits, whatever
//     its status; caches copied in and, for job builds, saved back; params as the
//     environment (step params over config params, with Concourse's [WARNING] for params
//     the config lacks); run.path, args, dir and user; a default PATH; USER for run.user;
//     no BUILD_* and no TMPDIR added. The process gets a 500×500 terminal as stdout and
//     stderr (merged, as in Concourse) and an empty stdin.
//   - get, put, check: the resource protocol. /opt/resource/{in,out,check} with the
//     request on stdin, stdout kept as the result (never logged), stderr logged, the
//     BUILD_* environment, Concourse's null-version and JSON errors. Results: version and
//     metadata (Tekton results, and state/results/<plan> for version_from), and for a
//     check every version it printed, the newest that fit in Tekton's results (versions)
//     and, when they did not all fit, all of them in one frame on stdout, the step's last
//     line (runspec.CheckedVersions).
//     A get registers its artifact and its metadata as the local var named after the step.
//     A get given no version (runspec.Get.Latest) first runs check, with no version, and
//     fetches the last version it printed.
//   - load_var, set_pipeline, resolve: read `artifact/path` files; load_var sets a local
//     var (redacted unless reveal); set_pipeline validates the child pipeline and hands
//     it to the backend in one frame on stdout (runspec.PipelineToSet); resolve reads a file task's
//     config ahead of the task and publishes its image.
//   - across: an across step's values, when they are known only at run time: each var's
//     values evaluated strictly (a list, or a ((var)) that must hold one), with
//     Concourse's warnings (experimental step, a var shadowing a local var) on stderr;
//     their cartesian product written for the step's slots, its size the result count.
//     More combinations than the translator made slots errors the step. A step of a slot
//     (runspec.Spec.AcrossSlots) reads its combination before anything else: its spec is
//     interpolated with the values, which are also its local vars.
//   - join and verdict: the Concourse outcome of a composite step, or of the whole build,
//     from the leaves' recorded outcomes (package eval), counting only the slots of an
//     across step that its resolver found combinations for. A fused verdict
//     (runspec.Verdict.Fused), a step after the build's last step in its pod, records a
//     build that succeeded under results of its own (`verdict`, `verdict-error`) and
//     leaves any other to the verdict task. The build's only step, a get, put or check,
//     records it in its own container once it succeeded (--verdict-spec), logging
//     nothing of it: a check build runs one pod.
//   - abort (through kubectl exec in any pod of the build) and install (the first step of
//     every TaskRun copies the runner where the step's own image can run it).
//
// Every leaf records its outcome in the state directory and as the `outcome` result and
// exits with its code. Before it runs, it reads its context layers: an aborted build, a
// fired fail-fast group or a passed deadline stop it before it starts; while it runs it
// polls the markers and stops its process on them (SIGTERM to the process group, a grace
// period, SIGKILL). ((vars)) left in the spec are resolved at run time from local vars
// and from the mounted Kubernetes Secrets (or the build's own Secret of credentials its
// starter supplied, Spec.SuppliedCredentials); secret values are redacted in every line the
// runner writes, the process's output included.
//
// Everything the runner says goes to its own stdout and stderr, which Tekton keeps as the
// step's log: a task's output, load_var's messages and set_pipeline's frame on stdout, a
// resource script's stderr and the runner's own errors on stderr.
package runner
