package runner_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// credentialCase is a task reading a var in a param, V, that it echoes.
type credentialCase struct {
	name       string
	ref        string
	want       runspec.Outcome
	wantStdout string
	wantStderr string
}

// runCredentialCases runs each case in a world of its own that setup gives credentials.
func runCredentialCases(t *testing.T, tests []credentialCase, setup func(w *world, spec *runspec.Spec)) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			spec := w.taskSpec("1", "t", shConfig(`echo "$V"; echo "$V" | tr 'a-z' 'A-Z' >/dev/null`, map[string]any{"params": map[string]any{"V": tt.ref}}))
			setup(w, &spec)
			r := w.run(spec)
			w.checkRun(r, "1", tt.want)
			if r.stdout != tt.wantStdout || !strings.Contains(r.said(), tt.wantStderr) {
				t.Errorf("stdout %q stderr %q; want %q and %q", r.stdout, r.stderr, tt.wantStdout, tt.wantStderr)
			}
		})
	}
}

func TestCredentials(t *testing.T) {
	tests := []credentialCase{
		{"pipeline secret first", "((token))", runspec.Succeeded, "((redacted))\n", ""},
		{"team secret", "((shared))", runspec.Succeeded, "((redacted))\n", ""},
		{"map secret field", "((db.user))-((db.password))", runspec.Succeeded, "((redacted))-((redacted))\n", ""},
		{"var source", "((vault:api))", runspec.Succeeded, "((redacted))\n", ""},
		{"missing var errors", "((nope))", runspec.Errored, "", "undefined vars: nope\n"},
		{"missing field errors", "((db.nope))", runspec.Errored, "", "missing field 'nope' in var: db.nope\n"},
		{"unknown var source errors", "((other:x))", runspec.Errored, "", "unknown var source 'other'"},
		{"one-character values are not redacted", "((tiny))", runspec.Succeeded, "x\n", ""},
	}
	runCredentialCases(t, tests, func(w *world, spec *runspec.Spec) {
		w.kubeletSecret("app.token", map[string]string{"value": "pipeline-token"})
		w.secret("token", map[string]string{"value": "team-token"})
		w.secret("shared", map[string]string{"value": "shared-secret"})
		w.secret("db", map[string]string{"user": "admin", "password": "hunter22"})
		w.secret("tiny", map[string]string{"value": "x"})
		w.secret("vault/api", map[string]string{"value": "vault-api-key"})
		// Optional Secret volumes of Secrets that do not exist: empty directories.
		for _, empty := range []string{"app.shared", "app.nope", "nope"} {
			if err := os.MkdirAll(filepath.Join(w.creds, empty), 0o755); err != nil {
				w.t.Fatal(err)
			}
		}
		spec.VarSources = []string{"vault"}
	})
}

// TestSuppliedCredentials: with credentials supplied by the build's starter, a var is the
// JSON file of its whole reference (fields walked already, any var source, a number kept
// a number), never a Kubernetes Secret's directory, and is redacted.
func TestSuppliedCredentials(t *testing.T) {
	tests := []credentialCase{
		{"plain", "((token))", runspec.Succeeded, "((redacted))\n", ""},
		{"var source and field", "((dm:db.user))", runspec.Succeeded, "((redacted))\n", ""},
		{"a path with slashes", "((/concourse/main/key))", runspec.Succeeded, "((redacted))\n", ""},
		{"a number spliced", "port ((port))", runspec.Succeeded, "port 8080\n", ""},
		{"a map is not spliced", "x ((dm:db))", runspec.Errored, "", "cannot interpolate non-primitive value (map[string]interface {}) for var: dm:db"},
		{"not supplied: undefined, whatever the Secrets", "((mounted))", runspec.Errored, "", "undefined vars: mounted\n"},
	}
	runCredentialCases(t, tests, func(w *world, spec *runspec.Spec) {
		files := map[string]string{}
		for ref, value := range map[string]string{
			"token":                 `"supplied-token"`,
			"dm:db.user":            `"db-admin"`,
			"dm:db":                 `{"user":"db-admin"}`,
			`"/concourse/main/key"`: `"slashed-key"`,
			"port":                  `8080`,
		} {
			files[runspec.CredentialKey(ref)] = value
		}
		write(w.t, w.creds, files)
		// A Secret of the Kubernetes layout is not read.
		w.secret("mounted", map[string]string{"value": "from-a-secret"})
		spec.SuppliedCredentials = true
	})
}

