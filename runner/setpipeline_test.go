package runner_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/concourse-tekton/concourse-tekton/runspec"
)

const childPipeline = `
resources:
- name: repo
  type: git
  source: {uri: ((uri)), branch: ((branch)), tag: ((tag))}
jobs:
- name: ((job))
  plan:
  - get: repo
  - task: t
    config:
      platform: linux
      rootfs_uri: docker:///busybox
      run: {path: ((later))}
extra: {anchor: true}
`

// frame reads the only line of a set_pipeline step's stdout: the frame.
func frame(t *testing.T, stdout string) runspec.PipelineToSet {
	t.Helper()
	if strings.Count(stdout, "\n") != 1 || !runspec.IsPipelineFrame(stdout) {
		t.Fatalf("stdout = %q: want one frame and nothing else", stdout)
	}
	p, err := runspec.ParsePipelineFrame(stdout)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSetPipeline(t *testing.T) {
	w := newWorld(t)
	w.artifact("ci", map[string]string{
		"pipeline.yml": childPipeline,
		"vars.yml":     "uri: from-file\nbranch: file-branch\njob: file-job\ntag: first-file\n",
		"more.yml":     "tag: second-file\n",
	})
	sp := w.spec(runspec.ModeSetPipeline, "1", "child")
	sp.SetPipeline = &runspec.SetPipeline{File: "ci/pipeline.yml", Team: "main", Vars: map[string]any{"branch": "from-vars"},
		VarFiles: []string{"ci/vars.yml", "ci/more.yml"}, InstanceVars: map[string]any{"job": "instance-job", "uri": "instance-uri"}}
	r := w.run(sp)
	w.checkRun(r, "1", runspec.Succeeded)
	p := frame(t, r.stdout)
	if p.Team != "main" || p.Pipeline != "child" {
		t.Errorf("team %q pipeline %q", p.Team, p.Pipeline)
	}
	if diff := cmp.Diff(map[string]any{"job": "instance-job", "uri": "instance-uri"}, p.InstanceVars); diff != "" {
		t.Errorf("instance vars (-want +got):\n%s", diff)
	}
	var got struct {
		Resources []struct{ Source map[string]any }
		Jobs      []struct{ Name string }
		Extra     any
	}
	if err := json.Unmarshal(p.Config, &got); err != nil {
		t.Fatal(err)
	}
	// Concourse v8's precedence: instance vars, then vars, then the var files in order.
	if diff := cmp.Diff(map[string]any{"uri": "instance-uri", "branch": "from-vars", "tag": "first-file"}, got.Resources[0].Source); diff != "" {
		t.Errorf("source (-want +got):\n%s", diff)
	}
	if got.Jobs[0].Name != "instance-job" {
		t.Errorf("job %q: want the instance var's over the var file's", got.Jobs[0].Name)
	}
	if got.Extra != nil {
		t.Error("an unknown top-level key was kept")
	}
	if !strings.Contains(string(p.Config), "((later))") {
		t.Error("a var left for the child pipeline's run time was resolved")
	}
	if len(p.Warnings) != 1 || !strings.HasPrefix(p.Warnings[0], "WARNING: ") || !strings.Contains(p.Warnings[0], "extra") {
		t.Errorf("warnings %q: want the unknown key's", p.Warnings)
	}
	if r.stderr != "" {
		t.Errorf("stderr = %q: the warnings belong in the frame", r.stderr)
	}
}

func TestSetPipelineSelf(t *testing.T) {
	w := newWorld(t)
	w.artifact("ci", map[string]string{"p.yml": "jobs: [{name: j, plan: [{task: t, config: {platform: linux, run: {path: ((later))}}}]}]\n"})
	sp := w.spec(runspec.ModeSetPipeline, "1", "self")
	sp.Build.PipelineName = "app"
	sp.Build.InstanceVars = map[string]any{"branch": "main"}
	sp.SetPipeline = &runspec.SetPipeline{File: "ci/p.yml", Team: "other"}
	r := w.run(sp)
	w.checkRun(r, "1", runspec.Succeeded)
	p := frame(t, r.stdout)
	if p.Pipeline != "app" || p.Team != "" || p.InstanceVars["branch"] != "main" {
		t.Errorf("got %+v: want the build's pipeline and team", p)
	}
}

func TestSetPipelineInvalid(t *testing.T) {
	w := newWorld(t)
	w.artifact("bad", map[string]string{"p.yml": "jobs: []\nresources: [{name: r}]\n"})
	bad := w.spec(runspec.ModeSetPipeline, "2", "child")
	bad.SetPipeline = &runspec.SetPipeline{File: "bad/p.yml"}
	r := w.run(bad)
	w.checkRun(r, "2", runspec.Failed)
	if r.stderr == "" {
		t.Error("an invalid pipeline said nothing")
	}
	if runspec.IsPipelineFrame(r.stdout) || strings.Contains(r.stdout, "concourse-tekton;") {
		t.Errorf("stdout = %q: an invalid pipeline is handed to no one", r.stdout)
	}
}

func TestSetPipelineFrameNotRedacted(t *testing.T) {
	w := newWorld(t)
	w.secret("token", map[string]string{"value": "s3cr3t-value"})
	w.artifact("ci", map[string]string{"p.yml": "jobs: [{name: ((name)), plan: [{task: t, config: {platform: linux, run: {path: x}}}]}]\n"})
	sp := w.spec(runspec.ModeSetPipeline, "1", "child")
	sp.SetPipeline = &runspec.SetPipeline{File: "ci/p.yml", Vars: map[string]any{"name": "((token))"}}
	r := w.run(sp)
	w.checkRun(r, "1", runspec.Succeeded)
	p := frame(t, r.stdout)
	// Concourse sets the pipeline with the step's vars evaluated, credentials included.
	if !strings.Contains(string(p.Config), `"name":"s3cr3t-value"`) {
		t.Errorf("config %s", p.Config)
	}
}

// TestSetPipelineRefused: what Concourse v8 refuses before it validates the pipeline, with
// its messages on stderr; the step fails and hands nothing over.
func TestSetPipelineRefused(t *testing.T) {
	for _, tt := range []struct {
		name, pipeline, team, file string
		stderr                     string
	}{
		{name: "a pipeline name with a slash", pipeline: "a/b", file: "ok.yml", stderr: "ERROR: pipeline name cannot contain '/'\n"},
		{name: "a team name with a slash", pipeline: "child", team: "x/y", file: "ok.yml", stderr: "ERROR: team name cannot contain '/'\n"},
		{
			// yaml.v3 reads the file before any var is interpolated: the missing var is
			// never reached.
			name: "a duplicate key", pipeline: "child", file: "dup.yml",
			stderr: "error parsing pipeline:\nyaml: unmarshal errors:\n  line 2: mapping key \"jobs\" already defined at line 1",
		},
		{name: "a syntax error", pipeline: "child", file: "syntax.yml", stderr: "error parsing pipeline:\nyaml: line 1: did not find expected node content"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			w.artifact("ci", map[string]string{
				"ok.yml":     "jobs: [{name: j, plan: [{task: t, config: {platform: linux, run: {path: x}}}]}]\n",
				"dup.yml":    "jobs: [{name: ((missing)), plan: []}]\njobs: []\n",
				"syntax.yml": "jobs: [\n",
			})
			sp := w.spec(runspec.ModeSetPipeline, "1", tt.pipeline)
			sp.SetPipeline = &runspec.SetPipeline{File: "ci/" + tt.file, Team: tt.team}
			r := w.run(sp)
			w.checkRun(r, "1", runspec.Failed)
			if r.stderr != tt.stderr {
				t.Errorf("stderr = %q, want %q", r.stderr, tt.stderr)
			}
			if runspec.IsPipelineFrame(r.stdout) {
				t.Errorf("stdout = %q: a refused pipeline is handed to no one", r.stdout)
			}
		})
	}
}
