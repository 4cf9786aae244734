package runner_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// taskSpec is a task step with an embedded config.
func (w *world) taskSpec(planID, name string, config map[string]any) runspec.Spec {
	s := w.spec(runspec.ModeTask, planID, name)
	s.Task = &runspec.Task{Config: config}
	return s
}

func shConfig(script string, extra map[string]any) map[string]any {
	cfg := map[string]any{"platform": "linux", "run": map[string]any{"path": "/bin/sh", "args": []any{"-c", script}}}
	for k, v := range extra {
		cfg[k] = v
	}
	return cfg
}

func TestTaskProcess(t *testing.T) {
	sum := sha256.Sum256([]byte("unit-test"))
	wd := hex.EncodeToString(sum[:4])
	tests := []struct {
		name       string
		script     string
		extra      map[string]any
		params     map[string]any
		want       runspec.Outcome
		wantStdout string
		wantStderr string
	}{
		{
			name: "stdout and stderr merged in order", script: "echo one; echo two >&2; echo three",
			want: runspec.Succeeded, wantStdout: "one\ntwo\nthree\n",
		},
		{
			name: "a terminal, as in Concourse", script: "[ -t 1 ] && echo terminal",
			want: runspec.Succeeded, wantStdout: "terminal\n",
		},
		{name: "non-zero exit is a failure", script: "echo bad; exit 3", want: runspec.Failed, wantStdout: "bad\n"},
		{name: "working directory", script: `pwd`, want: runspec.Succeeded, wantStdout: "TMPBUILD/" + wd + "\n"},
		{
			name:   "params: step params override config params and warn",
			script: `echo "$A $B $C $N"`, extra: map[string]any{"params": map[string]any{"A": "config", "B": "config", "N": 1.5}},
			params: map[string]any{"B": "step", "C": true},
			want:   runspec.Succeeded, wantStdout: "[WARNING] C was defined in pipeline but missing from task file\nconfig step true 1.5\n",
		},
		{
			name: "no BUILD_* and no TMPDIR, but ATC_EXTERNAL_URL", script: `env | grep -E '^(BUILD_|TMPDIR|ATC_)' | sort`,
			want: runspec.Succeeded, wantStdout: "ATC_EXTERNAL_URL=https://ci.example.com\n",
		},
		{
			name: "run.dir with .. deleted", script: "pwd",
			extra: map[string]any{"run": map[string]any{"path": "/bin/sh", "args": []any{"-c", "pwd"}, "dir": "../a/../b"}, "outputs": []any{map[string]any{"name": "x", "path": "a/b"}}},
			want:  runspec.Succeeded, wantStdout: "TMPBUILD/" + wd + "/a/b\n",
		},
		{
			name:  "relative run.path resolved in the working directory",
			extra: map[string]any{"run": map[string]any{"path": "src/run.sh"}, "inputs": []any{map[string]any{"name": "src"}}},
			want:  runspec.Succeeded, wantStdout: "from the input\n",
		},
		{
			name: "bare run.path found in the task's PATH", extra: map[string]any{"run": map[string]any{"path": "sh", "args": []any{"-c", "echo found"}}},
			want: runspec.Succeeded, wantStdout: "found\n",
		},
		{
			name: "run.user sets USER", extra: map[string]any{"run": map[string]any{"path": "/bin/sh", "args": []any{"-c", "echo $USER"}, "user": currentUser(t)}},
			want: runspec.Succeeded, wantStdout: currentUser(t) + "\n",
		},
		{name: "missing executable errors", extra: map[string]any{"run": map[string]any{"path": "/nope/nothing"}}, want: runspec.Errored, wantStderr: "starting /nope/nothing"},
		{name: "invalid config errors", extra: map[string]any{"platform": "", "ouputs": []any{}}, want: runspec.Errored, wantStderr: "invalid task config"},
		{
			// Concourse accepts it: the cache would replace the working directory.
			name: "a cache without a path errors", extra: map[string]any{"caches": []any{map[string]any{}}},
			want: runspec.Errored, wantStderr: `cache "" is the task's working directory: give it a path under it`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			w.artifact("src", map[string]string{"run.sh#x": "#!/bin/sh\necho from the input\n"})
			spec := w.taskSpec("1", "unit-test", shConfig(tt.script, tt.extra))
			spec.Task.Params = tt.params
			r := w.start(spec, withoutEnv("TMPDIR", "BUILD_", "ATC_")).wait(t)
			w.checkRun(r, "1", tt.want)
			if started := tt.want != runspec.Errored; r.announced != started {
				t.Errorf("announced its start: %v, want %v (before its process's output: stdout %q)", r.announced, started, r.stdout)
			}
			stdout := strings.ReplaceAll(r.stdout, w.tmpBuild, "TMPBUILD")
			if tt.wantStdout != "" || tt.want == runspec.Succeeded {
				if diff := cmp.Diff(tt.wantStdout, stdout); diff != "" {
					t.Errorf("stdout (-want +got):\n%s", diff)
				}
			}
			if !strings.Contains(r.said(), tt.wantStderr) {
				t.Errorf("stderr %q does not contain %q", r.stderr, tt.wantStderr)
			}
		})
	}
}

