package translate_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	"knative.dev/pkg/apis"

	"github.com/google/go-cmp/cmp"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/planner"
	"github.com/concourse-tekton/concourse-tekton/internal/golden"
	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/translate"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// validTasks are the Tasks, as JSON, that Tekton's validation passed: most builds share
// their Tasks byte for byte (the step's, the join's), and the corpus tests validate
// each once, since the same bytes validate the same.
var validTasks sync.Map

// validate runs Tekton's own defaulting and validation on every object, as the webhook of a
// stock install (default feature flags) would.
func validate(t testing.TB, r *translate.Result) {
	t.Helper()
	ctx := context.Background()
	for _, task := range r.Tasks {
		key, err := json.Marshal(task)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := validTasks.Load(string(key)); ok {
			continue
		}
		task = task.DeepCopy()
		task.SetDefaults(ctx)
		if err := task.Validate(apis.WithinCreate(ctx)); err != nil {
			t.Errorf("Task %s: %v", task.Name, err)
			continue
		}
		validTasks.Store(string(key), true)
	}
	p := r.Pipeline.DeepCopy()
	p.SetDefaults(ctx)
	if err := p.Validate(apis.WithinCreate(ctx)); err != nil {
		t.Errorf("Pipeline %s: %v", p.Name, err)
	}
	// Tekton orders a task after those whose results it reads: runAfter says only the rest.
	for _, pt := range r.Pipeline.Spec.Tasks {
		for _, ref := range v1.PipelineTaskResultRefs(&pt) {
			if slices.Contains(pt.RunAfter, ref.PipelineTask) {
				t.Errorf("Pipeline %s: task %s runs after %s, whose result it reads", p.Name, pt.Name, ref.PipelineTask)
			}
		}
	}
	pr := r.PipelineRun.DeepCopy()
	pr.SetDefaults(ctx)
	if err := pr.Validate(apis.WithinCreate(ctx)); err != nil {
		t.Errorf("PipelineRun %s: %v", pr.Name, err)
	}
	var _ *v1.Task = r.Tasks[0]
	for _, task := range r.Tasks {
		if task.Annotations["concourse-ci.org/privileged"] == "true" {
			continue // privileged because the pipeline says so
		}
		if errs := podSecurity(task, psaapi.LevelBaseline); len(errs) > 0 {
			t.Errorf("Task %s fails Pod Security baseline: %v", task.Name, errs)
		}
	}
}

// podSecurity evaluates the pod a Task's steps make with Kubernetes' own Pod Security
// Admission checks at a level, and returns what it forbids.
func podSecurity(task *v1.Task, level psaapi.Level) []string {
	spec := translate.PodSpec(task, true)
	var forbidden []string
	for _, r := range psaEvaluator.EvaluatePod(psaapi.LevelVersion{Level: level, Version: psaapi.LatestVersion()}, &metav1.ObjectMeta{}, &spec) {
		if !r.Allowed {
			forbidden = append(forbidden, r.ForbiddenReason+": "+r.ForbiddenDetail)
		}
	}
	return forbidden
}

var psaEvaluator = func() policy.Evaluator {
	// The checks of this version of Kubernetes, at the latest policy version.
	e, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		panic(err)
	}
	return e
}()

func translateFile(t testing.TB, file, job string, opts translate.Options) (*translate.Result, error) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	p, diags := concourse.ParsePipeline(filepath.Base(file), data, nil)
	if err := diags.Err(); err != nil {
		t.Fatal(err)
	}
	plan, err := planner.PlanJob(&p.Config, job, planner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	opts.Job = job
	if opts.Pipeline == "" {
		opts.Pipeline = "test"
	}
	for _, vs := range p.Config.VarSources {
		opts.VarSources = append(opts.VarSources, vs.Name)
	}
	return translate.Translate(plan, opts)
}