func TestRedactionCoversEveryStream(t *testing.T) {
	w := newWorld(t)
	w.secret("app.key", map[string]string{"value": "multi\nline-secret\n"})
	w.script("in", `echo "got $(cat) in stderr" >&2; echo '{"version":{"v":"1"}}'`)
	get := w.spec(runspec.ModeGet, "1", "r")
	get.Get = &runspec.Get{Type: "x", Source: map[string]any{"k": "((key))"}, Version: map[string]string{}}
	r := w.run(get)
	w.checkRun(r, "1", runspec.Succeeded)
	if strings.Contains(r.stderr, "multi") || strings.Contains(r.stderr, "line-secret") || !strings.Contains(r.stderr, "((redacted))") {
		t.Errorf("stderr = %q", r.stderr)
	}
	// A secret split across writes is still redacted.
	task := w.taskSpec("2", "t", shConfig(`printf 'li'; sleep 0.01; printf 'ne-secret\n'; printf 'line-sec'`, map[string]any{"params": map[string]any{"K": "((key))"}}))
	r = w.run(task)
	// Unless the machine is so slow that the sleep outlasts the idle flush (then only the
	// beginning shows).
	if r.stdout != "((redacted))\nline-sec" && r.stdout != "li((redacted))\nline-sec" {
		t.Errorf("stdout = %q", r.stdout)
	}
}

// TestRevealSecrets: a build of a web node run with --disable-redact-secrets shows the
// credentials its steps use, and a load_var value without reveal, as they are.
func TestRevealSecrets(t *testing.T) {
	w := newWorld(t)
	w.secret("app.key", map[string]string{"value": "shown-secret"})
	w.artifact("vars", map[string]string{"v.txt": "shown-loaded\n"})
	lv := w.spec(runspec.ModeLoadVar, "1", "v")
	lv.Build.RevealSecrets = true
	lv.LoadVar = &runspec.LoadVar{File: "vars/v.txt"}
	w.checkRun(w.run(lv), "1", runspec.Succeeded)
	task := w.taskSpec("2", "t", shConfig(`echo "$K $V"`, map[string]any{"params": map[string]any{"K": "((key))", "V": "((.:v))"}}))
	task.Build.RevealSecrets = true
	r := w.run(task)
	w.checkRun(r, "2", runspec.Succeeded)
	if r.stdout != "shown-secret shown-loaded\n" {
		t.Errorf("stdout = %q, want the values as they are", r.stdout)
	}
}

func TestLoadVar(t *testing.T) {
	tests := []struct {
		name       string
		file       string
		content    string
		format     string
		reveal     bool
		ref        string
		want       runspec.Outcome
		wantStdout string
	}{
		{"trim by default, redacted", "v.txt", "  s3cr3t-value \n", "", false, "((.:v))", runspec.Succeeded, "((redacted))\n"},
		{"reveal", "v.txt", "shown-value\n", "", true, "((.:v))", runspec.Succeeded, "shown-value\n"},
		{"raw keeps whitespace", "v.txt", "a b\n", "raw", true, "[((.:v))]", runspec.Succeeded, "[a b\n]\n"},
		{"json from the extension", "v.json", `{"a":{"b":12345678901234567890}}`, "", true, "((.:v.a.b))", runspec.Succeeded, "12345678901234567890\n"},
		{"yaml from the extension", "v.yml", "a: {b: hello}\n", "", true, "((.:v.a.b))", runspec.Succeeded, "hello\n"},
		{"json with trailing data errors", "v.json", `{"a":1} {"b":2}`, "", true, "", runspec.Errored, ""},
		{"bad format errors", "v.txt", "x", "xml", true, "", runspec.Errored, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			w.artifact("vars", map[string]string{tt.file: tt.content})
			lv := w.spec(runspec.ModeLoadVar, "1", "v")
			lv.LoadVar = &runspec.LoadVar{File: "vars/" + tt.file, Format: tt.format, Reveal: tt.reveal}
			r := w.run(lv)
			w.checkRun(r, "1", tt.want)
			if tt.want != runspec.Succeeded {
				return
			}
			if r.stdout != "var v fetched.\nadded var v to build.\n" {
				t.Errorf("load_var stdout = %q", r.stdout)
			}
			task := w.taskSpec("2", "t", shConfig(`echo "$V"`, map[string]any{"params": map[string]any{"V": tt.ref}}))
			r = w.run(task)
			w.checkRun(r, "2", runspec.Succeeded)
			if r.stdout != tt.wantStdout {
				t.Errorf("task stdout = %q, want %q", r.stdout, tt.wantStdout)
			}
		})
	}
}