func currentUser(t *testing.T) string {
	t.Helper()
	out, err := os.ReadFile("/etc/passwd")
	if err != nil {
		t.Skip("no /etc/passwd")
	}
	uid := os.Getuid()
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Split(line, ":")
		if len(f) > 2 && f[2] == strconv.Itoa(uid) {
			return f[0]
		}
	}
	t.Skip("the current user is not in /etc/passwd")
	return ""
}

// withoutEnv is the test's environment less the variables with the given prefixes.
func withoutEnv(prefixes ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		keep := true
		for _, p := range prefixes {
			if strings.HasPrefix(kv, p) {
				keep = false
			}
		}
		if keep {
			env = append(env, kv)
		}
	}
	return env
}

func TestTaskDefaultPath(t *testing.T) {
	w := newWorld(t)
	spec := w.taskSpec("1", "t", map[string]any{"platform": "linux", "run": map[string]any{"path": "/bin/sh", "args": []any{"-c", `echo "$PATH"`}}})
	r := w.start(spec, withoutEnv("PATH=")).wait(t)
	w.checkRun(r, "1", runspec.Succeeded)
	want := "/usr/local/bin:/usr/bin:/bin\n"
	if os.Geteuid() == 0 {
		want = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n"
	}
	if r.stdout != want {
		t.Errorf("PATH = %q, want %q", r.stdout, want)
	}
}

func TestTaskInputsAreCopiesAndOutputsArePublished(t *testing.T) {
	w := newWorld(t)
	repo := w.artifact("repo", map[string]string{"README": "original\n", "sub/file": "x"})
	w.artifact("other", map[string]string{"o": "other\n"})
	spec := w.taskSpec("2", "build", map[string]any{
		"platform": "linux",
		"run":      map[string]any{"path": "/bin/sh", "args": []any{"-c", "echo changed > repo/README; rm repo/sub/file; cat in2/o; echo built > out/result; echo mapped > mine/x"}},
		"inputs":   []any{map[string]any{"name": "repo"}, map[string]any{"name": "o2", "path": "in2"}, map[string]any{"name": "maybe", "optional": true}},
		"outputs":  []any{map[string]any{"name": "repo"}, map[string]any{"name": "out"}, map[string]any{"name": "mine"}},
	})
	spec.Task.InputMapping = map[string]string{"o2": "other"}
	spec.Task.OutputMapping = map[string]string{"mine": "theirs"}
	r := w.run(spec)
	w.checkRun(r, "2", runspec.Succeeded)
	if r.stdout != "other\n" {
		t.Errorf("stdout = %q", r.stdout)
	}
	read := func(p string) string {
		data, err := os.ReadFile(p)
		if err != nil {
			return "<" + err.Error() + ">"
		}
		return string(data)
	}
	got := map[string]string{
		"artifact README":   read(filepath.Join(repo, "README")),
		"artifact sub/file": read(filepath.Join(repo, "sub/file")),
		"new repo README":   read(filepath.Join(w.artifactDir(nil, "repo"), "README")),
		"out/result":        read(filepath.Join(w.artifactDir(nil, "out"), "result")),
		"theirs/x":          read(filepath.Join(w.artifactDir(nil, "theirs"), "x")),
	}
	want := map[string]string{
		"artifact README":   "original\n",
		"artifact sub/file": "x",
		"new repo README":   "changed\n",
		"out/result":        "built\n",
		"theirs/x":          "mapped\n",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("artifacts (-want +got):\n%s", diff)
	}
	if w.artifactDir(nil, "mine") != "" {
		t.Error("an output was registered under its unmapped name")
	}
}

