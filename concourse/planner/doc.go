// Package planner turns a job of a pipeline into the build plan Concourse would build for
// it (the atc.Plan JSON tree), with Concourse's plan IDs, image sub-plans, implicit gets
// after puts, attempts copies and across substeps. PlanBuild also says which step of the
// pipeline each node of the plan came from, so that a problem with a node can be reported
// at the step the user wrote.
package planner
