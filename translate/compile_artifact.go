package translate

import (
	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// artifact compiles an artifact input or output of a one-off build. Neither runs a pod:
// the starter uploads an input onto the build volume, and registers it, before the
// PipelineRun exists (as fly uploads before it creates the build), and downloads an output
// from the volume once the build has ended (a one-off build's volume is kept whole). In
// Concourse both steps only register an artifact, and send no event; here each is a node
// that succeeds as soon as it is reached.
func (c *compiler) artifact(p *concourse.Plan, e cond, sc scope) *handle {
	if len(sc.scope) > 0 {
		c.fail(p, "", "an artifact input or output inside an across step: a one-off build uploads and downloads its artifacts in its root scope")
		return stub(p.ID, runspec.KindLeaf, "unsupported", e)
	}
	if in := p.ArtifactInput; in != nil {
		if in.Name == "" {
			c.fail(p, "", "an artifact input has no name")
			return stub(p.ID, runspec.KindLeaf, "unsupported", e)
		}
		c.artifactInputs = append(c.artifactInputs, ArtifactInput{
			PlanID: p.ID, ArtifactID: in.ArtifactID, Name: in.Name, Dir: runspec.ArtifactPath(string(p.ID), in.Name),
		})
	} else {
		c.artifactOutputs = append(c.artifactOutputs, p.ArtifactOutput.Name)
	}
	// An empty do: it succeeds when it starts, and the verdict reads it so.
	return &handle{tree: runspec.Node{ID: string(p.ID), Kind: runspec.KindDo, Steps: []runspec.Node{}}, name: "artifact", entry: e, success: &e}
}

// pipelineField is the pipeline's name as the build's steps see it: a one-off build's is
// the pipeline it belongs to, if any.
func (c *compiler) pipelineField() string {
	if c.opts.OneOff {
		return c.opts.BuildPipeline
	}
	return c.opts.Pipeline
}

// jobField is the job's name as the build's steps see it: none in a one-off build.
func (c *compiler) jobField() string {
	if c.opts.OneOff {
		return ""
	}
	return c.opts.Job
}