func TestTaskOutputsRegisteredInPlaceWhenWorkIsTheVolume(t *testing.T) {
	w := newWorld(t)
	work := runspec.WorkPath("3")
	w.tmpBuild = filepath.Join(w.volume, work)
	spec := w.taskSpec("3", "t", shConfig("echo hi > out/f", map[string]any{"outputs": []any{map[string]any{"name": "out"}}}))
	spec.Paths.Work = work
	r := w.run(spec)
	w.checkRun(r, "3", runspec.Succeeded)
	dir := w.artifactDir(nil, "out")
	if !strings.HasPrefix(dir, filepath.Join(w.volume, work)+"/") {
		t.Errorf("output registered at %s, want it in place under %s", dir, work)
	}
}

func TestTaskOutputsRegisteredEvenOnFailure(t *testing.T) {
	w := newWorld(t)
	spec := w.taskSpec("4", "t", shConfig("echo partial > out/f; exit 1", map[string]any{"outputs": []any{map[string]any{"name": "out"}}}))
	w.checkRun(w.run(spec), "4", runspec.Failed)
	if data, _ := os.ReadFile(filepath.Join(w.artifactDir(nil, "out"), "f")); string(data) != "partial\n" {
		t.Errorf("output = %q", data)
	}
}

func TestTaskMissingInputsError(t *testing.T) {
	w := newWorld(t)
	spec := w.taskSpec("5", "t", shConfig("true", map[string]any{"inputs": []any{
		map[string]any{"name": "a"}, map[string]any{"name": "b"}, map[string]any{"name": "c", "optional": true}, map[string]any{"name": "d", "optional": true},
	}}))
	// Named as the plan maps them, as Concourse's MissingInputsError names them.
	spec.Task.InputMapping = map[string]string{"a": "built-a", "d": "built-d"}
	r := w.run(spec)
	w.checkRun(r, "5", runspec.Errored)
	if r.failure != "missing inputs: built-a, b" {
		t.Errorf("error = %q, want %q", r.failure, "missing inputs: built-a, b")
	}
	// Its process never started: a backend must not show it started.
	if r.announced || r.stdout != "" {
		t.Errorf("a task whose inputs are missing announced its start (stdout %q)", r.stdout)
	}
}

func TestTaskCaches(t *testing.T) {
	w := newWorld(t)
	cfg := shConfig("cat .cache/n 2>/dev/null || echo none; echo $((${RUN}+0)) > .cache/n", map[string]any{"caches": []any{map[string]any{"path": ".cache"}}, "params": map[string]any{"RUN": "0"}})
	var outs []string
	for _, run := range []string{"1", "2"} {
		spec := w.taskSpec(run, "t", cfg)
		spec.Task.Params = map[string]any{"RUN": run}
		r := w.run(spec)
		w.checkRun(r, run, runspec.Succeeded)
		outs = append(outs, r.stdout)
	}
	if diff := cmp.Diff([]string{"none\n", "1\n"}, outs); diff != "" {
		t.Errorf("cache contents seen (-want +got):\n%s", diff)
	}
	oneOff := w.taskSpec("3", "t", cfg)
	oneOff.Build.JobName = ""
	oneOff.Task.Params = map[string]any{"RUN": "9"}
	w.run(oneOff)
	again := w.taskSpec("4", "t", cfg)
	again.Task.Params = map[string]any{"RUN": "4"}
	if r := w.run(again); r.stdout != "2\n" {
		t.Errorf("after a one-off build the cache holds %q, want 2 (one-off builds do not save caches)", r.stdout)
	}
}

