package translate_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/planner"
	"github.com/concourse-tekton/concourse-tekton/internal/golden"
	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/translate"
)

const executeTask = `platform: linux
image_resource: {type: registry-image, source: {repository: busybox}}
inputs: [{name: src}, {name: ci, optional: true}]
outputs: [{name: out}]
caches: [{path: .cache}]
run: {path: sh, args: [-c, "cp -r src out/"]}
`

// TestOneOff compiles fly execute's plan of a task with two uploaded inputs and a
// downloaded output: no pod for the artifacts, the uploads listed for the starter, the
// Pipeline's spec in the PipelineRun, and steps that see no pipeline or job.
func TestOneOff(t *testing.T) {
	cfg, err := concourse.ParseTaskConfig([]byte(executeTask))
	if err != nil {
		t.Fatal(err)
	}
	plan := planner.PlanOneOff(cfg, planner.OneOff{Inputs: []string{"src", "ci"}, Outputs: []string{"out"}})
	opts := translate.Options{Pipeline: "one-off", Job: "build", Build: "7", OneOff: true}
	r, err := translate.Translate(plan, opts)
	if err != nil {
		t.Fatal(err)
	}
	validate(t, r)
	got, err := translate.MarshalYAML(r.Objects())
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "one-off", "expected.yaml"), got, *update)

	wantInputs := []translate.ArtifactInput{
		{PlanID: "2", ArtifactID: 1, Name: "src", Dir: "volumes/2/src"},
		{PlanID: "3", ArtifactID: 2, Name: "ci", Dir: "volumes/3/ci"},
	}
	if diff := cmp.Diff(wantInputs, r.ArtifactInputs); diff != "" {
		t.Errorf("ArtifactInputs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"out"}, r.ArtifactOutputs); diff != "" {
		t.Errorf("ArtifactOutputs (-want +got):\n%s", diff)
	}
	if r.PipelineRun.Spec.PipelineRef != nil || r.PipelineRun.Spec.PipelineSpec == nil {
		t.Errorf("a one-off build's PipelineRun refers to a shared Pipeline: %+v", r.PipelineRun.Spec.PipelineRef)
	}
	tasks := r.PipelineRun.Spec.PipelineSpec.Tasks
	if len(tasks) != 1 || !strings.HasPrefix(tasks[0].Name, "task-one-off") {
		t.Fatalf("want the task alone, got %d tasks", len(tasks))
	}
	spec := seenSpec(t, r, tasks[0])
	if spec.Build.PipelineName != "" || spec.Build.JobName != "" || spec.Build.Name != "$(params.build-name)" {
		t.Errorf("the task sees pipeline %q, job %q, build %q; want none, none, the run's build-name", spec.Build.PipelineName, spec.Build.JobName, spec.Build.Name)
	}
	if p := r.PipelineRun.Spec.Params; len(p) != 1 || p[0].Name != "build-name" || p[0].Value.StringVal != "7" {
		t.Errorf("the run's params %+v; want build-name 7", p)
	}
	again, err := translate.Translate(planner.PlanOneOff(cfg, planner.OneOff{Inputs: []string{"src", "ci"}, Outputs: []string{"out"}}), opts)
	if err != nil {
		t.Fatal(err)
	}
	if againYAML, _ := translate.MarshalYAML(again.Objects()); string(againYAML) != string(got) {
		t.Errorf("the same input gave different bytes")
	}

	// A pipeline's one-off build (fly execute -j) is its pipeline's: its steps see the
	// pipeline, and no job, as Concourse's steps see a pipeline build's.
	// The ATC's IDs: no job's, and the pipeline's only for a pipeline's build.
	withPipeline := opts
	withPipeline.Pipeline, withPipeline.BuildPipeline = "app", "app"
	withPipeline.PipelineID, withPipeline.JobID = 5, 6
	r, err = translate.Translate(plan, withPipeline)
	if err != nil {
		t.Fatal(err)
	}
	if spec := seenSpec(t, r, r.PipelineRun.Spec.PipelineSpec.Tasks[0]); spec.Build.PipelineName != "app" || spec.Build.JobName != "" ||
		spec.Build.PipelineID != 5 || spec.Build.JobID != 0 {
		t.Errorf("the pipeline's one-off task sees pipeline %q (%d), job %q (%d); want app (5), none", spec.Build.PipelineName, spec.Build.PipelineID, spec.Build.JobName, spec.Build.JobID)
	}
	noPipeline := opts
	noPipeline.PipelineID = 5
	r, err = translate.Translate(plan, noPipeline)
	if err != nil {
		t.Fatal(err)
	}
	if spec := seenSpec(t, r, r.PipelineRun.Spec.PipelineSpec.Tasks[0]); spec.Build.PipelineID != 0 {
		t.Errorf("a one-off build of no pipeline sees pipeline ID %d", spec.Build.PipelineID)
	}

	opts.OneOff = false
	if _, err := translate.Translate(plan, opts); err == nil || !strings.Contains(err.Error(), "artifact inputs and outputs are for one-off builds") {
		t.Errorf("a job build with artifact inputs: err = %v", err)
	}
	_ = runspec.ModeTask
}

// TestBuildLogRetention keeps a job's build_log_retention, or its deprecated
// build_logs_to_retain, on the job's Pipeline and PipelineRun for gc, and none on a one-off
// build, which no job's retention covers.
func TestBuildLogRetention(t *testing.T) {
	const job = `jobs:
- name: test
  %s
  plan: [{task: t, config: {platform: linux, image_resource: {type: registry-image, source: {repository: busybox}}, run: {path: "true"}}}]
`
	for _, tc := range []struct {
		name, field, want string
	}{
		{"retention", "build_log_retention: {builds: 5, days: 2, minimum_succeeded_builds: 1}", `{"builds":5,"minimum_succeeded_builds":1,"days":2}`},
		{"deprecated count", "build_logs_to_retain: 7", `{"builds":7}`},
		{"none", "public: true", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _, err := translateJob(t, strings.Replace(job, "%s", tc.field, 1), translate.Options{})
			if err != nil {
				t.Fatal(err)
			}
			opts := translate.Options{Pipeline: "p", Job: "test", Build: "1", BuildLogRetention: b.Retention}
			r, err := translate.Translate(b.Plan, opts)
			if err != nil {
				t.Fatal(err)
			}
			opts.OneOff = true
			if oneOff, err := translate.Translate(b.Plan, opts); err != nil || oneOff.PipelineRun.Annotations[runspec.AnnotationBuildLogRetention] != "" {
				t.Errorf("a one-off build: err = %v, annotations %v", err, oneOff.PipelineRun.Annotations)
			}
			validate(t, r)
			for kind, annotations := range map[string]map[string]string{"Pipeline": r.Pipeline.Annotations, "PipelineRun": r.PipelineRun.Annotations} {
				if got := annotations[runspec.AnnotationBuildLogRetention]; got != tc.want {
					t.Errorf("%s annotation = %q, want %q", kind, got, tc.want)
				}
			}
			if (b.Retention != nil) != (tc.want != "") {
				t.Errorf("planner.Build.Retention = %+v", b.Retention)
			}
		})
	}
}