// TestGolden compiles job "test" of testdata/<case>/pipeline.yml and compares the objects
// with testdata/<case>/expected.yaml. `go test ./translate -update` rewrites them.
func TestGolden(t *testing.T) {
	dirs, err := filepath.Glob("testdata/*/pipeline.yml")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	for _, file := range dirs {
		dir := filepath.Dir(file)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			opts := goldenOptions(t, dir)
			r, err := translateFile(t, file, "test", opts)
			if err != nil {
				t.Fatal(err)
			}
			validate(t, r)
			got, err := translate.MarshalYAML(r.Objects())
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join(dir, "expected.yaml"), got, *update)
			again, _ := translateFile(t, file, "test", goldenOptions(t, dir))
			againYAML, _ := translate.MarshalYAML(again.Objects())
			if string(againYAML) != string(got) {
				t.Errorf("the same input gave different bytes")
			}
		})
	}
}

// goldenOptions are the options of a golden case: a node selector for the tag gpu, and
// what the case's options.json (translate.Options as JSON) sets.
func goldenOptions(t *testing.T, dir string) translate.Options {
	t.Helper()
	opts := translate.Options{NodeSelectors: map[string]map[string]string{"gpu": {"example.com/gpu": "true"}}}
	data, err := os.ReadFile(filepath.Join(dir, "options.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return opts
	}
	if err == nil {
		err = json.Unmarshal(data, &opts)
	}
	if err != nil {
		t.Fatal(err)
	}
	return opts
}

// A step of a base type no image is known for compiles, as Concourse accepts the
// pipeline, with a warning at its node; the step runs nothing but the runner, which ends
// it errored as Concourse's would on workers without the type.
func TestUnknownBaseType(t *testing.T) {
	file := filepath.Join(t.TempDir(), "p.yml")
	yaml := "resources: [{name: r, type: weird}]\njobs:\n- name: test\n  plan: [{get: r}, {put: r}]\n"
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := translateFile(t, file, "test", translate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	validate(t, r)
	var warnings []string
	for _, w := range r.Warnings {
		warnings = append(warnings, w.Error())
	}
	want := `no image is known for the resource type "weird": the step errors when the build runs (base resource type not found: weird), as on workers without the type; give its image with --resource-image weird=IMAGE`
	if len(warnings) != 3 || warnings[0] != `step "r" (plan 1): `+want || warnings[1] != `step "r" (plan 2): `+want || warnings[2] != `step "r" (plan 3): `+want {
		t.Errorf("warnings %q, want the get's, the put's and its get's: %s", warnings, want)
	}
	var steps []string
	for _, pt := range r.Pipeline.Spec.Tasks {
		var spec runspec.Spec
		var image string
		for _, p := range pt.Params {
			switch p.Name {
			case runspec.ParamSpec:
				spec, err = runspec.Decode(p.Value.StringVal)
				if err != nil {
					t.Fatal(err)
				}
			case runspec.ParamImage:
				image = p.Value.StringVal
			}
		}
		steps = append(steps, fmt.Sprintf("%s %s in %s: %s", pt.Name, spec.Mode, image, spec.Error))
	}
	wantSteps := []string{
		"get-r get in " + translate.DefaultRunnerImage + ": base resource type not found: weird",
		"put-r put in " + translate.DefaultRunnerImage + ": base resource type not found: weird",
		"get-r-2 get in " + translate.DefaultRunnerImage + ": base resource type not found: weird",
	}
	if strings.Join(steps, "\n") != strings.Join(wantSteps, "\n") {
		t.Errorf("steps:\n%s\nwant:\n%s", strings.Join(steps, "\n"), strings.Join(wantSteps, "\n"))
	}
}

func TestUnsupported(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{
			name: "an image that takes a run-time across var",
			yaml: "jobs:\n- name: test\n  plan:\n  - across: [{var: v, values: ((vs))}]\n    task: t\n    config: {platform: linux, rootfs_uri: 'docker:///((.:v))', run: {path: x}}\n",
			want: `step "t" (plan 1): the image of task "t" depends on across var "v", whose values are known only at run time`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "p.yml")
			if err := os.WriteFile(file, []byte(tc.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := translateFile(t, file, "test", translate.Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// TestPipelineSameForEveryBuild: two builds of one version of a job compile the same
// Pipeline (the build's name is the run's build-name param), so that builds started at
// once never race to rewrite it, nor run with one another's name; their runs give their
// names. A build name that could break out of the specs' JSON is refused.
func TestPipelineSameForEveryBuild(t *testing.T) {
	var pipelines []*v1.Pipeline
	for _, build := range []string{"1", "2.1"} {
		r, err := translateFile(t, filepath.Join("testdata", "hooks", "pipeline.yml"), "test", translate.Options{Build: build})
		if err != nil {
			t.Fatal(err)
		}
		validate(t, r)
		if p := r.PipelineRun.Spec.Params; len(p) != 1 || p[0].Name != "build-name" || p[0].Value.StringVal != build {
			t.Errorf("build %s: the run's params %+v; want build-name %s", build, p, build)
		}
		pipelines = append(pipelines, r.Pipeline)
	}
	if diff := cmp.Diff(pipelines[0], pipelines[1]); diff != "" {
		t.Errorf("the Pipelines of builds 1 and 2.1 differ (-1 +2.1):\n%s", diff)
	}
	for _, bad := range []string{`1"`, `a\b`, "$(params.x)"} {
		if _, err := translateFile(t, filepath.Join("testdata", "hooks", "pipeline.yml"), "test", translate.Options{Build: bad}); err == nil || !strings.Contains(err.Error(), "invalid build name") {
			t.Errorf("build name %q: %v, want it refused", bad, err)
		}
	}
}

// TestBuildContext: the build's context (team, pipeline, instance vars, job, external
// URL, the ATC's IDs) is on the Pipeline and its run, once, and no step's spec repeats
// it; the run's alone has what is the build's own (its ID, its creator), so that every
// build of the job has the same Pipeline. Every runner step reads it from its pod's
// annotation, and so sees the whole build.
func TestBuildContext(t *testing.T) {
	opts := translate.Options{Team: "ops", Pipeline: "app", InstanceVars: map[string]any{"branch": "main"}, ExternalURL: "https://ci.example.com", Build: "3",
		TeamID: 1, PipelineID: 2, JobID: 3, BuildID: 42, CreatedBy: "alice"}
	r, err := translateFile(t, filepath.Join("testdata", "hooks", "pipeline.yml"), "test", opts)
	if err != nil {
		t.Fatal(err)
	}
	validate(t, r)
	job := `{"team_id":1,"team":"ops","pipeline_id":2,"pipeline":"app","instance_vars":{"branch":"main"},"job_id":3,"job":"test","external_url":"https://ci.example.com"}`
	build := `{"id":42,"team_id":1,"team":"ops","pipeline_id":2,"pipeline":"app","instance_vars":{"branch":"main"},"job_id":3,"job":"test","external_url":"https://ci.example.com","created_by":"alice"}`
	if got := r.Pipeline.Annotations[runspec.AnnotationBuildContext]; got != job {
		t.Errorf("the Pipeline's build context %s, want %s", got, job)
	}
	if got := r.PipelineRun.Annotations[runspec.AnnotationBuildContext]; got != build {
		t.Errorf("the run's build context %s, want %s", got, build)
	}
	wantSeen := runspec.Build{ID: 42, Name: "$(params.build-name)", TeamID: 1, TeamName: "ops", PipelineID: 2, PipelineName: "app", InstanceVars: map[string]any{"branch": "main"},
		JobID: 3, JobName: "test", ExternalURL: "https://ci.example.com", CreatedBy: "alice"}
	for _, pt := range append(slices.Clone(r.Pipeline.Spec.Tasks), r.Pipeline.Spec.Finally...) {
		if spec := stepSpec(t, pt); !cmp.Equal(spec.Build, runspec.Build{Name: "$(params.build-name)"}) {
			t.Errorf("%s's spec repeats the build's context: %+v", pt.Name, spec.Build)
		}
		if diff := cmp.Diff(wantSeen, seenSpec(t, r, pt).Build); diff != "" {
			t.Errorf("the build %s's runner sees (-want +got):\n%s", pt.Name, diff)
		}
	}
	env := []corev1.EnvVar{{Name: runspec.EnvBuildContext, ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['concourse-ci.org/build-context']"}}}}
	for _, task := range r.Tasks {
		for _, step := range task.Spec.Steps {
			if runner := step.Name != runspec.StepInstall; runner != cmp.Equal(step.Env, env) {
				t.Errorf("Task %s, step %s: env %+v", task.Name, step.Name, step.Env)
			}
		}
	}
}

// TestRevealSecretsBuildContext: a web node's --disable-redact-secrets is in the build's
// context, on the Pipeline, for every step to see.
func TestRevealSecretsBuildContext(t *testing.T) {
	r, err := translateFile(t, filepath.Join("testdata", "hooks", "pipeline.yml"), "test", translate.Options{Team: "ops", Pipeline: "app", Build: "3", RevealSecrets: true})
	if err != nil {
		t.Fatal(err)
	}
	validate(t, r)
	want := `{"team":"ops","pipeline":"app","job":"test","reveal_secrets":true}`
	if got := r.Pipeline.Annotations[runspec.AnnotationBuildContext]; got != want {
		t.Errorf("the Pipeline's build context %s, want %s", got, want)
	}
}

// TestCheckBuildContext compiles a check build: its context says so, for its scripts to
// see a build named check, of no job, while the job its objects are named after (and its
// volume keyed by) is still the check's.
func TestCheckBuildContext(t *testing.T) {
	plan := concourse.Plan{ID: "1", Check: &concourse.CheckPlan{Name: "repo", Type: "git", Source: concourse.Source{"uri": "x"}, Resource: "repo",
		TypeImage: concourse.TypeImage{BaseType: "git"}}}
	opts := translate.Options{Team: "main", Pipeline: "app", Job: "check-repo", Build: "17", TeamID: 1, PipelineID: 2, BuildID: 17, Check: true}
	r, err := translate.Translate(plan, opts)
	if err != nil {
		t.Fatal(err)
	}
	validate(t, r)
	want := `{"id":17,"team_id":1,"team":"main","pipeline_id":2,"pipeline":"app","job":"check-repo","check":true}`
	if got := r.PipelineRun.Annotations[runspec.AnnotationBuildContext]; got != want {
		t.Errorf("the run's build context %s, want %s", got, want)
	}
	if want := translate.RunName(translate.Scope("main", "app", nil), "check-repo", "17"); r.PipelineRun.Name != want {
		t.Errorf("the run is named %s, want %s", r.PipelineRun.Name, want)
	}
	for _, pt := range r.Pipeline.Spec.Tasks {
		if seen := seenSpec(t, r, pt).Build; !seen.Check || seen.JobName != "check-repo" {
			t.Errorf("the build %s's runner sees %+v, want a check build of job check-repo", pt.Name, seen)
		}
	}
}

// TestTaskCacheRecords compiles a job with the ATC's records of its task caches: each
// task gets its own step's (none when its step has none), and a build compiled without
// records, or a one-off build, gets none.
func TestTaskCacheRecords(t *testing.T) {
	records := map[string]map[string]int{"s": {".cache": 4, "other": 9}, "jn": {"c": 2}, "gone": {"x": 1}}
	for _, tt := range []struct {
		name    string
		opts    translate.Options
		records bool
	}{
		{name: "recorded", opts: translate.Options{TaskCaches: records}, records: true},
		{name: "none recorded yet", opts: translate.Options{TaskCaches: map[string]map[string]int{}}, records: true},
		{name: "not recorded"},
		{name: "one-off", opts: translate.Options{TaskCaches: records, OneOff: true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, err := translateFile(t, filepath.Join("testdata", "hooks", "pipeline.yml"), "test", tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			validate(t, r)
			tasks := 0
			for _, pt := range append(r.Pipeline.Spec.Tasks, r.Pipeline.Spec.Finally...) {
				spec := specOf(t, pt)
				if spec.Mode != runspec.ModeTask {
					continue
				}
				tasks++
				var want *runspec.CacheRecords
				if tt.records {
					want = &runspec.CacheRecords{IDs: tt.opts.TaskCaches[spec.Name]}
				}
				if diff := cmp.Diff(want, spec.Task.CacheRecords); diff != "" {
					t.Errorf("%s (step %s): cache records (-want +got):\n%s", pt.Name, spec.Name, diff)
				}
			}
			if tasks == 0 {
				t.Fatal("no task step compiled")
			}
		})
	}
}
