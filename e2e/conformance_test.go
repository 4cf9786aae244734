//go:build e2e

package e2e

import (
	"context"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/pkg/apis"

	"github.com/concourse-tekton/concourse-tekton/concourse/event"
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// A conformance scenario is one build of a job of a small pipeline under
// testdata/conformance, run with `concourse-tekton run -w` as a user runs it, and judged
// by what fly would show: the exit code, the status on the last line, and lines of the
// build's output.
type scenario struct {
	name string
	file string // under testdata/conformance
	job  string
	vars []string // name=value, passed with -v
	// secrets are Secrets made in the namespace before the build, name -> key -> value.
	secrets map[string]map[string]string
	// enforce is the Pod Security level the namespace enforces, if any.
	enforce string
	// wantExit is fly's exit code: 0 succeeded, 1 failed, 2 errored, 3 aborted, or the
	// exit status of the last task when it is not 0.
	wantExit int
	// wantStatus is the build's status, when it is not the one wantExit says.
	wantStatus string
	// want are lines the output must have (in this order when ordered is set), notWant
	// lines it must not have.
	want, notWant []string
	ordered       bool
	// abortAfter, when set, aborts the build once the output has all these lines: with
	// ^C (SIGINT) to `run -w`, or with `concourse-tekton abort` when abortCommand is set.
	abortAfter   []string
	abortCommand bool
	// abortAtStart aborts the build as soon as run says it started, with ^C.
	abortAtStart bool
	// check, when set, looks further at the finished build on the cluster.
	check func(t *testing.T, ns, pipelineRun string)
	// timeout is how long the build may take, when not the default 15 minutes (a build of
	// many steps one after another, on a busy cluster). Timeouts catch builds that hang:
	// on a 2-core machine running both e2e suites at once (load average 30), a pod takes
	// up to a minute, and hooks/succeeded, its pods one after another, took more than 9.
	timeout time.Duration
}

// fly's exit codes, and the status line `run -w` ends with.
var statusByExit = map[int]string{0: "succeeded", 1: "failed", 2: "errored", 3: "aborted"}

func (sc scenario) status() string {
	if sc.wantStatus != "" {
		return sc.wantStatus
	}
	return statusByExit[sc.wantExit]
}

func TestConformance(t *testing.T) {
	t.Parallel()
	for _, sc := range conformanceScenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			runScenario(t, sc)
		})
	}
}

