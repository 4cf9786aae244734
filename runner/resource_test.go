package runner_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// recordingScript saves its stdin, args, cwd and BUILD_* environment in $REC/<name>.*,
// says something on stderr, and prints out on stdout.
func (w *world) recordingScript(name, out string) string {
	rec := filepath.Join(w.root, "rec")
	if err := os.MkdirAll(rec, 0o755); err != nil {
		w.t.Fatal(err)
	}
	w.script(name, `cat > `+rec+`/`+name+`.stdin
echo "$@" > `+rec+`/`+name+`.args
pwd > `+rec+`/`+name+`.cwd
env | grep -E '^(BUILD_|ATC_)' | sort > `+rec+`/`+name+`.env
echo "`+name+` is working" >&2
`+out)
	return rec
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestGet(t *testing.T) {
	w := newWorld(t)
	rec := w.recordingScript("in", `echo fetched > "$1/file"
echo '{"version":{"ref":"abc"},"metadata":[{"name":"author","value":"me"}]}'`)
	w.secret("app.uri", map[string]string{"value": "https://example.com/secret-repo"})
	spec := w.spec(runspec.ModeGet, "1", "repo")
	spec.Get = &runspec.Get{Type: "git", Source: map[string]any{"uri": "((uri))", "n": json.Number("12345678901234567890")}, Params: map[string]any{"depth": json.Number("1")}, Version: map[string]string{"ref": "abc"}}
	r := w.run(spec)
	w.checkRun(r, "1", runspec.Succeeded)
	if r.stdout != "" || r.announced {
		t.Errorf("the script's stdout or a start mark reached the log: %q (a mark: %v)", r.stdout, r.announced)
	}
	if r.stderr != "in is working\n" {
		t.Errorf("stderr = %q", r.stderr)
	}
	if diff := cmp.Diff(`{"source":{"n":12345678901234567890,"uri":"https://example.com/secret-repo"},"params":{"depth":1},"version":{"ref":"abc"}}`, readFile(t, rec+"/in.stdin")); diff != "" {
		t.Errorf("stdin (-want +got):\n%s", diff)
	}
	got := map[string]string{
		"args":     readFile(t, rec+"/in.args"),
		"cwd":      readFile(t, rec+"/in.cwd"),
		"version":  w.result("1", "version"),
		"metadata": w.result("1", "metadata"),
		"file":     readFile(t, filepath.Join(w.artifactDir(nil, "repo"), "file")),
	}
	dir := filepath.Join(w.tmpBuild, "get")
	want := map[string]string{
		"args": dir + "\n", "cwd": dir + "\n",
		"version": `{"ref":"abc"}`, "metadata": `[{"name":"author","value":"me"}]`, "file": "fetched\n",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	wantEnv := []string{
		"ATC_EXTERNAL_URL=https://ci.example.com",
		"BUILD_ID=42",
		"BUILD_JOB_ID=5",
		"BUILD_JOB_NAME=unit",
		"BUILD_NAME=7",
		"BUILD_PIPELINE_ID=3",
		"BUILD_PIPELINE_NAME=app",
		"BUILD_TEAM_ID=1",
		"BUILD_TEAM_NAME=main",
		"BUILD_URL=https://ci.example.com/teams/main/pipelines/app/jobs/unit/builds/7",
		"BUILD_URL_SHORT=https://ci.example.com/builds/42",
	}
	if diff := cmp.Diff(wantEnv, strings.Fields(readFile(t, rec+"/in.env"))); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}

	// The metadata is a local var named after the step, not redacted.
	task := w.taskSpec("2", "t", shConfig(`echo "((.:repo.author))"`, nil))
	r = w.run(task)
	w.checkRun(r, "2", runspec.Succeeded)
	if r.stdout != "me\n" {
		t.Errorf("local var from get metadata: %q", r.stdout)
	}
}

func TestGetErrors(t *testing.T) {
	tests := []struct {
		name       string
		script     string
		want       runspec.Outcome
		wantStderr string
	}{
		{"null version", `echo '{"version":null}'`, runspec.Errored, "resource script (/opt/resource/in /tmp/build/get) output a null version\n"},
		{"empty output", `true`, runspec.Errored, "output a null version\n"},
		{"bad JSON", `echo 'not json'`, runspec.Errored, "invalid character 'o' in literal null (expecting 'u')\n"},
		{"non-zero exit is a failure, stdout not parsed", `echo 'not json'; echo oops >&2; exit 1`, runspec.Failed, "oops\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			w.script("in", tt.script)
			spec := w.spec(runspec.ModeGet, "1", "repo")
			spec.Get = &runspec.Get{Type: "git", Version: map[string]string{"v": "1"}}
			r := w.run(spec)
			w.checkRun(r, "1", tt.want)
			if !strings.HasSuffix(r.said(), tt.wantStderr) {
				t.Errorf("stderr = %q, want it to end with %q", r.stderr, tt.wantStderr)
			}
			if w.artifactDir(nil, "repo") != "" {
				t.Error("a get that did not succeed registered its artifact")
			}
		})
	}
}

