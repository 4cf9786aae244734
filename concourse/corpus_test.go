package concourse_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/planner"
	"github.com/concourse-tekton/concourse-tekton/internal/testcorpus"
)

func corpusDir(t testing.TB) string { return testcorpus.Dir(t) }

// invalidCorpus are the corpus pipelines that current Concourse rejects too, each with the
// error we must report for it (a substring) and why.
var invalidCorpus = map[string]string{
	// corpus/README.md: a duplicate top-level key; current fly rejects it.
	"concourse__concourse__fly__integration__fixtures__testConfigDuplicate.yml": `:7:1: duplicate key "resources": already defined at line 2`,
	// corpus/README.md: repeated `<<` merge keys, which fly's yaml.v3 pre-parse forbids.
	"cloudfoundry__app-autoscaler-release__ci__autoscaler__pipeline.yml": `:195:7: duplicate key "<<": already defined at line 194`,
	// corpus/README.md: a duplicate input_mapping key.
	"cloudfoundry__runtime-ci__pipelines__update-releases.yml": `:2865:7: duplicate key "uaa-release-tarball": already defined at line 2850`,
	// `submodules` is a git get param written as a step field: an unknown step field.
	"cloudfoundry__routing-release__ci__pipelines__routing-acceptance.yml": `:98:7: jobs[superman-deploy-cf].plan[0].in_parallel[2].submodules: unknown field "submodules"`,
	// A job written under resources: resources are decoded strictly.
	"cloudfoundry__buildpacks-ci__pipelines__notifications.yml": `resources[new-rootfs-cves-cflinuxfs4].plan: unknown field "plan"`,
	// `name:` on a step is not a step field.
	"cloudfoundry-incubator__kubo-ci__docker.yml": `jobs[ship-it].plan[0].do[0].name: unknown field "name"`,
	// `((!public-pipelines))` is not a var reference ('!' is not allowed), so a bool field
	// gets a string.
	"apache__geode__ci__pipelines__meta.yml": `jobs[set-pipeline].public: cannot use string as a boolean (got "((!public-pipelines))")`,
	// A var in a bool field must be given when the pipeline is set; the file expects -v.
	"apache__geode__ci__pipelines__images__images.yml": `jobs[build-concourse-docker-image].public: ((public-pipelines)) is not given`,
	// output_mapping written inside the task's config instead of on the step.
	"ministryofjustice__analytics-platform-concourse-pipelines__update-helm-repo.yaml": `jobs[helm-repo].plan[1].config.output_mapping: unknown fields ["output_mapping"]`,
	// A task config with the `image` key Concourse removed (and no platform).
	"alphagov__paas-cf__concourse__pipelines__concourse-lite-self-terminate.yml": `jobs[delete].plan[1].config.image: unknown fields ["image"]`,
	// check_every needs its value when the pipeline is set; the file expects it from -v.
	"Pix4D__cogito__pipelines__cogito.yml": `resource_types[cogito].check_every: ((cogito-image-check_every)) is not given`,
	// aggregate, which Concourse v7 removed (v8: "no step configured").
	"alphagov__paas-cf__concourse__pipelines__failure-testing.yml":                                   `:105:9: jobs[cloud-controller].plan[0].aggregate: aggregate was removed`,
	"apache__geode__ci__pipelines__docker-images.yml":                                                `:48:5: jobs[build-apachegeode-build-concourse-docker-image].plan[0].aggregate: aggregate was removed`,
	"cloudfoundry-incubator__kubo-ci__kubo-windows.yml":                                              `:141:5: jobs[install-bosh].plan[0].aggregate: aggregate was removed`,
	"cloudfoundry__bosh-linux-stemcell-builder__ci__pipeline.yml":                                    `:129:9: jobs[start-job].plan[0].aggregate: aggregate was removed`,
	"cloudfoundry__cli__ci__infrastructure__v7-pipeline.yml":                                         `:53:5: jobs[deploy].plan[0].aggregate: aggregate was removed`,
	"cloudfoundry__routing-release__ci__pipelines__routing-perf-release.yml":                         `:35:5: jobs[upgrade-go1.x].plan[0].aggregate: aggregate was removed`,
	"cloudfoundry__runtime-ci__pipelines__build-docker-images.yml":                                   `:130:7: jobs[build-cf-deployment-concourse-tasks-docker-image].plan[0].do[0].aggregate: aggregate was removed`,
	"ministryofjustice__analytics-platform-concourse-pipelines__airflow.yaml":                        `:9:5: jobs[lint].plan[2].aggregate: aggregate was removed`,
	"rahulkj__pcf-concourse-pipelines__pipelines__config-tile__rabbitmq__install-rabbitmq.yml":       `:43:5: jobs[upload-product].plan[0].aggregate: aggregate was removed`,
	"rahulkj__pcf-concourse-pipelines__pipelines__delete-opsmgr__pipeline.yml":                       `:35:5: jobs[delete-installation].plan[0].aggregate: aggregate was removed`,
	"telia-oss__github-pr-resource__e2e__pipeline.yml":                                               `:34:5: jobs[test].plan[0].aggregate: aggregate was removed`,
	"vmware-archive__concourse-pipeline-samples__pipelines__docker__pks-kubectl-image__pipeline.yml": `:61:5: jobs[build-docker-image].plan[0].aggregate: aggregate was removed`,
	// A job's worker tags, which Concourse v8's jobs do not have.
	"concourse__ci__pipelines__concourse.yml": `:577:5: jobs[k8s-topgun].tags: unknown field "tags"`,
	"concourse__ci__pipelines__helm-prs.yml":  `:74:5: jobs[k8s-topgun].tags: unknown field "tags"`,
	"concourse__ci__pipelines__release.yml":   `:598:5: jobs[k8s-topgun].tags: unknown field "tags"`,
	// A number in a task's args, inside the step's own decoder, which reads it as a number.
	"apache__geode__ci__pipelines__metrics.yml": `:63:11: jobs[GeodeBuildMetrics].plan[2].config.run.args[4]: cannot use number as a string`,
}