var conformanceScenarios = []scenario{
	// Hooks, at step and job level, for each way a step can end.
	{
		name: "hooks/succeeded", file: "hooks.yml", job: "succeeds", wantExit: 0,
		want: []string{"step ran", "hook: step on_success", "hook: step ensure", "hook: none: the step after",
			"hook: job on_success", "hook: job ensure"},
		notWant: hooksBut("on_success"),
	},
	{
		name: "hooks/failed", file: "hooks.yml", job: "fails", wantExit: 1,
		want:    []string{"step ran", "hook: step on_failure", "hook: step ensure", "hook: job on_failure", "hook: job ensure"},
		notWant: append(hooksBut("on_failure"), "hook: none: the step after"),
	},
	{
		name: "hooks/errored", file: "hooks.yml", job: "errors", wantExit: 2,
		want:    []string{"hook: step on_error", "hook: step ensure", "hook: job on_error", "hook: job ensure"},
		notWant: append(hooksBut("on_error"), "hook: none: the step after"),
	},
	{
		name: "hooks/aborted", file: "hooks.yml", job: "aborted", wantExit: 3, abortAfter: []string{"step sleeping"},
		want: []string{"step sleeping", "interrupted", "hook: step on_abort", "hook: step ensure",
			"hook: job on_abort", "hook: job ensure"},
		notWant: append(hooksBut("on_abort"), "step woke up", "hook: none: the step after"),
	},
	{
		name: "hooks/abort-in-hook", file: "hooks.yml", job: "abort-in-hook", wantExit: 3,
		abortAfter: []string{"hook sleeping"},
		want:       []string{"hook sleeping", "interrupted", "hook: job on_abort", "hook: job ensure"},
		notWant:    append(hooksBut("on_abort"), "hook woke up"),
	},
	{
		// Concourse cancels the step wherever it is (image fetch, worker selection): it is
		// interrupted, and its on_abort hook runs.
		name: "hooks/aborted-at-start", file: "hooks.yml", job: "aborted", wantExit: 3, abortAtStart: true,
		want: []string{"interrupted", "hook: step on_abort", "hook: step ensure", "hook: job on_abort",
			"hook: job ensure"},
		notWant: append(hooksBut("on_abort"), "step woke up", "hook: none: the step after"),
	},

	// A hook's own result: on_success's becomes the step's, a failing ensure fails a step
	// that succeeded, an erroring on_failure makes the failure an error.
	{
		name: "hooks/on_success-fails", file: "hooks.yml", job: "on-success-fails", wantExit: 1,
		want: []string{"hook: none: the step", "on_success failing", "hook: job on_failure"},
	},
	{
		name: "hooks/ensure-fails", file: "hooks.yml", job: "ensure-fails", wantExit: 1,
		want:    []string{"hook: none: the step", "ensure failing"},
		notWant: []string{"hook: none: the step after"},
	},
	{
		name: "hooks/on_failure-errors", file: "hooks.yml", job: "on-failure-errors", wantExit: 2,
		want:    []string{"hook: job on_error"},
		notWant: []string{"hook: job on_failure"},
	},

	// A job's on_failure hook, compiled once for each way the plan can fail: a build that
	// succeeds runs its three steps' pods and nothing else (the last one holds the
	// verdict); one that fails runs the hook once.
	{
		name: "hooks/on_failure-copies-skipped", file: "hooks.yml", job: "notifies", vars: []string{"fail=none"}, wantExit: 0,
		want: []string{"step a", "step b", "step c"}, notWant: []string{"hook: job on_failure"},
		check: taskRunCount(3, ""),
	},
	{
		name: "hooks/on_failure-copy-runs", file: "hooks.yml", job: "notifies", vars: []string{"fail=b"}, wantExit: 1,
		want: []string{"step a", "step b", "hook: job on_failure"}, notWant: []string{"step c"},
		check: func(t *testing.T, ns, pr string) {
			taskRunCount(1, "task-notify")(t, ns, pr)
			taskRunCount(0, "join-")(t, ns, pr)
		},
	},

	// try swallows failures and errors, not aborts.
	{
		name: "try/failure-and-error", file: "try.yml", job: "swallows", wantExit: 0,
		want: []string{"failing", "after the tries"},
	},
	{
		name: "try/abort", file: "try.yml", job: "abort", wantExit: 3, abortAfter: []string{"sleeping"}, abortCommand: true,
		want:    []string{"sleeping", "interrupted"},
		notWant: []string{"woke up", "after the try"},
	},

	// attempts: each attempt sees the cache the one before left; hooks outside run once.
	{
		name: "attempts/third-passes", file: "attempts.yml", job: "flaky", wantExit: 0,
		want:    []string{"attempt 1", "attempt 2", "attempt 3", "ensure after the attempts"},
		notWant: []string{"attempt 4"},
	},
	{
		name: "attempts/exhausted", file: "attempts.yml", job: "exhausted", wantExit: 1,
		want:    []string{"attempt 1 of 2", "attempt 2 of 2"},
		notWant: []string{"attempt 3 of 2"},
	},
	{
		name: "attempts/aborted", file: "attempts.yml", job: "aborted", wantExit: 3,
		abortAfter: []string{"attempt 1 sleeping"}, abortCommand: true,
		want:    []string{"attempt 1 sleeping", "interrupted"},
		notWant: []string{"attempt 2 sleeping"},
	},

	// timeout: a failure, not an error, and not an abort.
	{
		name: "timeout/task", file: "timeout.yml", job: "task", wantExit: 1,
		want:    []string{"sleeping", "timeout exceeded", "hook on_failure"},
		notWant: []string{"woke up", "hook on_abort", "hook on_error"},
	},
	{
		name: "timeout/in-try", file: "timeout.yml", job: "try", wantExit: 0,
		want:    []string{"sleeping", "timeout exceeded", "hook ensure", "after the try"},
		notWant: []string{"woke up"},
	},
	{
		name: "timeout/do", file: "timeout.yml", job: "do", wantExit: 1,
		want:    []string{"quick done", "sleeping", "timeout exceeded", "hook on_failure"},
		notWant: []string{"woke up", "hook on_abort", "hook on_error", "after the do"},
	},

	// in_parallel: limit, and fail_fast interrupting the sibling still running.
	{
		name: "in_parallel/limit", file: "in_parallel.yml", job: "limit", wantExit: 0,
		want: []string{"one started", "one done", "two started", "two done", "three started", "three done",
			"after the in_parallel"},
		check: maxConcurrent(2, "task-one", "task-two", "task-three"),
	},
	{
		name: "in_parallel/fail_fast", file: "in_parallel.yml", job: "fail-fast", wantExit: 1,
		want:    []string{"slow sleeping", "failing now", "interrupted", "hook slow on_abort"},
		notWant: []string{"slow woke up", "after the in_parallel"},
	},

	{
		name: "in_parallel/no-fail-fast", file: "in_parallel.yml", job: "no-fail-fast", wantExit: 1,
		want:    []string{"failing now", "slow started", "slow done"},
		notWant: []string{"interrupted", "after the in_parallel"},
	},

	{
		name: "in_parallel/fail_fast-before-start", file: "in_parallel.yml", job: "fail-fast-before-start", wantExit: 1,
		want:    []string{"failing now"},
		notWant: []string{"running echo never started", "never started", "hook never on_abort", "interrupted"},
	},
	{
		name: "in_parallel/aborted", file: "in_parallel.yml", job: "aborted", wantExit: 3,
		abortAfter: []string{"one sleeping", "two sleeping"}, abortCommand: true,
		want: []string{"hook one on_abort", "hook two on_abort"},
	},

	// across: every value, at most max_in_flight at once.
	{
		name: "across/max_in_flight", file: "across.yml", job: "across", wantExit: 0,
		want:  []string{"across x=a", "across x=b", "across x=c", "across x=d", "after the across"},
		check: maxConcurrent(2, "task-each"),
	},

	// The task container contract, and what a resource's script sees.
	{
		name: "contract/task", file: "contract.yml", job: "task", wantExit: 0,
		want: []string{"pwd: /tmp/build/cc8321d6/renamed/sub", "file: in-sub", "scratch: 0 entries",
			"params: config step", "tmpdir: unset", "build vars: 0", "to stderr"},
	},
	{
		// fly exits with the last task's exit status, whatever the status.
		name: "contract/exit-status", file: "contract.yml", job: "exit-42", wantExit: 42, wantStatus: "failed",
		want: []string{"exiting 42"},
	},
	{
		name: "contract/exit-status-in-try", file: "contract.yml", job: "exit-42-in-try", wantExit: 42, wantStatus: "succeeded",
		want: []string{"exiting 42"},
	},
	{
		name: "contract/put-env", file: "contract.yml", job: "put-env", wantExit: 1,
		want: []string{"BUILD_STATUS=failed", "BUILD_JOB_NAME=put-env", "BUILD_PIPELINE_NAME=contract",
			"BUILD_NAME=1", "BUILD_TEAM_NAME=main", "pushing version: v1"},
	},

	{
		name: "across/product", file: "across.yml", job: "product", wantExit: 0, ordered: true,
		want: []string{"across a1", "across a2", "across b1", "across b2"},
	},

	// across over values known only at run time (a load_var): as many slots run as there
	// are combinations, the others start no pod.
	{
		name: "across-runtime/testflight", file: "across_runtime.yml", job: "testflight", wantExit: 0, ordered: true,
		want: []string{"WARNING: the across step is experimental and subject to change!",
			"running across static1 dynamic1", "running across static1 dynamic2", "running across static1 dynamic3", "running across static1 4",
			"running across static2 dynamic1", "running across static2 dynamic2", "running across static2 dynamic3", "running across static2 4",
			"pushing version: v_dynamic1", "pushing version: v_dynamic2", "pushing version: v_dynamic3", "pushing version: v_4"},
		// About 25 pods, one after another: 603 s and 953 s in two CI runs on a two-core
		// machine, beside the rest of the e2e suites.
		check: taskRunCount(8, "task-print"), timeout: 25 * time.Minute,
	},
	{
		name: "across-runtime/max_in_flight-1", file: "across_runtime.yml", job: "serial", wantExit: 0, ordered: true,
		want:  []string{"start c", "end c", "start b", "end b", "start a", "end a", "after the across"},
		check: maxConcurrent(1, "task-each"),
	},
	{
		name: "across-runtime/fail_fast", file: "across_runtime.yml", job: "fail-fast", wantExit: 1,
		want:    []string{"slow sleeping", "failing now", "interrupted", "hook slow on_abort"},
		notWant: []string{"slow woke up", "hook fails on_abort", "after the across"},
	},
	{
		name: "across-runtime/not-a-list", file: "across_runtime.yml", job: "not-a-list", wantExit: 2,
		want:    []string{"error unmarshaling JSON: while decoding JSON: json: cannot unmarshal string into Go value of type []interface {}"},
		notWant: []string{"never runs"},
	},

	// Artifacts and resources.
	{
		name: "put-then-get", file: "put_get.yml", job: "put-get", wantExit: 0,
		want: []string{"pushing version: v-from-task", "got version v-from-task"},
	},
	{
		name: "inputs-outputs/mapping-and-copy-on-write", file: "inputs_outputs.yml", job: "mapping", wantExit: 0,
		want: []string{"modify sees original", "original: original", "changed: modified", "made: made"},
	},
	{
		name: "inputs/optional", file: "optional_inputs.yml", job: "optional", wantExit: 0,
		want: []string{"present: v7", "absent: missing"},
	},
	{
		// Named as the plan maps them, as Concourse's MissingInputsError names them.
		name: "inputs/missing-named-after-mapping", file: "missing_inputs.yml", job: "mapped", wantExit: 2,
		want:    []string{"missing inputs: never-made, other"},
		notWant: []string{"ran without its inputs", "missing inputs: data, other", "running echo ran without its inputs"},
	},

	// run.user: volumes made for the task's user (testflight's nonroot-chowning pipeline).
	{
		name: "task-user/volumes-owned-by-nonroot", file: "task_user.yml", job: "nonroot", wantExit: 0,
		want: []string{"nonroot wrote its volumes", "root sees the input as it was"},
	},
	{
		name: "task-user/nonroot-to-root", file: "task_user.yml", job: "nonroot-to-root", wantExit: 0,
		want: []string{"root read: written by nonroot"},
	},
	{
		name: "task-user/root-to-nonroot", file: "task_user.yml", job: "root-to-nonroot", wantExit: 0,
		want: []string{"in the end: written by root written by nonroot"},
	},
	{
		name: "task-user/uid-volumes-owned-by-nonroot", file: "task_user.yml", job: "uid-nonroot", wantExit: 0,
		want: []string{"uid wrote its volumes", "root read: can write to file"},
	},
	{
		// The pod of the task of a numeric non-root user, as Tekton made it, is admitted
		// under Pod Security "restricted"; a root task's is not.
		name: "task-user/uid-root-to-nonroot", file: "task_user.yml", job: "uid-root-to-nonroot", wantExit: 0,
		want:  []string{"in the end: written by root written by nonroot"},
		check: admittedUnderRestricted(map[string]bool{"task-nonroot": true, "task-root": false}),
	},

	// A timeout or an abort keeps what the task wrote in its outputs, for the hooks.
	{
		name: "interrupted/timeout-keeps-outputs", file: "interrupted.yml", job: "timeout", wantExit: 1,
		vars:    []string{"mark=first", "sleep=300"},
		want:    []string{"sleeping", "timeout exceeded", "ensure read: written before the timeout"},
		notWant: []string{"woke up"},
	},
	{
		name: "interrupted/abort-keeps-outputs", file: "interrupted.yml", job: "aborted", wantExit: 3,
		abortAfter: []string{"sleeping"},
		want:       []string{"sleeping", "interrupted", "on_abort read: written before the abort"},
		notWant:    []string{"woke up"},
	},
	{
		name: "gets/pinned-renamed-custom-type", file: "resources.yml", job: "gets", wantExit: 0,
		want: []string{"pinned: v9", "custom: c1 from a custom type"},
	},
	{
		name: "gets/get-fails", file: "resources.yml", job: "get-fails", wantExit: 1,
		want: []string{"error: intentionally failing to get: on purpose", "hook on_failure"},
	},
	{
		name: "gets/check-fails", file: "resources.yml", job: "check-fails", wantExit: 1,
		want:    []string{"error: intentionally failing to check: on purpose"},
		notWant: []string{"after the get"},
	},
	{
		name: "gets/only-get", file: "resources.yml", job: "only-get", wantExit: 0,
		want:  []string{"fetching version: v4"},
		check: taskRunsAre("get-pinned"),
	},
	{
		name: "gets/only-get-fails", file: "resources.yml", job: "only-get-fails", wantExit: 1,
		want:  []string{"error: intentionally failing to get: on purpose"},
		check: taskRunsAre("get-pinned", runspec.VerdictTask),
	},
	{
		name: "put-fails", file: "resources.yml", job: "put-fails", wantExit: 1,
		want:    []string{"error: intentionally failing to put: on purpose"},
		notWant: []string{"after the put"},
	},
	{
		// Every step that is not privileged is admitted under Pod Security "baseline":
		// a task as its image's user, one with a run.user, a resource get and put.
		name: "pod-security/baseline", file: "contract.yml", job: "put-env", wantExit: 1, enforce: "baseline",
		want: []string{"BUILD_STATUS=failed"},
	},
	{
		name: "pod-security/baseline-run-user", file: "task_user.yml", job: "nonroot-to-root", wantExit: 0, enforce: "baseline",
		want: []string{"root read: written by nonroot"},
	},
	{
		// Every credential of the build is redacted in every step's output: the second
		// task never reads the secret, and prints its value. A key no step reads is no
		// credential of the build.
		name: "redaction/build-wide", file: "load_var.yml", job: "credentials", wantExit: 0,
		secrets: map[string]map[string]string{"db": {"password": "hunter2-e2e", "unused": "not-a-build-credential"}},
		want:    []string{"uses: ((redacted))", "prints: ((redacted))", "unused: not-a-build-credential"},
		notWant: []string{"hunter2-e2e"},
	},
	{
		name: "load_var", file: "load_var.yml", job: "load-var", wantExit: 0,
		want: []string{"var value fetched.", "added var value to build.", "value=from-file-42 greeting=hello-json",
			"hidden=((redacted))"},
	},
	{
		name: "file-task", file: "file_task.yml", job: "file-task", wantExit: 0, ordered: true,
		want: []string{"[WARNING] EXTRA was defined in pipeline but missing from task file", "file task says hello to conformance"},
	},
	{
		name: "inline-params", file: "file_task.yml", job: "inline-params", wantExit: 0, ordered: true,
		want:    []string{"[WARNING] EXTRA was defined in pipeline but missing from task file", "inline task says step"},
		notWant: []string{"[WARNING] KNOWN was defined in pipeline but missing from task file"},
	},
}