// TestLoadVarRedactsEveryLaterStep: Concourse tracks a load_var value without reveal for
// the rest of the build, so a later step's output hides it even when the step never
// refers to it.
func TestLoadVarRedactsEveryLaterStep(t *testing.T) {
	const (
		hidden = "token=((redacted)) shown=b4-the-token\n((redacted))\n"
		clear  = "token=s3cr3t-token shown=b4-the-token\ns3cr3t-token\n"
	)
	tests := []struct {
		name             string
		reveal           bool
		loadScope, scope []string
		want             string
	}{
		{"redacted", false, nil, nil, hidden},
		{"revealed", true, nil, nil, clear},
		{"redacted in a substep of the scope", false, nil, []string{"a/0"}, hidden},
		{"loaded in a substep, redacted in it", false, []string{"a/0"}, []string{"a/0"}, hidden},
		// Concourse's tracker of a substep's scope ends with it.
		{"loaded in another substep", false, []string{"a/1"}, []string{"a/0"}, clear},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			w.artifact("vars", map[string]string{"token": "s3cr3t-token\n", "shown": "b4-the-token"})
			for i, name := range []string{"token", "shown"} {
				lv := w.spec(runspec.ModeLoadVar, fmt.Sprint(i), name)
				lv.Scope = tt.loadScope
				lv.LoadVar = &runspec.LoadVar{File: "vars/" + name, Reveal: tt.reveal || name == "shown"}
				w.checkRun(w.run(lv), lv.PlanID, runspec.Succeeded)
			}
			// The task never refers to the vars; its output (stderr included) hides the
			// redacted one.
			task := w.taskSpec("2", "t", shConfig(`printf 'token=s3cr3t-'; echo 'token shown=b4-the-token'; echo s3cr3t-token >&2`, nil))
			task.Scope = tt.scope
			r := w.run(task)
			w.checkRun(r, "2", runspec.Succeeded)
			if diff := cmp.Diff(tt.want, r.stdout); diff != "" {
				t.Errorf("task output (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoadVarScopes(t *testing.T) {
	w := newWorld(t)
	w.artifact("vars", map[string]string{"v": "inner"})
	lv := w.spec(runspec.ModeLoadVar, "a/0/1", "v")
	lv.Scope = []string{"a/0"}
	lv.LoadVar = &runspec.LoadVar{File: "vars/v", Reveal: true}
	w.checkRun(w.run(lv), "a/0/1", runspec.Succeeded)
	after := w.taskSpec("2", "t", shConfig(`echo "$V"`, map[string]any{"params": map[string]any{"V": "((.:v))"}}))
	r := w.run(after)
	w.checkRun(r, "2", runspec.Errored)
	if !strings.Contains(r.said(), "undefined vars: .:v") {
		t.Errorf("stderr = %q", r.stderr)
	}
}

func TestArtifactFileErrors(t *testing.T) {
	w := newWorld(t)
	for _, tt := range []struct{ file, want string }{
		{"novars", "config path 'novars' does not specify where the file lives"},
		{"ghost/v", "unknown artifact source: 'ghost' in file path 'ghost/v'"},
	} {
		lv := w.spec(runspec.ModeLoadVar, "1", "v")
		lv.LoadVar = &runspec.LoadVar{File: tt.file}
		r := w.run(lv)
		w.checkRun(r, "1", runspec.Errored)
		if !strings.Contains(r.said(), tt.want) {
			t.Errorf("stderr = %q, want %q", r.stderr, tt.want)
		}
	}
}

const taskFile = `
platform: linux
image_resource:
  type: registry-image
  source: {repository: ((repo)), tag: "1.36"}
params: {GREETING: ((greeting))}
run: {path: /bin/sh, args: [-c, 'echo "$GREETING $EXTRA"']}
`

func TestResolveThenTask(t *testing.T) {
	w := newWorld(t)
	w.artifact("ci", map[string]string{"task.yml": taskFile})
	w.secret("greeting", map[string]string{"value": "hello-secret"})
	res := w.spec(runspec.ModeResolve, "r", "")
	res.Resolve = &runspec.Resolve{TaskPlanID: "t", File: "ci/task.yml", Vars: map[string]any{"repo": "busybox"}}
	r := w.run(res)
	w.checkRun(r, "r", runspec.Succeeded)
	if w.result("r", "image") != "busybox:1.36" {
		t.Errorf("image = %q", w.result("r", "image"))
	}
	if cfg := w.result("r", "config"); !strings.Contains(cfg, "((greeting))") || strings.Contains(cfg, "hello-secret") {
		t.Errorf("config result = %s: want the build vars left out", cfg)
	}
	// The file changes after resolve: the task uses what resolve recorded.
	w.artifact("ci", map[string]string{"task.yml": "garbage: ["})
	task := w.spec(runspec.ModeTask, "t", "t")
	task.Task = &runspec.Task{File: "ci/task.yml", Params: map[string]any{"EXTRA": "x"}}
	r = w.run(task)
	w.checkRun(r, "t", runspec.Succeeded)
	if r.stdout != "[WARNING] EXTRA was defined in pipeline but missing from task file\n((redacted)) x\n" {
		t.Errorf("stdout = %q, want the warning, then the task's output", r.stdout)
	}
}

// TestResolveShowsTheRun: the config a resolve step publishes for the task's events has
// the run's path and args interpolated, the credentials in them redacted (unless the
// build reveals them), as Concourse 8 shows them; the rest stays as the file has it.
func TestResolveShowsTheRun(t *testing.T) {
	const file = `
platform: linux
image_resource: {type: registry-image, source: {repository: busybox}}
params: {GREETING: ((greeting))}
run: {path: /bin/((shell)), args: [-c, 'echo ((greeting)) from ((shell))']}
`
	for _, tt := range []struct {
		reveal bool
		want   string
	}{
		{false, `"args":["-c","echo ((redacted)) from sh"],"path":"/bin/sh"`},
		{true, `"args":["-c","echo hello-secret from sh"],"path":"/bin/sh"`},
	} {
		w := newWorld(t)
		w.artifact("ci", map[string]string{"task.yml": file})
		w.secret("greeting", map[string]string{"value": "hello-secret"})
		res := w.spec(runspec.ModeResolve, "r", "")
		res.Build.RevealSecrets = tt.reveal
		res.Resolve = &runspec.Resolve{TaskPlanID: "t", File: "ci/task.yml", Vars: map[string]any{"shell": "sh"}}
		w.checkRun(w.run(res), "r", runspec.Succeeded)
		cfg := w.result("r", "config")
		if !strings.Contains(cfg, tt.want) {
			t.Errorf("reveal %t: config result = %s, want the run %s", tt.reveal, cfg, tt.want)
		}
		if !strings.Contains(cfg, `"GREETING":"((greeting))"`) {
			t.Errorf("reveal %t: config result = %s, want the params as the file has them", tt.reveal, cfg)
		}
	}
}

func TestResolveImages(t *testing.T) {
	tests := []struct {
		name, config, want string
		outcome            runspec.Outcome
	}{
		{"digest", "platform: linux\nimage_resource: {type: registry-image, source: {repository: alpine}, version: {digest: 'sha256:abc'}}\nrun: {path: x}\n", "alpine@sha256:abc", runspec.Succeeded},
		{"default tag", "platform: linux\nimage_resource: {type: docker-image, source: {repository: ubuntu}}\nrun: {path: x}\n", "ubuntu:latest", runspec.Succeeded},
		{"rootfs_uri", "platform: linux\nrootfs_uri: docker:///busybox#1.36\nrun: {path: x}\n", "busybox:1.36", runspec.Succeeded},
		{"other type", "platform: linux\nimage_resource: {type: s3, source: {bucket: b}}\nrun: {path: x}\n", "", runspec.Errored},
		{"invalid config", "platform: linux\nouputs: []\nrun: {path: x}\n", "", runspec.Errored},
		{"missing build var", "platform: linux\nrootfs_uri: docker:///((img))\nrun: {path: x}\n", "", runspec.Errored},
		{"no image", "platform: linux\nrun: {path: x}\n", "", runspec.Errored},
		// The step's image: runs an artifact: the config needs no image, and the one it
		// has is not the task's.
		{"image artifact", "platform: linux\nrun: {path: x}\n", "", runspec.Succeeded},
		{"image artifact over image_resource", "platform: linux\nimage_resource: {type: s3, source: {bucket: b}}\nrun: {path: x}\n", "", runspec.Succeeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			w.artifact("ci", map[string]string{"task.yml": tt.config})
			res := w.spec(runspec.ModeResolve, "r", "")
			res.Resolve = &runspec.Resolve{TaskPlanID: "t", File: "ci/task.yml", ImageArtifact: strings.HasPrefix(tt.name, "image artifact")}
			w.checkRun(w.run(res), "r", tt.outcome)
			if w.result("r", "image") != tt.want {
				t.Errorf("image = %q, want %q", w.result("r", "image"), tt.want)
			}
		})
	}
}

func TestAcrossVars(t *testing.T) {
	w := newWorld(t)
	w.artifact("vars", map[string]string{"v": "outer", "w": "inner"})
	outer := w.spec(runspec.ModeLoadVar, "1", "x")
	outer.LoadVar = &runspec.LoadVar{File: "vars/v", Reveal: true}
	w.checkRun(w.run(outer), "1", runspec.Succeeded)

	echo := func(planID string, scope []string, across map[string]any) string {
		task := w.taskSpec(planID, "t", shConfig(`echo "((.:x)) ((.:y))"`, nil))
		task.Scope, task.AcrossVars = scope, across
		r := w.run(task)
		w.checkRun(r, planID, runspec.Succeeded)
		return r.stdout
	}
	if got := echo("a/0/1", []string{"a/0"}, map[string]any{"x": "across-x", "y": "across-y"}); got != "across-x across-y\n" {
		t.Errorf("across vars shadow outer local vars: got %q", got)
	}
	inner := w.spec(runspec.ModeLoadVar, "a/1/1", "x")
	inner.Scope = []string{"a/1"}
	inner.LoadVar = &runspec.LoadVar{File: "vars/w", Reveal: true}
	w.checkRun(w.run(inner), "a/1/1", runspec.Succeeded)
	if got := echo("a/1/2", []string{"a/1"}, map[string]any{"x": "across-x", "y": "across-y"}); got != "inner across-y\n" {
		t.Errorf("a load_var in the substep shadows its across var: got %q", got)
	}
}

// TestResolveEmbeddedConfig resolves the image of a `config:` task whose image_resource
// takes a build var (the translator cannot know the image before the build runs).
func TestResolveEmbeddedConfig(t *testing.T) {
	w := newWorld(t)
	w.secret("registry", map[string]string{"value": "registry.example"})
	res := w.spec(runspec.ModeResolve, "r", "")
	res.Resolve = &runspec.Resolve{TaskPlanID: "t", Config: map[string]any{
		"platform":       "linux",
		"image_resource": map[string]any{"type": "registry-image", "source": map[string]any{"repository": "((registry))/app", "tag": "2"}},
		"run":            map[string]any{"path": "true"},
	}}
	r := w.run(res)
	w.checkRun(r, "r", runspec.Succeeded)
	if got := w.result("r", "image"); got != "registry.example/app:2" {
		t.Errorf("image = %q", got)
	}
}

// kubeletSecret writes a Secret the way the kubelet mounts one: the keys in a timestamped
// directory, a ..data link to it, and a link per key through ..data.
func (w *world) kubeletSecret(name string, keys map[string]string) {
	w.t.Helper()
	dir := filepath.Join(w.creds, name)
	write(w.t, filepath.Join(dir, "..2026_11_21_00_00_00.000000001"), keys)
	if err := os.Symlink("..2026_11_21_00_00_00.000000001", filepath.Join(dir, "..data")); err != nil {
		w.t.Fatal(err)
	}
	for k := range keys {
		if err := os.Symlink(filepath.Join("..data", k), filepath.Join(dir, k)); err != nil {
			w.t.Fatal(err)
		}
	}
}

// TestResolveListsStartersVars: with supplied credentials, the vars of a task file that
// the build's starter did not supply are listed in the resolve step's `vars` result (names
// only), as long as the image does not need them; the task then reads their values from
// its vars Secret, redacted, and one still missing there is undefined, as Concourse says.
func TestResolveListsStartersVars(t *testing.T) {
	const file = `platform: linux
rootfs_uri: docker:///busybox
params: {TOKEN: ((token)), FROM_STEP: ((from_step)), KNOWN: ((known))}
run: {path: /bin/sh, args: [-c, 'echo "$TOKEN ((vs:text)) $FROM_STEP $KNOWN"']}
`
	w := newWorld(t)
	w.artifact("ci", map[string]string{"task.yml": file, "image.yml": "platform: linux\nrootfs_uri: docker:///((img))\nrun: {path: x}\n"})
	write(t, w.creds, map[string]string{runspec.CredentialKey("known"): `"known-value"`})
	res := w.spec(runspec.ModeResolve, "r", "")
	res.SuppliedCredentials = true
	res.Resolve = &runspec.Resolve{TaskPlanID: "t", File: "ci/task.yml", Vars: map[string]any{"from_step": "step-var"}}
	w.checkRun(w.run(res), "r", runspec.Succeeded)
	if got := w.result("r", runspec.ResultVars); got != `["token","vs:text"]` {
		t.Errorf("vars result %s", got)
	}
	if w.result("r", "image") != "busybox" {
		t.Errorf("image = %q", w.result("r", "image"))
	}

	task := w.spec(runspec.ModeTask, "t", "t")
	task.SuppliedCredentials = true
	task.Task = &runspec.Task{File: "ci/task.yml"}
	r := w.run(task)
	w.checkRun(r, "t", runspec.Errored)
	if w.result("t", runspec.ResultError) != "undefined vars: token, vs:text" {
		t.Errorf("without the vars Secret: error %q", w.result("t", runspec.ResultError))
	}
	write(t, w.taskVars, map[string]string{runspec.CredentialKey("token"): `"tok-value"`, runspec.CredentialKey("vs:text"): `"text-value"`})
	r = w.run(task)
	w.checkRun(r, "t", runspec.Succeeded)
	if r.stdout != "((redacted)) ((redacted)) step-var ((redacted))\n" {
		t.Errorf("stdout = %q", r.stdout)
	}

	// A var the image needs cannot wait for the starter.
	img := w.spec(runspec.ModeResolve, "i", "")
	img.SuppliedCredentials = true
	img.Resolve = &runspec.Resolve{TaskPlanID: "u", File: "ci/image.yml"}
	r = w.run(img)
	w.checkRun(r, "i", runspec.Errored)
	if w.result("i", runspec.ResultError) != "undefined vars: img" || w.result("i", runspec.ResultVars) != "" {
		t.Errorf("image var: error %q, vars %q", w.result("i", runspec.ResultError), w.result("i", runspec.ResultVars))
	}

	// Without supplied credentials nothing is listed: a missing var is an error at once.
	plain := w.spec(runspec.ModeResolve, "p", "")
	plain.Resolve = &runspec.Resolve{TaskPlanID: "v", File: "ci/task.yml", Vars: map[string]any{"from_step": "x"}}
	r = w.run(plain)
	w.checkRun(r, "p", runspec.Errored)
	if w.result("p", runspec.ResultError) != "unknown var source 'vs' in ((vs:text))" || w.result("p", runspec.ResultVars) != "" {
		t.Errorf("not supplied: error %q, vars %q", w.result("p", runspec.ResultError), w.result("p", runspec.ResultVars))
	}
}

// TestResolveGivesImagePull: with supplied credentials, a task file whose registry image
// gives its credentials as ((vars)) resolves: the vars its starter must look up are
// listed, and the `pull` result carries the credentials as the file writes them, with
// the repository resolved, for the starter to add to the build's Secret of image pull
// credentials. A password written out is not carried (it would be in the TaskRun's
// status), and the step's log says the image is pulled without it; a repository that
// needs the starter's vars still cannot wait for it.
func TestResolveGivesImagePull(t *testing.T) {
	const private = `platform: linux
image_resource:
  type: registry-image
  source: {repository: ((registry))/app, tag: "1.0", username: ((registry-user)), password: ((registry-password))}
run: {path: /bin/true}
`
	w := newWorld(t)
	w.artifact("ci", map[string]string{
		"private.yml":      private,
		"literal.yml":      "platform: linux\nimage_resource: {type: registry-image, source: {repository: r.example/app, username: robot, password: written-out}}\nrun: {path: x}\n",
		"unknown-repo.yml": "platform: linux\nimage_resource: {type: registry-image, source: {repository: ((repo)), password: ((p))}}\nrun: {path: x}\n",
		"public.yml":       "platform: linux\nimage_resource: {type: registry-image, source: {repository: busybox}}\nrun: {path: x}\n",
	})
	write(t, w.creds, map[string]string{runspec.CredentialKey("registry"): `"r.example:5000"`})
	resolve := func(id, file string) run {
		spec := w.spec(runspec.ModeResolve, id, "")
		spec.SuppliedCredentials = true
		spec.Resolve = &runspec.Resolve{TaskPlanID: id + "-task", File: "ci/" + file}
		return w.run(spec)
	}

	r := resolve("a", "private.yml")
	w.checkRun(r, "a", runspec.Succeeded)
	if got := w.result("a", runspec.ResultVars); got != `["registry-password","registry-user"]` {
		t.Errorf("vars result %s", got)
	}
	if got := w.result("a", runspec.ResultImage); got != "r.example:5000/app:1.0" {
		t.Errorf("image result %s", got)
	}
	if got, want := w.result("a", runspec.ResultPull), `{"repository":"r.example:5000/app","username":"((registry-user))","password":"((registry-password))"}`; got != want {
		t.Errorf("pull result %s, want %s", got, want)
	}

	r = resolve("b", "literal.yml")
	w.checkRun(r, "b", runspec.Succeeded)
	if got := w.result("b", runspec.ResultPull); got != "" {
		t.Errorf("a written-out password was carried: %s", got)
	}
	if !strings.Contains(r.stderr, "pulled without the credentials") {
		t.Errorf("no warning: stderr %q", r.stderr)
	}

	r = resolve("c", "unknown-repo.yml")
	w.checkRun(r, "c", runspec.Errored)
	if got := w.result("c", runspec.ResultError); got != "undefined vars: p, repo" {
		t.Errorf("repository var: error %q", got)
	}

	r = resolve("d", "public.yml")
	w.checkRun(r, "d", runspec.Succeeded)
	if got := w.result("d", runspec.ResultPull); got != "" {
		t.Errorf("pull result of a public image: %s", got)
	}
}
