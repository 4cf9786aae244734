package runner_test

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// files lists the files below dir, relative to it, sorted.
func files(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		out = append(out, rel)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// finishedBuild fills the volume as a build leaves it: its step 1 ended with o.
func finishedBuild(w *world, o runspec.Outcome) {
	w.t.Helper()
	w.recordOutcome("1", o)
	cache := runspec.CachePath("test", "cache")
	write(w.t, w.volume, map[string]string{
		"volumes/1/repo/f":               "artifact",
		"work/1/out/g":                   "output",
		"state/deadlines/1":              "2024-01-01T00:00:00Z",
		"state/aborted":                  "",
		"state/scopes/%25/artifacts/src": "volumes/1/repo",
		cache + "/kept":                  "cache",
		cache + ".old-1/stale":           "a save that died",
		cache + ".next-2/partial":        "a save that died",
		"caches/test/other.next-1/f":     "no cache named other: a cache of its own",
		"lost+found/x":                   "the file system's",
	})
}

func verdictSpec(w *world) runspec.Spec {
	spec := w.spec(runspec.ModeVerdict, "verdict", "")
	spec.Verdict = &runspec.Verdict{Tree: runspec.Node{ID: "1", Kind: runspec.KindLeaf}}
	return spec
}

func TestVerdictLeavesOnlyCaches(t *testing.T) {
	w := newWorld(t)
	finishedBuild(w, runspec.Succeeded)
	// What an earlier failed build kept, which the clone carried.
	write(t, w.volume, map[string]string{"preserved/.build": "6", "preserved/volumes/1/repo/f": "build 6's"})
	r := w.run(verdictSpec(w))
	if r.exit != 0 || w.result("verdict", "outcome") != "succeeded" || r.failure != "" {
		t.Errorf("exit %d, outcome %q, error %q; want succeeded, no error\nstderr:\n%s", r.exit, w.result("verdict", "outcome"), r.failure, r.stderr)
	}
	want := []string{
		"caches/test/cache/kept",
		"caches/test/other.next-1/f",
		"lost+found/x",
	}
	if diff := cmp.Diff(want, files(t, w.volume)); diff != "" {
		t.Errorf("volume after the verdict (-want +got):\n%s", diff)
	}
}

// TestVerdictPreservesWhatDidNotSucceed: the volume of a job build that did not succeed
// is left as the next build needs it too (its caches where they are, nothing else), but
// what else it held is kept under preserved/, in place of an earlier failed build's, for
// its steps to be intercepted as they ended.
func TestVerdictPreservesWhatDidNotSucceed(t *testing.T) {
	for _, o := range []runspec.Outcome{runspec.Failed, runspec.Errored, runspec.Aborted} {
		t.Run(string(o), func(t *testing.T) {
			w := newWorld(t)
			finishedBuild(w, o)
			write(t, w.volume, map[string]string{"preserved/.build": "6", "preserved/volumes/9/old/f": "build 6's"})
			r := w.run(verdictSpec(w))
			if r.exit != o.ExitCode() || w.result("verdict", "outcome") != string(o) || r.failure != "" {
				t.Errorf("exit %d, outcome %q, error %q; want %s, no error\nstderr:\n%s", r.exit, w.result("verdict", "outcome"), r.failure, o, r.stderr)
			}
			want := []string{
				"caches/test/cache/kept",
				"caches/test/other.next-1/f",
				"lost+found/x",
				"preserved/.build",
				"preserved/caches",
				"preserved/state/aborted",
				"preserved/state/deadlines/1",
				"preserved/state/outcomes/1",
				"preserved/state/outcomes/verdict",
				"preserved/state/scopes/%25/artifacts/src",
				"preserved/volumes/1/repo/f",
				"preserved/work/1/out/g",
			}
			if diff := cmp.Diff(want, files(t, w.volume)); diff != "" {
				t.Errorf("volume after the verdict (-want +got):\n%s", diff)
			}
			if b, _ := os.ReadFile(filepath.Join(w.volume, "preserved/.build")); string(b) != "7" {
				t.Errorf("preserved/.build says %q, want build 7", b)
			}
			if got, _ := os.ReadFile(filepath.Join(w.volume, "preserved/caches/test/cache/kept")); string(got) != "cache" {
				t.Errorf("preserved/caches does not lead to the caches: %q", got)
			}
		})
	}
}

func TestOneOffVerdictKeepsTheVolume(t *testing.T) {
	w := newWorld(t)
	finishedBuild(w, runspec.Succeeded)
	before := files(t, w.volume)
	spec := verdictSpec(w)
	spec.Build = runspec.Build{ID: 42, Name: "42"}
	w.checkRun(w.run(spec), "verdict", runspec.Succeeded)
	want := append(before, "state/outcomes/verdict")
	slices.Sort(want)
	if diff := cmp.Diff(want, files(t, w.volume)); diff != "" {
		t.Errorf("volume after the verdict (-want +got):\n%s", diff)
	}
}

// TestVerdictThatCannotClean runs the verdict as the runner image's user over files it
// may not delete, as a task running as root leaves them.
func TestVerdictThatCannotClean(t *testing.T) {
	w := newWorld(t)
	finishedBuild(w, runspec.Succeeded)
	bin := filepath.Join(w.root, "concourse-runner")
	data, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	write(t, w.root, map[string]string{"concourse-runner#x": string(data)})
	for _, d := range []string{filepath.Dir(w.root), w.root} {
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	err = filepath.WalkDir(w.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		return os.Chmod(p, 0o777)
	})
	if err != nil {
		t.Fatal(err)
	}
	locked := filepath.Join(w.volume, "volumes/1/repo")
	if err := os.Chmod(locked, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(locked, 0o755) })

	cmd := exec.Command(bin, w.args(verdictSpec(w))...)
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65532, Gid: 65532}}
	}
	out, _ := cmd.CombinedOutput()
	failure := w.result("verdict", "error")
	if code := cmd.ProcessState.ExitCode(); code != 0 || w.result("verdict", "outcome") != "succeeded" {
		t.Errorf("exit %d, outcome %q: the build's outcome must not change\n%s", code, w.result("verdict", "outcome"), out)
	}
	if !strings.HasPrefix(failure, "the build volume was not cleaned") || !strings.Contains(string(out), "permission denied") {
		t.Errorf("error result %q, log %q: want the volume reported not cleaned", failure, out)
	}
	if got := files(t, locked); !slices.Equal(got, []string{"f"}) {
		t.Errorf("the locked artifact holds %q", got)
	}
}