// checkBuildEnv is what the scripts of build 42's check see of Concourse's check build
// (newWorld's build, a check build's): named check, of no job.
var checkBuildEnv = []string{
	"ATC_EXTERNAL_URL=https://ci.example.com",
	"BUILD_ID=42",
	"BUILD_NAME=check",
	"BUILD_PIPELINE_ID=3",
	"BUILD_PIPELINE_NAME=app",
	"BUILD_TEAM_ID=1",
	"BUILD_TEAM_NAME=main",
	"BUILD_URL=https://ci.example.com/builds/42",
	"BUILD_URL_SHORT=https://ci.example.com/builds/42",
}

// TestCheckBuildEnv: a check build's scripts see Concourse's check build, named check,
// of no job (its own name and job still key its volume).
func TestCheckBuildEnv(t *testing.T) {
	w := newWorld(t)
	rec := w.recordingScript("check", `echo '[{"v":"1"}]'`)
	check := w.spec(runspec.ModeCheck, "c", "repo")
	check.Build.Check = true
	check.Check = &runspec.Check{Type: "git", Source: map[string]any{"uri": "x"}}
	w.checkRun(w.run(check), "c", runspec.Succeeded)
	if diff := cmp.Diff(checkBuildEnv, strings.Fields(readFile(t, rec+"/check.env"))); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
}

func TestCheckThenGetVersionFrom(t *testing.T) {
	w := newWorld(t)
	rec := w.recordingScript("check", `echo '[{"v":"1"},{"v":"2"}]'`)
	w.recordingScript("in", `echo '{"version":{"v":"2"}}'`)
	check := w.spec(runspec.ModeCheck, "c", "repo")
	check.Check = &runspec.Check{Type: "git", Source: map[string]any{"uri": "x"}}
	w.checkRun(w.run(check), "c", runspec.Succeeded)
	if got := readFile(t, rec+"/check.stdin"); got != `{"source":{"uri":"x"}}` {
		t.Errorf("check stdin = %s (no version when there is none)", got)
	}
	if w.result("c", "version") != `{"v":"2"}` {
		t.Errorf("check version = %s, want the last one", w.result("c", "version"))
	}
	get := w.spec(runspec.ModeGet, "g", "repo")
	get.Get = &runspec.Get{Type: "git", Source: map[string]any{"uri": "x"}, VersionFrom: "c"}
	w.checkRun(w.run(get), "g", runspec.Succeeded)
	if got := readFile(t, rec+"/in.stdin"); got != `{"source":{"uri":"x"},"version":{"v":"2"}}` {
		t.Errorf("in stdin = %s", got)
	}

	w.recordingScript("check", `echo '[]'`)
	check.PlanID, check.Check.FromVersion = "c2", map[string]string{"v": "2"}
	check.Paths.Results = w.resultsDir("c2")
	w.checkRun(w.run(check), "c2", runspec.Succeeded)
	if got := readFile(t, rec+"/check.stdin"); got != `{"source":{"uri":"x"},"version":{"v":"2"}}` {
		t.Errorf("check stdin = %s", got)
	}
	get.PlanID, get.Get.VersionFrom, get.Paths.Results = "g2", "c2", w.resultsDir("g2")
	r := w.run(get)
	w.checkRun(r, "g2", runspec.Errored)
	if !strings.Contains(r.said(), "no version to fetch") {
		t.Errorf("stderr = %q", r.stderr)
	}
}