// v8Verdicts are the corpus pipelines whose verdict changed from Concourse v7.14.2 to
// v8.2.5, with v8's, which is ours: valid, or the error it must report (a substring).
var v8Verdicts = map[string]string{
	// v7 refused across without --enable-across-step; v8 always has it.
	"concourse__ci__pipelines__branch.yml":                              "",
	"concourse__ci__pipelines__pr-deploy.yml":                           "",
	"concourse__ci__pipelines__pr.yml":                                  "",
	"concourse__ci__pipelines__reconfigure.yml":                         "",
	"concourse__concourse__testflight__fixtures__across.yml":            "",
	"concourse__concourse__testflight__fixtures__erroring_pipeline.yml": "",
	"concourse__infrastructure__pipelines__reconfigure.yml":             "",
	// Across too, but v8 refuses a job's tags, which v7 read.
	"concourse__ci__pipelines__concourse.yml": `jobs[k8s-topgun].tags: unknown field "tags"`,
	"concourse__ci__pipelines__release.yml":   `jobs[k8s-topgun].tags: unknown field "tags"`,
	// v7 dropped the unknown keys of an inline task config; v8 refuses them.
	"alphagov__paas-cf__concourse__pipelines__concourse-lite-self-terminate.yml":       `config.image: unknown fields ["image"]`,
	"ministryofjustice__analytics-platform-concourse-pipelines__update-helm-repo.yaml": `config.output_mapping: unknown fields ["output_mapping"]`,
}

// TestCorpusV8Verdicts states v8's verdict for each pipeline v8 changed it for.
func TestCorpusV8Verdicts(t *testing.T) {
	for name, want := range v8Verdicts {
		data, err := os.ReadFile(filepath.Join(corpusDir(t), "pipelines", name))
		if err != nil {
			t.Fatal(err)
		}
		_, diags := concourse.ParsePipeline(name, data, nil)
		errs := diags.Errors()
		switch {
		case want == "" && len(errs) > 0:
			t.Errorf("%s: v8 accepts it, got:\n%v", name, errs.Err())
		case want != "" && (len(errs) == 0 || !strings.Contains(errs.Err().Error(), want)):
			t.Errorf("%s: errors %v, want one containing %q", name, errs.Err(), want)
		}
		if want != "" && invalidCorpus[name] != want && !strings.Contains(invalidCorpus[name], want) {
			t.Errorf("%s: v8 refuses it, but invalidCorpus does not say so", name)
		}
		for _, d := range diags {
			if strings.Contains(d.Message, "enable-across-step") || strings.Contains(d.Message, "instance_vars") {
				t.Errorf("%s: a v7 feature flag is asked for: %v", name, d)
			}
		}
	}
}