// hooksBut lists the lines the outcome hooks of hooks.yml print (step and job level),
// but for the hook that ran.
func hooksBut(ran string) []string {
	var out []string
	for _, level := range []string{"step", "job"} {
		for _, h := range []string{"on_success", "on_failure", "on_error", "on_abort"} {
			if h != ran {
				out = append(out, "hook: "+level+" "+h)
			}
		}
	}
	return out
}

// runArgs are the arguments of `concourse-tekton run` for a job of a conformance pipeline.
func runArgs(ns, file, job string, vars ...string) []string {
	args := []string{"run", filepath.Join("e2e", "testdata", "conformance", file), "-j", job, "-w",
		"-n", ns, "--runner-image", runnerImage, "--resource-image", "mock=" + mockImage,
		"--build-volume-size", "64Mi", "--kubeconfig", kubeconfigPath()}
	for _, v := range vars {
		args = append(args, "-v", v)
	}
	return args
}

func runScenario(t *testing.T, sc scenario) {
	ns := namespace(t)
	timeout := 15 * time.Minute
	if sc.timeout > 0 {
		timeout = sc.timeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if sc.enforce != "" {
		enforce(t, ns, sc.enforce)
	}
	for name, data := range sc.secrets {
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, StringData: data}
		if _, err := testCluster.kube.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	exit, stdout, pr := runBuild(t, ctx, ns, sc)
	judge(t, ctx, ns, pr, exit, stdout, sc)
}

// runBuild runs a build of the scenario's job in ns, aborting it if the scenario says
// so, and returns the exit code, the output and the PipelineRun's name.
func runBuild(t *testing.T, ctx context.Context, ns string, sc scenario) (exit int, stdout, pr string) {
	t.Helper()
	p := startCLI(t, ctx, runArgs(ns, sc.file, sc.job, sc.vars...)...)
	if sc.abortAtStart {
		p.waitFor("the build's start", 2*time.Minute, startedLine.MatchString)
		p.interrupt()
	}
	if len(sc.abortAfter) > 0 {
		for _, l := range sc.abortAfter {
			p.waitForLine(l, 5*time.Minute)
		}
		if sc.abortCommand {
			_, stderr, _ := p.output()
			if exit, out, errOut := runCLI(t, ctx, "abort", pipelineRunOf(t, stderr), "-n", ns, "--kubeconfig", kubeconfigPath()); exit != 0 {
				t.Fatalf("abort: exit %d\n%s%s", exit, out, errOut)
			}
		} else {
			p.interrupt()
		}
	}
	exit, stdout, stderr := p.wait()
	t.Logf("%s: exit %d\nstdout:\n%s\nstderr:\n%s", p, exit, stdout, stderr)
	return exit, stdout, pipelineRunOf(t, stderr)
}

// judge checks a finished build: what run printed, its verdict on the cluster, and what
// events prints of it, as text and as the ATC's envelopes.
func judge(t *testing.T, ctx context.Context, ns, pr string, exit int, stdout string, sc scenario) {
	t.Helper()
	checkBuild(t, "run", exit, stdout, sc)
	if sc.check != nil {
		sc.check(t, ns, pr)
	}
	if got, want := verdictOf(t, ns, pr), sc.status(); got != want {
		t.Errorf("the build's verdict on the cluster is %q, want %q", got, want)
	}
	checkJoinsSucceeded(t, ns, pr)
	if t.Failed() {
		return
	}
	exit, stdout, stderr := runCLI(t, ctx, "events", pr, "-n", ns, "--kubeconfig", kubeconfigPath())
	if exit != sc.wantExit {
		t.Errorf("events: exit %d, want %d; stderr:\n%s", exit, sc.wantExit, stderr)
	}
	checkBuild(t, "events", exit, stdout, sc)
	exit, stdout, stderr = runCLI(t, ctx, "events", pr, "--json", "-n", ns, "--kubeconfig", kubeconfigPath())
	if exit != sc.wantExit {
		t.Errorf("events --json: exit %d, want %d; stderr:\n%s", exit, sc.wantExit, stderr)
	}
	text, status := fromEnvelopes(t, stdout)
	if want := sc.status(); status != want {
		t.Errorf("events --json: the last status event says %q, want %q", status, want)
	}
	checkLines(t, text, sc.want, sc.notWant)
	if sc.ordered {
		checkOrder(t, text, sc.want)
	}
}

// TestConformanceEventsFollow starts a build without -w, as `fly trigger-job` does, and
// follows it with `events`, as `fly watch` does: the same output and exit code.
func TestConformanceEventsFollow(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	sc := scenario{file: "attempts.yml", job: "exhausted", wantExit: 1, ordered: true,
		want: []string{"attempt 1 of 2", "attempt 2 of 2"}}
	args := slices.DeleteFunc(runArgs(ns, sc.file, sc.job), func(a string) bool { return a == "-w" })
	exit, stdout, stderr := runCLI(t, ctx, args...)
	if exit != 0 || strings.TrimSpace(stdout) != "" {
		t.Fatalf("run without -w: exit %d, stdout %q, want 0 and nothing (stderr %q)", exit, stdout, stderr)
	}
	pr := pipelineRunOf(t, stderr)
	exit, stdout, stderr = runCLI(t, ctx, "events", pr, "-n", ns, "--kubeconfig", kubeconfigPath())
	t.Logf("events %s: exit %d\nstdout:\n%s\nstderr:\n%s", pr, exit, stdout, stderr)
	judge(t, ctx, ns, pr, exit, stdout, sc)
}

// TestConformanceCachesAcrossBuilds: a job's second build sees what its first left in a
// task cache.
func TestConformanceCachesAcrossBuilds(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	first := scenario{file: "caches.yml", job: "cached", vars: []string{"mark=first"}, wantExit: 0,
		want: []string{"cache holds: nothing"}}
	exit, stdout, pr := runBuild(t, ctx, ns, first)
	judge(t, ctx, ns, pr, exit, stdout, first)
	second := scenario{file: "caches.yml", job: "cached", vars: []string{"mark=second"}, wantExit: 0,
		want: []string{"cache holds: first"}}
	exit, stdout, pr = runBuild(t, ctx, ns, second)
	judge(t, ctx, ns, pr, exit, stdout, second)
}

// TestConformanceCachesOfATimedOutTask: a task stopped by its timeout leaves its cache
// to the job's next build, as Concourse registers it whatever ended the process.
func TestConformanceCachesOfATimedOutTask(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	first := scenario{file: "interrupted.yml", job: "timeout", vars: []string{"mark=first", "sleep=300"}, wantExit: 1,
		want: []string{"cache holds: nothing", "timeout exceeded"}}
	exit, stdout, pr := runBuild(t, ctx, ns, first)
	judge(t, ctx, ns, pr, exit, stdout, first)
	second := scenario{file: "interrupted.yml", job: "timeout", vars: []string{"mark=second", "sleep=0"}, wantExit: 0,
		want: []string{"cache holds: first", "woke up"}}
	exit, stdout, pr = runBuild(t, ctx, ns, second)
	judge(t, ctx, ns, pr, exit, stdout, second)
}

// checkBuild checks the exit code, the status line and the output of a build.
func checkBuild(t *testing.T, cmd string, exit int, out string, sc scenario) {
	t.Helper()
	if exit != sc.wantExit {
		t.Errorf("%s: exit %d, want %d", cmd, exit, sc.wantExit)
	}
	if got, want := lastLine(out), sc.status(); got != want {
		t.Errorf("%s: last line %q, want the build's status %q", cmd, got, want)
	}
	checkLines(t, out, sc.want, sc.notWant)
	if sc.ordered {
		checkOrder(t, out, sc.want)
	}
}

// checkOrder reports lines of want that come before the one listed ahead of them.
func checkOrder(t *testing.T, out string, want []string) {
	t.Helper()
	got := lines(out)
	at := -1
	for _, w := range want {
		i := slices.Index(got, w)
		if i < 0 {
			continue // checkLines reports it
		}
		if i < at {
			t.Errorf("%q comes before the lines listed ahead of it %q; output:\n%s", w, want, out)
		}
		at = i
	}
}

func lastLine(out string) string {
	ls := lines(strings.TrimSpace(out))
	return strings.TrimSpace(ls[len(ls)-1])
}

var startedLine = regexp.MustCompile(`started .* \(pipelinerun ([a-z0-9-]+)/([a-z0-9.-]+)\)`)

// pipelineRunOf reads the PipelineRun's name from what `run` printed on stderr.
func pipelineRunOf(t *testing.T, stderr string) string {
	t.Helper()
	m := startedLine.FindStringSubmatch(ansi.ReplaceAllString(stderr, ""))
	if m == nil {
		t.Fatalf("run printed no %q line on stderr:\n%s", "started ... (pipelinerun NS/NAME)", stderr)
	}
	return m[2]
}

// verdictOf is the build's status as its verdict task recorded it, or its last step
// when that holds the verdict (runspec.LabelVerdict) and recorded it.
func verdictOf(t *testing.T, ns, pr string) string {
	t.Helper()
	for _, tr := range taskRunsOf(t, ns, pr) {
		result := runspec.ResultOutcome
		switch {
		case tr.Labels[runspec.LabelVerdict] == runspec.VerdictFused:
			result = runspec.ResultVerdict
		case tr.Labels["tekton.dev/pipelineTask"] != runspec.VerdictTask:
			continue
		}
		for _, r := range tr.Status.Results {
			if r.Name == result {
				return r.Value.StringVal
			}
		}
	}
	return ""
}

// taskRunsAre checks that the build ran these pipeline tasks, and no other: a pod each.
func taskRunsAre(want ...string) func(t *testing.T, ns, pr string) {
	return func(t *testing.T, ns, pr string) {
		t.Helper()
		var got []string
		for _, tr := range taskRunsOf(t, ns, pr) {
			got = append(got, tr.Labels["tekton.dev/pipelineTask"])
		}
		slices.Sort(got)
		if !slices.Equal(got, slices.Sorted(slices.Values(want))) {
			t.Errorf("the build's TaskRuns are of %q, want %q", got, want)
		}
	}
}

// checkJoinsSucceeded checks that no join of the build shows as failed on the cluster
// (tkn, the PipelineRun's counts): a join only computes an outcome, which its result
// carries, whatever it is.
func checkJoinsSucceeded(t *testing.T, ns, pr string) {
	t.Helper()
	for _, tr := range taskRunsOf(t, ns, pr) {
		var mode runspec.Mode
		for _, p := range tr.Spec.Params {
			if p.Name == runspec.ParamSpec {
				spec, err := runspec.Decode(p.Value.StringVal)
				if err != nil {
					t.Fatalf("TaskRun %s: %v", tr.Name, err)
				}
				mode = spec.Mode
			}
		}
		if mode != runspec.ModeJoin {
			continue
		}
		if c := tr.Status.GetCondition(apis.ConditionSucceeded); c == nil || c.Status != corev1.ConditionTrue {
			t.Errorf("join %s shows as %v on the cluster, want succeeded (its outcome is its result)", tr.Name, c)
		}
	}
}

func taskRunsOf(t *testing.T, ns, pr string) []pipelinev1.TaskRun {
	t.Helper()
	trs, err := testCluster.tekton.TektonV1().TaskRuns(ns).List(context.Background(),
		metav1.ListOptions{LabelSelector: "tekton.dev/pipelineRun=" + pr})
	if err != nil {
		t.Fatalf("listing the TaskRuns of %s: %v", pr, err)
	}
	return trs.Items
}

// maxConcurrent checks that the TaskRuns of the PipelineTasks named with one of the
// prefixes ran at most n at once, and n at once at some point.
// taskRunCount checks that the build made n TaskRuns of PipelineTasks named with prefix:
// the others were skipped, with no pod.
func taskRunCount(n int, prefix string) func(t *testing.T, ns, pr string) {
	return func(t *testing.T, ns, pr string) {
		t.Helper()
		got := 0
		for _, tr := range taskRunsOf(t, ns, pr) {
			if strings.HasPrefix(tr.Labels["tekton.dev/pipelineTask"], prefix) {
				got++
			}
		}
		if got != n {
			t.Errorf("%d TaskRuns of %s*, want %d", got, prefix, n)
		}
	}
}

func maxConcurrent(n int, prefixes ...string) func(t *testing.T, ns, pr string) {
	return func(t *testing.T, ns, pr string) {
		t.Helper()
		type span struct {
			name       string
			start, end time.Time
		}
		var spans []span
		for _, tr := range taskRunsOf(t, ns, pr) {
			task := tr.Labels["tekton.dev/pipelineTask"]
			for _, p := range prefixes {
				if !strings.HasPrefix(task, p) {
					continue
				}
				if tr.Status.StartTime == nil || tr.Status.CompletionTime == nil {
					t.Errorf("TaskRun %s has no start or completion time", tr.Name)
					return
				}
				spans = append(spans, span{task, tr.Status.StartTime.Time, tr.Status.CompletionTime.Time})
				break
			}
		}
		// Sweep over the starts and ends; an end and a start at the same instant (the
		// times have seconds) do not overlap.
		type edge struct {
			at    time.Time
			delta int
		}
		var edges []edge
		for _, s := range spans {
			edges = append(edges, edge{s.start, 1}, edge{s.end, -1})
		}
		sort.Slice(edges, func(i, j int) bool {
			if !edges[i].at.Equal(edges[j].at) {
				return edges[i].at.Before(edges[j].at)
			}
			return edges[i].delta < edges[j].delta
		})
		running, most := 0, 0
		for _, e := range edges {
			running += e.delta
			most = max(most, running)
		}
		if most != n {
			t.Errorf("at most %d of %v ran at once, want %d: %+v", most, prefixes, n, spans)
		}
	}
}

// fromEnvelopes reads ATC event envelopes, one per line, numbered from 0, and returns the
// build's output (log payloads, and error messages as lines) and its last status.
func fromEnvelopes(t *testing.T, out string) (text, status string) {
	t.Helper()
	var b strings.Builder
	for i, line := range strings.Split(strings.TrimSpace(out), "\n") {
		e, env, err := event.Unmarshal([]byte(line))
		if err != nil {
			t.Fatalf("events --json: line %d: %v\n%s", i+1, err, line)
		}
		if env.EventID != strconv.Itoa(i) {
			t.Errorf("events --json: line %d has event_id %q, want %d", i+1, env.EventID, i)
		}
		switch e := e.(type) {
		case event.Log:
			b.WriteString(e.Payload)
		case event.StartTask:
			// fly's line for it: the command, from the config the event holds.
			b.WriteString("running " + strings.Join(append([]string{e.TaskConfig.Run.Path}, e.TaskConfig.Run.Args...), " ") + "\n")
		case event.Error:
			b.WriteString(e.Message + "\n")
		case event.Status:
			status = string(e.Status)
		}
	}
	return b.String(), status
}

// A credential-looking var given with -v lands in the build's spec as plain text: run
// says so on stderr, naming the var and never its value.
func TestRunWarnsOfPlainTextCredentials(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	exit, stdout, stderr := runCLI(t, ctx, runArgs(ns, "contract.yml", "plain-var", "api_token=plain-e2e-value")...)
	if exit != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", exit, stdout, stderr)
	}
	if !strings.Contains(stderr, "warning: ((api_token)) looks like a credential") {
		t.Errorf("no warning about ((api_token)) on stderr:\n%s", stderr)
	}
	if strings.Contains(stderr, "plain-e2e-value") {
		t.Errorf("the warning shows the value:\n%s", stderr)
	}
}