// TestGetLatest: a get given no version runs check first, in its own run, and fetches
// the last version it printed; the check's stderr is in the get's log, its failure the
// get's, with its exit status.
func TestGetLatest(t *testing.T) {
	w := newWorld(t)
	rec := w.recordingScript("check", `echo '[{"v":"1"},{"v":"2"}]'`)
	w.recordingScript("in", `echo '{"version":{"v":"2"}}'`)
	get := w.spec(runspec.ModeGet, "g", "repo")
	get.Get = &runspec.Get{Type: "git", Source: map[string]any{"uri": "x"}, Latest: true}
	r := w.run(get)
	w.checkRun(r, "g", runspec.Succeeded)
	got := map[string]string{
		"check stdin": readFile(t, rec+"/check.stdin"),
		"in stdin":    readFile(t, rec+"/in.stdin"),
		"version":     w.result("g", "version"),
		"stderr":      r.stderr,
	}
	want := map[string]string{
		"check stdin": `{"source":{"uri":"x"}}`,
		"in stdin":    `{"source":{"uri":"x"},"version":{"v":"2"}}`,
		"version":     `{"v":"2"}`,
		"stderr":      "check is working\nin is working\n",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if env := readFile(t, rec+"/check.env"); !strings.Contains(env, "BUILD_NAME=7") {
		t.Errorf("the check ran without the build's environment:\n%s", env)
	}

	for _, tt := range []struct {
		name, check string
		want        runspec.Outcome
		exit, said  string
	}{
		{"check fails", `echo oops >&2; exit 3`, runspec.Failed, "3", "oops\n"},
		{"no version", `echo '[]'`, runspec.Errored, "", "no version to fetch: the check of repo found none"},
		{"bad JSON", `echo 'not json'`, runspec.Errored, "", "reading the versions the check of repo printed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			w.script("check", tt.check)
			rec := w.recordingScript("in", `echo '{"version":{"v":"2"}}'`)
			get := w.spec(runspec.ModeGet, "g", "repo")
			get.Get = &runspec.Get{Type: "git", Latest: true}
			r := w.run(get)
			w.checkRun(r, "g", tt.want)
			if !strings.Contains(r.said(), tt.said) {
				t.Errorf("said %q, want %q in it", r.said(), tt.said)
			}
			if exit := w.result("g", "exit-status"); exit != tt.exit {
				t.Errorf("exit-status = %q, want %q", exit, tt.exit)
			}
			if _, err := os.Stat(rec + "/in.stdin"); err == nil {
				t.Error("in ran after the check gave no version")
			}
		})
	}
}

func TestCheckPublishesEveryVersion(t *testing.T) {
	w := newWorld(t)
	w.script("check", `echo '[{"v":"1"},{"v":"2"},{"v":"3"}]'`)
	check := w.spec(runspec.ModeCheck, "c", "repo")
	check.Check = &runspec.Check{Type: "git", FromVersion: map[string]string{"v": "1"}}
	r := w.run(check)
	w.checkRun(r, "c", runspec.Succeeded)
	if got := w.result("c", runspec.ResultVersions); got != `[{"v":"1"},{"v":"2"},{"v":"3"}]` {
		t.Errorf("versions = %s, want all three, in order", got)
	}
	if got := w.result("c", runspec.ResultVersion); got != `{"v":"3"}` {
		t.Errorf("version = %s, want the last", got)
	}
	if r.stdout != "" || r.stderr != "" {
		t.Errorf("stdout %q, stderr %q: want nothing, every version in the results", r.stdout, r.stderr)
	}

	// More than Tekton's results carry: the newest in the results, every one in the
	// frame that is the log's last line.
	w.script("check", `echo checking >&2; i=0; printf '['; while [ $i -lt 1000 ]; do printf '{"v":"%04d"},' $i; i=$((i+1)); done; echo '{"v":"last"}]'`)
	check.PlanID, check.Paths.Results = "c2", w.resultsDir("c2")
	r = w.run(check)
	w.checkRun(r, "c2", runspec.Succeeded)
	var got []map[string]string
	if err := json.Unmarshal([]byte(w.result("c2", runspec.ResultVersions)), &got); err != nil {
		t.Fatal(err)
	}
	if n := len(got); n < 2 || n > 1000 || got[n-1]["v"] != "last" || got[n-2]["v"] != "0999" {
		t.Errorf("versions = %v, want the newest ones, ending with 0999 and last", got)
	}
	if w.result("c2", runspec.ResultVersion) != `{"v":"last"}` {
		t.Errorf("version = %s, want the last", w.result("c2", runspec.ResultVersion))
	}
	if r.stderr != "checking\n" || strings.Count(r.stdout, "\n") != 1 {
		t.Fatalf("stderr %q, stdout %.80q...: want the script's line, and the frame alone", r.stderr, r.stdout)
	}
	all, err := runspec.ParseVersionsFrame(r.stdout)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(all); n != 1001 || all[0]["v"] != "0000" || all[n-1]["v"] != "last" {
		t.Errorf("the frame has %d versions (%v ... %v), want all 1001, oldest first", n, all[0], all[n-1])
	}
}