func TestCorpusPipelines(t *testing.T) {
	files := testcorpus.Pipelines(t)
	var valid, invalid, jobs, plans, warnings int
	for _, file := range files {
		base := filepath.Base(file)
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		p, diags := concourse.ParsePipeline(base, data, nil)
		warnings += len(diags.Warnings())
		errs := diags.Errors()
		if want, bad := invalidCorpus[base]; bad {
			invalid++
			if len(errs) == 0 {
				t.Errorf("%s: valid, want an error containing %q", base, want)
				continue
			}
			if !strings.Contains(errs.Err().Error(), want) {
				t.Errorf("%s: errors\n%v\nwant one containing %q", base, errs.Err(), want)
			}
			for _, d := range errs {
				if d.File != base || d.Pos.Line == 0 {
					t.Errorf("%s: error without a position: %v", base, d)
				}
			}
			continue
		}
		if len(errs) > 0 {
			t.Errorf("%s: want valid, got:\n%v", base, errs.Err())
			continue
		}
		valid++
		for i := range p.Config.Jobs {
			jobs++
			plan, err := planner.Plan(&p.Config, &p.Config.Jobs[i], planner.Options{})
			if err != nil {
				t.Errorf("%s: job %s: %v", base, p.Config.Jobs[i].Name, err)
				continue
			}
			if _, err := json.Marshal(plan); err != nil {
				t.Errorf("%s: job %s: encoding the plan: %v", base, p.Config.Jobs[i].Name, err)
				continue
			}
			plans++
		}
	}
	for name := range invalidCorpus {
		if _, err := os.Stat(filepath.Join(corpusDir(t), "pipelines", name)); err != nil {
			t.Errorf("expected-invalid pipeline %s is not in the corpus", name)
		}
	}
	testcorpus.Report(t, "corpus pipelines: %d files: %d valid, %d invalid (as expected), %d warnings; %d jobs, %d planned\n",
		len(files), valid, invalid, warnings, jobs, plans)
}

func TestCorpusTemplates(t *testing.T) {
	dir := filepath.Join(corpusDir(t), "templates")
	files, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no templates in %s: %v", dir, err)
	}
	sort.Strings(files)
	var valid, refused int
	for _, file := range files {
		base := filepath.Base(file)
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		_, diags := concourse.ParsePipeline(base, data, nil)
		errs := diags.Errors()
		if len(errs) == 0 {
			valid++
			continue
		}
		refused++
		for _, d := range errs {
			if d.File != base || d.Message == "" || d.Pos.Line == 0 {
				t.Errorf("%s: unclear error %#v", base, d)
			}
		}
		t.Logf("%s: %v", base, errs[0])
	}
	testcorpus.Report(t, "corpus templates: %d files: %d refused with positioned errors, %d happen to be plain valid YAML pipelines\n", len(files), refused, valid)
}

func TestCorpusTasks(t *testing.T) {
	files := testcorpus.Tasks(t)
	var valid int
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if _, diags := concourse.LoadTaskConfig(filepath.Base(file), data, concourse.TaskFileOptions{}); diags.Err() != nil {
			t.Errorf("%v", diags.Err())
			continue
		}
		valid++
	}
	testcorpus.Report(t, "corpus tasks: %d files, %d valid\n", len(files), valid)
}

func TestCorpusVarsFiles(t *testing.T) {
	for _, file := range testcorpus.VarsFiles(t) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var vf concourse.VarFlags
		if err := vf.AddFile(filepath.Base(file), data); err != nil {
			t.Errorf("%v", err)
		}
	}
}