// admittedUnderRestricted checks that the pods of a build's steps (by pipeline task) are,
// or are not, admitted by Pod Security "restricted": each pod, as Tekton made it, is
// created again (dry run) in a namespace that enforces it.
func admittedUnderRestricted(want map[string]bool) func(t *testing.T, ns, pipelineRun string) {
	return func(t *testing.T, ns, pipelineRun string) {
		ctx := context.Background()
		restricted := namespace(t)
		enforce(t, restricted, "restricted")
		trs, err := testCluster.tekton.TektonV1().TaskRuns(ns).List(ctx, metav1.ListOptions{LabelSelector: "tekton.dev/pipelineRun=" + pipelineRun})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, tr := range trs.Items {
			task := tr.Labels["tekton.dev/pipelineTask"]
			wantAdmitted, ok := want[task]
			if !ok {
				continue
			}
			seen[task] = true
			pod, err := testCluster.kube.CoreV1().Pods(ns).Get(ctx, tr.Status.PodName, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("the pod of %s: %v", task, err)
			}
			again := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Labels: pod.Labels}, Spec: *pod.Spec.DeepCopy()}
			again.Spec.NodeName = ""
			_, err = testCluster.kube.CoreV1().Pods(restricted).Create(ctx, again, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if admitted := err == nil; admitted != wantAdmitted {
				t.Errorf("the pod of %s admitted under restricted: %v (%v), want %v", task, admitted, err, wantAdmitted)
			}
		}
		if len(seen) != len(want) {
			t.Errorf("pods of %v found, want %v", seen, want)
		}
	}
}