func TestPut(t *testing.T) {
	tests := []struct {
		name      string
		inputs    string
		names     []string
		params    map[string]any
		createdBy bool
		hook      string
		want      runspec.Outcome
		mounted   string
		env       string
	}{
		{name: "detect from uninterpolated params", params: map[string]any{"file": "built/image.tar", "deep": []any{map[string]any{"x": "./repo/y"}}, "other": "nothing/here", "v": "((version))"}, want: runspec.Succeeded, mounted: "built repo"},
		{name: "detect: an absolute path names no artifact", inputs: runspec.InputsDetect, params: map[string]any{"a": "/unused/x", "b": "built", "v": "((version))"}, want: runspec.Succeeded, mounted: "built"},
		{name: "all", inputs: runspec.InputsAll, want: runspec.Succeeded, mounted: "built repo unused"},
		{name: "list", inputs: runspec.InputsList, names: []string{"repo"}, want: runspec.Succeeded, mounted: "repo"},
		{name: "list with a missing input", inputs: runspec.InputsList, names: []string{"repo", "nope"}, want: runspec.Errored},
		{name: "created by and hook status", inputs: runspec.InputsList, createdBy: true, hook: "failed", want: runspec.Succeeded, env: "BUILD_CREATED_BY=alice BUILD_STATUS=failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			for _, a := range []string{"built", "repo", "unused"} {
				w.artifact(a, map[string]string{"f": a})
			}
			w.secret("version", map[string]string{"value": "1.0"})
			rec := w.recordingScript("out", `ls "$1" | tr '\n' ' ' > `+w.root+`/mounted; echo changed > "$1/repo/f" 2>/dev/null; echo '{"version":{"n":"3"},"metadata":[]}'`)
			spec := w.spec(runspec.ModePut, "p", "img")
			spec.Build.CreatedBy = "alice"
			spec.HookStatus = tt.hook
			spec.Put = &runspec.Put{Type: "registry-image", Params: tt.params, Inputs: tt.inputs, InputNames: tt.names, ExposeBuildCreatedBy: tt.createdBy}
			r := w.run(spec)
			w.checkRun(r, "p", tt.want)
			if tt.want != runspec.Succeeded {
				return
			}
			if got := strings.Fields(readFile(t, w.root+"/mounted")); strings.Join(got, " ") != tt.mounted && tt.mounted != "" {
				t.Errorf("mounted %v, want %s", got, tt.mounted)
			}
			if w.result("p", "version") != `{"n":"3"}` {
				t.Errorf("version = %s", w.result("p", "version"))
			}
			if data, _ := os.ReadFile(filepath.Join(w.artifactDir(nil, "repo"), "f")); string(data) != "repo" {
				t.Errorf("a put's write reached the artifact: %q", data)
			}
			env := strings.Fields(readFile(t, rec+"/out.env"))
			var extra []string
			for _, kv := range env {
				if strings.HasPrefix(kv, "BUILD_CREATED_BY") || strings.HasPrefix(kv, "BUILD_STATUS") {
					extra = append(extra, kv)
				}
			}
			sort.Strings(extra)
			if strings.Join(extra, " ") != tt.env {
				t.Errorf("env %v, want %q", extra, tt.env)
			}
			if tt.params != nil {
				var req map[string]any
				json.Unmarshal([]byte(readFile(t, rec+"/out.stdin")), &req)
				if p := req["params"].(map[string]any); p["v"] != "1.0" {
					t.Errorf("params not interpolated: %v", p)
				}
			}
		})
	}
}

