package tektonrun

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/tektonrun/buildevents"
)

// JobInput is an input of a job's builds as a one-off build takes it (fly execute -j):
// the job's get step, at the version the job's latest build that fetched it got.
type JobInput struct {
	// Name is the get step's name: the name tasks know the input by.
	Name string
	// Get is the step: its type, resource, source and params, and Version (nil when no
	// build of the job fetched it: the latest version then).
	Get concourse.GetPlan
	// Image is the image the job's Pipeline runs the resource type's scripts in.
	Image string
}

// JobInputs reads a job's inputs from the target: its get steps from the job's Pipeline
// (made by run, or applied from convert's output), their versions from its builds.
func (c *Client) JobInputs(ctx context.Context, team, pipeline, job string) ([]JobInput, error) {
	ns := c.target.Namespace
	tekton := c.target.Tekton.TektonV1()
	sel := strings.Join([]string{
		runspec.LabelTeam + "=" + runspec.LabelValue(team),
		runspec.LabelPipeline + "=" + runspec.LabelValue(pipeline),
		runspec.LabelJob + "=" + runspec.LabelValue(job),
	}, ",")
	pipelines, err := tekton.Pipelines(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("finding job %s/%s: %w", pipeline, job, err)
	}
	var p *v1.Pipeline
	for i := range pipelines.Items {
		if sameJob(pipelines.Items[i].ObjectMeta, team, pipeline, job) {
			p = &pipelines.Items[i]
		}
	}
	if p == nil {
		return nil, fmt.Errorf("namespace %s has no job %s/%s (team %s): run a build of it, or apply its converted Pipeline, first", ns, pipeline, job, team)
	}
	var inputs []JobInput
	tasks := map[string]string{} // input → PipelineTask
	for _, pt := range p.Spec.Tasks {
		spec, ok := buildevents.ParamsSpec(pt.Params)
		// The job's own gets: not an image's, nor an across substep's.
		if !ok || spec.Mode != runspec.ModeGet || spec.Get == nil || strings.Contains(spec.PlanID, "/") || len(spec.Scope) > 0 {
			continue
		}
		if _, seen := tasks[spec.Name]; seen {
			continue
		}
		tasks[spec.Name] = pt.Name
		var image string
		for _, param := range pt.Params {
			if param.Name == runspec.ParamImage {
				image = param.Value.StringVal
			}
		}
		g := spec.Get
		inputs = append(inputs, JobInput{
			Name:  spec.Name,
			Get:   concourse.GetPlan{Name: spec.Name, Type: g.Type, Resource: g.Resource, Source: g.Source, Params: g.Params},
			Image: image,
		})
	}
	versions, err := c.fetchedVersions(ctx, sel, team, pipeline, job, tasks)
	if err != nil {
		return nil, err
	}
	for i := range inputs {
		if v, ok := versions[inputs[i].Name]; ok {
			inputs[i].Get.Version = &v
		}
	}
	return inputs, nil
}

// fetchedVersions finds, for each input, the version the newest build of the job that
// fetched it got.
func (c *Client) fetchedVersions(ctx context.Context, sel, team, pipeline, job string, tasks map[string]string) (map[string]concourse.Version, error) {
	tekton := c.target.Tekton.TektonV1()
	runs, err := tekton.PipelineRuns(c.target.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("finding the builds of %s/%s: %w", pipeline, job, err)
	}
	number := func(r v1.PipelineRun) int {
		n, _ := strconv.Atoi(r.Annotations[runspec.LabelBuild])
		return n
	}
	items := slices.DeleteFunc(runs.Items, func(r v1.PipelineRun) bool { return !sameJob(r.ObjectMeta, team, pipeline, job) })
	slices.SortFunc(items, func(a, b v1.PipelineRun) int { return number(b) - number(a) })
	out := map[string]concourse.Version{}
	for _, r := range items {
		if len(out) == len(tasks) {
			break
		}
		trs, err := tekton.TaskRuns(c.target.Namespace).List(ctx, metav1.ListOptions{LabelSelector: labelPipelineRun + "=" + r.Name})
		if err != nil {
			return nil, fmt.Errorf("reading build %s: %w", r.Name, err)
		}
		for name, task := range tasks {
			if _, done := out[name]; done {
				continue
			}
			for _, tr := range trs.Items {
				if tr.Labels[labelPipelineTask] != task {
					continue
				}
				for _, res := range tr.Status.Results {
					var v concourse.Version
					if res.Name == runspec.ResultVersion && json.Unmarshal([]byte(res.Value.StringVal), &v) == nil && len(v) > 0 {
						out[name] = v
					}
				}
			}
		}
	}
	return out, nil
}

// sameJob says whether an object's annotations name the job (labels are only label-safe).
func sameJob(m metav1.ObjectMeta, team, pipeline, job string) bool {
	a := m.Annotations
	return a[runspec.LabelTeam] == team && a[runspec.LabelPipeline] == pipeline && a[runspec.LabelJob] == job
}