// TestRecordedTaskCaches runs builds of a job whose task caches the ATC records, each
// with the records it would find: a cache whose record is gone or made again was
// cleared (fly clear-task-cache) and starts empty; one saved before its record was made
// is kept once the record is there, and cleared when it never came.
func TestRecordedTaskCaches(t *testing.T) {
	w := newWorld(t)
	cfg := shConfig("cat .cache/n 2>/dev/null || echo none; echo $((${RUN}+0)) > .cache/n", map[string]any{"caches": []any{map[string]any{"path": ".cache"}}, "params": map[string]any{"RUN": "0"}})
	for i, tt := range []struct {
		records map[string]int // nil: not recorded
		want    string
	}{
		{records: map[string]int{}, want: "none\n"},
		{records: map[string]int{".cache": 7}, want: "1\n"},
		{records: map[string]int{".cache": 7}, want: "2\n"},
		{records: map[string]int{}, want: "none\n"},
		{records: map[string]int{}, want: "none\n"},
		{records: map[string]int{".cache": 9, "other": 3}, want: "5\n"},
		{records: nil, want: "6\n"},
		{records: map[string]int{".cache": 10}, want: "none\n"},
		{records: map[string]int{".cache": 10}, want: "8\n"},
	} {
		run := strconv.Itoa(i + 1)
		spec := w.taskSpec(run, "t", cfg)
		spec.Build.ID = int64(100 + i)
		spec.Task.Params = map[string]any{"RUN": run}
		if tt.records != nil {
			spec.Task.CacheRecords = &runspec.CacheRecords{IDs: tt.records}
		}
		r := w.run(spec)
		w.checkRun(r, run, runspec.Succeeded)
		if r.stdout != tt.want {
			t.Errorf("build %s with records %v saw the cache hold %q, want %q", run, tt.records, r.stdout, tt.want)
		}
		wantResult := `[".cache"]`
		if tt.records == nil {
			wantResult = ""
		}
		if got := w.result(run, runspec.ResultCaches); got != wantResult {
			t.Errorf("build %s: caches result %q, want %q", run, got, wantResult)
		}
	}
}

// TestUnrecordedTaskCacheAcrossAttempts: a cache a step saves before its record is made
// is the build's own for the steps after it (each attempt of a retried task), although
// the records the build was given, those of its start, do not have it; a later build
// whose records still lack it starts empty, as the cache was cleared.
func TestUnrecordedTaskCacheAcrossAttempts(t *testing.T) {
	w := newWorld(t)
	cfg := shConfig("n=$(( $(cat .cache/n 2>/dev/null || echo 0) + 1 )); echo $n > .cache/n; echo $n", map[string]any{"caches": []any{map[string]any{"path": ".cache"}}, "params": map[string]any{"RUN": "0"}})
	var seen []string
	for i, build := range []int64{7, 7, 7, 8} {
		run := strconv.Itoa(i + 1)
		spec := w.taskSpec(run, "t", cfg)
		spec.Build.ID = build
		spec.Task.CacheRecords = &runspec.CacheRecords{IDs: map[string]int{}}
		r := w.run(spec)
		w.checkRun(r, run, runspec.Succeeded)
		seen = append(seen, strings.TrimSpace(r.stdout))
	}
	if diff := cmp.Diff([]string{"1", "2", "3", "1"}, seen); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
}

func TestExitStatusResult(t *testing.T) {
	tests := []struct {
		script string
		want   runspec.Outcome
		status string
	}{
		{"exit 0", runspec.Succeeded, "0"},
		{"exit 3", runspec.Failed, "3"},
	}
	for _, tt := range tests {
		t.Run(tt.script, func(t *testing.T) {
			w := newWorld(t)
			r := w.run(w.taskSpec("1", "t", shConfig(tt.script, nil)))
			w.checkRun(r, "1", tt.want)
			if got := w.result("1", "exit-status"); got != tt.status {
				t.Errorf("exit-status = %q, want %q", got, tt.status)
			}
			if r.failure != "" {
				t.Errorf("error = %q, want none", r.failure)
			}
		})
	}
}

// nonRootUser is a user of /etc/passwd that is not root, for tests that switch to it.
func nonRootUser(t *testing.T) (name string, uid int) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("switching users needs root")
	}
	out, err := os.ReadFile("/etc/passwd")
	if err != nil {
		t.Skip("no /etc/passwd")
	}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Split(line, ":"); len(f) > 2 && f[0] == "nobody" {
			uid, err := strconv.Atoi(f[2])
			if err != nil {
				break
			}
			return f[0], uid
		}
	}
	t.Skip("no user nobody in /etc/passwd")
	return "", 0
}