// TestGetResourceCache: a get of a version an earlier build of the job fetched (same
// type, image, source, params and version) finds it in the resource cache its volume
// carries, as Concourse's get finds a resource cache on its worker: the script does not
// run, Concourse's INFO line says so, and the artifact, version and metadata are the
// ones fetched. Other params, another version or another image fetch again; a one-off
// build keeps no cache; a build's verdict drops the caches it did not use.
func TestGetResourceCache(t *testing.T) {
	w := newWorld(t)
	w.recordingScript("in", `n=$(cat "$REC_COUNT" 2>/dev/null || echo 0); echo $((n+1)) > "$REC_COUNT"
echo "fetching $(sed -n 's/.*"ref":"\([^"]*\)".*/\1/p' `+w.root+`/rec/in.stdin)" >&2
echo fetched > "$1/file"
echo '{"version":{"ref":"abc"},"metadata":[{"name":"author","value":"me"}]}'`)
	count := filepath.Join(w.root, "count")
	t.Setenv("REC_COUNT", count)
	fetches := func() string { return strings.TrimSpace(readFile(t, count)) }
	get := func(planID string, params map[string]any, ref string, build string) run {
		t.Helper()
		spec := w.spec(runspec.ModeGet, planID, "repo")
		spec.Build.Name = build
		spec.Get = &runspec.Get{Type: "git", Source: map[string]any{"uri": "https://example.com/repo"}, Params: params, Version: map[string]string{"ref": ref}}
		r := w.run(spec)
		w.checkRun(r, planID, runspec.Succeeded)
		return r
	}
	get("1", nil, "abc", "7")
	if fetches() != "1" {
		t.Fatalf("fetched %s times, want once", fetches())
	}
	// The next build, on the volume the verdict left.
	verdict := func(build string) {
		t.Helper()
		spec := verdictSpec(w)
		spec.Build.Name = build
		w.recordOutcome("1", runspec.Succeeded)
		if r := w.run(spec); r.exit != 0 || r.failure != "" {
			t.Fatalf("verdict of build %s: exit %d, error %q\n%s", build, r.exit, r.failure, r.stderr)
		}
	}
	verdict("7")
	r := get("1", nil, "abc", "8")
	if fetches() != "1" || r.stderr != "\x1b[1;36mINFO: found existing resource cache\x1b[0m\n\n" {
		t.Errorf("build 8: fetched %s times, stderr %q; want the cache found, nothing fetched", fetches(), r.stderr)
	}
	if got := map[string]string{
		"version":  w.result("1", "version"),
		"metadata": w.result("1", "metadata"),
		"file":     readFile(t, filepath.Join(w.artifactDir(nil, "repo"), "file")),
	}; !cmp.Equal(got, map[string]string{"version": `{"ref":"abc"}`, "metadata": `[{"name":"author","value":"me"}]`, "file": "fetched\n"}) {
		t.Errorf("from the cache: %v", got)
	}
	// Other params, another version: fetched.
	get("2", map[string]any{"depth": json.Number("1")}, "abc", "8")
	get("3", nil, "def", "8")
	if fetches() != "3" {
		t.Errorf("fetched %s times, want 3: other params and another version are other caches", fetches())
	}
	// Another image of the type (a new version of it): fetched.
	spec8 := w.spec(runspec.ModeGet, "5", "repo")
	spec8.Build.Name = "8"
	spec8.Get = &runspec.Get{Type: "git", Source: map[string]any{"uri": "https://example.com/repo"}, Version: map[string]string{"ref": "abc"}}
	w.checkRun(w.startArgs(append(w.args(spec8), "--image=registry.example.com/git-resource:2"), nil).wait(t), "5", runspec.Succeeded)
	if fetches() != "4" {
		t.Errorf("fetched %s times, want 4: another image is another cache", fetches())
	}
	// Build 9 uses only the cache of version def: build 8's others go at its end.
	verdict("8")
	get("3", nil, "def", "9")
	verdict("9")
	entries, err := os.ReadDir(filepath.Join(w.volume, runspec.ResourceCachesDir))
	if err != nil || len(entries) != 1 {
		t.Errorf("resource caches after build 9: %v, %v; want the one it used", entries, err)
	}
	if fetches() != "4" {
		t.Errorf("build 9 fetched def again")
	}
	// A one-off build neither finds nor keeps one.
	spec := w.spec(runspec.ModeGet, "4", "repo")
	spec.Build = runspec.Build{ID: 50, Name: "50"}
	spec.Get = &runspec.Get{Type: "git", Source: map[string]any{"uri": "https://example.com/repo"}, Version: map[string]string{"ref": "def"}}
	w.checkRun(w.run(spec), "4", runspec.Succeeded)
	if fetches() != "5" {
		t.Errorf("the one-off build's get did not fetch")
	}
}
