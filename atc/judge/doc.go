// Package judge holds Concourse v8.2.5's own verdict on a pipeline or a task file, reached
// through Concourse's code as fly and the web node reach it, its own plan of a job's build
// (its scheduler's builds.Planner), and the deterministic mutations of real files that its
// tests run through both Concourse's code and the project's (packages concourse and
// concourse/planner): the verdicts must agree, each refusal be placed where Concourse's
// message is about, each of Concourse's warnings be among the project's, and the plans of
// every job both accept be the same JSON.
package judge