// TestCachesAcrossBuilds runs a task in two builds of a job, the second on a copy of the
// first's volume once its verdict cleaned it, as a clone of the build volume gives it.
func TestCachesAcrossBuilds(t *testing.T) {
	cfg := shConfig("cat .cache/n 2>/dev/null || echo none; echo $RUN > .cache/n", map[string]any{"caches": []any{map[string]any{"path": ".cache"}}, "params": map[string]any{"RUN": "0"}})
	task := func(w *world, run string) run {
		spec := w.taskSpec("1", "t", cfg)
		spec.Task.Params = map[string]any{"RUN": run}
		return w.run(spec)
	}
	first := newWorld(t)
	if r := task(first, "1"); r.stdout != "none\n" {
		t.Errorf("build 1 saw %q in its cache, want none", r.stdout)
	}
	// A pod of build 1 that died while saving left its old cache beside the new one.
	write(t, first.volume, map[string]string{runspec.CachePath("t", ".cache") + ".old-1/n": "0\n"})
	first.recordOutcome("1", runspec.Succeeded)
	first.run(verdictSpec(first))

	second := newWorld(t)
	if err := os.CopyFS(second.volume, os.DirFS(first.volume)); err != nil {
		t.Fatal(err)
	}
	r := task(second, "2")
	second.checkRun(r, "1", runspec.Succeeded)
	if r.stdout != "1\n" {
		t.Errorf("build 2 saw %q in its cache, want build 1's 1", r.stdout)
	}
	if got, _ := os.ReadFile(filepath.Join(second.volume, runspec.CachePath("t", ".cache"), "n")); string(got) != "2\n" {
		t.Errorf("after build 2 the cache holds %q, want 2", got)
	}
}