// owner is the user name that owns path, as stat -c %U says.
func owner(t *testing.T, path string) string {
	t.Helper()
	out, err := exec.Command("stat", "-c", "%U", path).Output()
	if err != nil {
		t.Fatalf("stat %s: %v", path, err)
	}
	return strings.TrimSpace(string(out))
}

// TestTaskVolumesBelongToItsUser follows testflight's nonroot-chowning pipeline
// (concourse/concourse#9593): a task whose run.user is not root owns its working
// directory, outputs, caches and input copies; its outputs go as they are to a later root
// task, and a root task's outputs to a later non-root task.
func TestTaskVolumesBelongToItsUser(t *testing.T) {
	user, _ := nonRootUser(t)
	w := newWorld(t)
	// t.TempDir's directories are the test's alone; the task's user must get through them.
	for _, d := range []string{filepath.Dir(w.root), w.root} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	repo := w.artifact("repo", map[string]string{"README": "original\n", "sub/file": "x"})
	caches := []any{map[string]any{"path": "cache"}}
	asUser := func(script string) map[string]any {
		return map[string]any{"path": "/bin/sh", "args": []any{"-c", "set -e\n" + script}, "user": user}
	}
	nonroot := w.taskSpec("1", "nonroot", map[string]any{
		"platform": "linux",
		"inputs":   []any{map[string]any{"name": "repo"}},
		"outputs":  []any{map[string]any{"name": "empty"}, map[string]any{"name": "repo"}},
		"caches":   caches,
		"run": asUser(`test "$(id -u)" != 0
for p in . empty repo repo/README repo/sub repo/sub/file cache; do echo "$p: $(stat -c %U $p)"; done
echo "written by nonroot" > empty/file
echo changed > repo/README
touch repo/sub/new cache/kept workfile`),
	})
	r := w.run(nonroot)
	w.checkRun(r, "1", runspec.Succeeded)
	want := ""
	for _, p := range []string{".", "empty", "repo", "repo/README", "repo/sub", "repo/sub/file", "cache"} {
		want += p + ": " + user + "\n"
	}
	if diff := cmp.Diff(want, r.stdout); diff != "" {
		t.Errorf("owners in the non-root task (-want +got):\n%s", diff)
	}
	if got := owner(t, filepath.Join(repo, "README")); got != "root" {
		t.Errorf("the artifact the input was copied from now belongs to %s", got)
	}
	if got := owner(t, filepath.Join(w.volume, runspec.CachePath("nonroot", "cache"), "kept")); got != user {
		t.Errorf("the saved cache's file belongs to %s, want %s", got, user)
	}

	root := w.taskSpec("2", "root", shConfig(`set -e
for p in empty empty/file; do echo "$p: $(stat -c %U $p)"; done
echo "written by root" >> empty/file
cat empty/file
echo root > out/file`, map[string]any{
		"inputs":  []any{map[string]any{"name": "empty"}},
		"outputs": []any{map[string]any{"name": "out"}},
	}))
	r = w.run(root)
	w.checkRun(r, "2", runspec.Succeeded)
	// As in testflight's nonroot-to-root: the volume is root's, its file still nonroot's.
	if diff := cmp.Diff("empty: root\nempty/file: "+user+"\nwritten by nonroot\nwritten by root\n", r.stdout); diff != "" {
		t.Errorf("the root task (-want +got):\n%s", diff)
	}

	back := w.taskSpec("3", "back", map[string]any{
		"platform": "linux",
		"inputs":   []any{map[string]any{"name": "out"}},
		"run":      asUser(`echo "out/file: $(stat -c %U out/file)"; echo again >> out/file; cat out/file`),
	})
	r = w.run(back)
	w.checkRun(r, "3", runspec.Succeeded)
	if diff := cmp.Diff("out/file: "+user+"\nroot\nagain\n", r.stdout); diff != "" {
		t.Errorf("the non-root task after the root one (-want +got):\n%s", diff)
	}
}
