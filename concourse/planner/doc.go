// Package planner turns a job of a pipeline into the build plan Concourse would build for
// it (the atc.Plan JSON tree), with Concourse's plan IDs, image sub-plans, implicit gets
// after puts, attempts copies and across substeps.
package planner