// TestFusedVerdict: a verdict in the pod of the build's last step records a build that
// succeeded under its own result names, beside the step's, and leaves the volume as the
// verdict does; a build that did not succeed it leaves whole to the VerdictTask.
func TestFusedVerdict(t *testing.T) {
	fused := func(w *world) runspec.Spec {
		spec := verdictSpec(w)
		spec.Verdict.Fused = true
		// The step before it wrote its own results where the verdict writes.
		write(t, w.resultsDir("verdict"), map[string]string{"outcome": "succeeded", "error": "the step's"})
		return spec
	}
	t.Run("succeeded", func(t *testing.T) {
		w := newWorld(t)
		finishedBuild(w, runspec.Succeeded)
		r := w.run(fused(w))
		if r.exit != 0 || w.result("verdict", "verdict") != "succeeded" || w.result("verdict", "verdict-error") != "" {
			t.Errorf("exit %d, verdict %q, verdict-error %q; want 0, succeeded, none\nstderr:\n%s", r.exit, w.result("verdict", "verdict"), w.result("verdict", "verdict-error"), r.stderr)
		}
		// The step's own are in its termination message: the verdict's holds only its own.
		if got := files(t, w.resultsDir("verdict")); !slices.Equal(got, []string{"verdict"}) {
			t.Errorf("results after the verdict: %v, want the verdict alone", got)
		}
		want := []string{"caches/test/cache/kept", "caches/test/other.next-1/f", "lost+found/x"}
		if diff := cmp.Diff(want, files(t, w.volume)); diff != "" {
			t.Errorf("volume after the verdict (-want +got):\n%s", diff)
		}
	})
	for _, o := range []runspec.Outcome{runspec.Failed, runspec.Errored, runspec.Aborted, runspec.NeverRan} {
		t.Run(string(o), func(t *testing.T) {
			w := newWorld(t)
			finishedBuild(w, o)
			before := files(t, w.volume)
			r := w.run(fused(w))
			if r.exit != 1 || len(files(t, w.resultsDir("verdict"))) != 0 {
				t.Errorf("exit %d, results %v; want 1 and no result\nstderr:\n%s", r.exit, files(t, w.resultsDir("verdict")), r.stderr)
			}
			if !strings.Contains(r.stderr, "its verdict is left to the verdict task") {
				t.Errorf("stderr does not say why:\n%s", r.stderr)
			}
			if diff := cmp.Diff(before, files(t, w.volume)); diff != "" {
				t.Errorf("the volume changed (-before +after):\n%s", diff)
			}
		})
	}
}

// TestInlineVerdict: the only step of a build (a check build's check) records the
// build's verdict in its own container once it succeeded (--verdict-spec): the verdict's
// results beside the step's, none of its lines in the step's log, which is the build's
// output. A step that did not succeed leaves the verdict to the VerdictTask.
func TestInlineVerdict(t *testing.T) {
	check := func(w *world, script string) run {
		w.t.Helper()
		w.script("check", script)
		spec := w.spec(runspec.ModeCheck, "c", "repo")
		spec.Check = &runspec.Check{Type: "git", Source: map[string]any{"uri": "x"}}
		verdict := w.spec(runspec.ModeVerdict, "verdict", "")
		verdict.Build, verdict.Paths.Results = spec.Build, spec.Paths.Results
		verdict.Verdict = &runspec.Verdict{Tree: runspec.Node{ID: "c", Kind: runspec.KindLeaf}, Fused: true}
		encoded, err := verdict.Encode()
		if err != nil {
			t.Fatal(err)
		}
		r := w.startArgs(append(w.args(spec), "--verdict-spec="+encoded), nil)
		r.results = spec.Paths.Results
		return r.wait(t)
	}

	w := newWorld(t)
	r := check(w, `echo '[{"v":"1"},{"v":"2"}]'`)
	if r.exit != 0 || r.failure != "" {
		t.Fatalf("exit %d, error %q; want 0\nstderr:\n%s", r.exit, r.failure, r.stderr)
	}
	got := map[string]string{}
	for _, name := range files(t, w.resultsDir("c")) {
		got[name] = w.result("c", name)
	}
	want := map[string]string{"outcome": "succeeded", "version": `{"v":"2"}`, "versions": `[{"v":"1"},{"v":"2"}]`, "verdict": "succeeded"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results of the check and its verdict (-want +got):\n%s", diff)
	}
	if strings.Contains(r.stdout+r.stderr, "build succeeded") {
		t.Errorf("the verdict's line is in the step's log:\n%s%s", r.stdout, r.stderr)
	}
	// The job's volume emptied for its next build, as the verdict does.
	if left := files(t, w.volume); len(left) > 0 {
		t.Errorf("the volume after the verdict holds %q, want nothing", left)
	}

	w = newWorld(t)
	r = check(w, `echo 'no such repository' >&2; exit 1`)
	if r.exit == 0 || w.result("c", "verdict") != "" || w.result("c", "outcome") != "failed" {
		t.Errorf("a check that failed: exit %d, outcome %q, verdict %q; want non-zero, failed, no verdict", r.exit, w.result("c", "outcome"), w.result("c", "verdict"))
	}

	// A verdict spec that is not one a step records is refused before anything runs.
	spec := w.spec(runspec.ModeCheck, "c2", "repo")
	spec.Check = &runspec.Check{Type: "git"}
	unfused := verdictSpec(w)
	encoded, err := unfused.Encode()
	if err != nil {
		t.Fatal(err)
	}
	r = w.startArgs(append(w.args(spec), "--verdict-spec="+encoded), nil).wait(t)
	if r.exit == 0 || !strings.Contains(r.stderr, "--verdict-spec: the verdict's spec is not one a step records") {
		t.Errorf("an unfused verdict spec: exit %d\nstderr:\n%s", r.exit, r.stderr)
	}
}
