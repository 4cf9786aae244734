package judge

import (
	"testing"

	"github.com/concourse/concourse/atc"

	"github.com/concourse-tekton/concourse-tekton/concourse"
)

// TestAbout: an error of ours is about Concourse's message when it is on its line, at its
// field, under its place or names what it names.
func TestAbout(t *testing.T) {
	job := concourse.Path{concourse.Key("jobs"), concourse.Named(0, "unit")}
	step := job.Child(concourse.Key("plan"), concourse.Index(2), concourse.Key("get"))
	args := job.Child(concourse.Key("plan"), concourse.Index(1), concourse.Key("config"), concourse.Key("run"), concourse.Key("args"), concourse.Index(4))
	at := func(line int, path concourse.Path, msg string) concourse.Diagnostic {
		return concourse.Diagnostic{File: "p.yml", Pos: concourse.Pos{Line: line, Col: 3}, Path: path, Message: msg}
	}
	for _, tc := range []struct {
		name    string
		stage   Stage
		message string
		ours    concourse.Diagnostic
		want    bool
	}{
		{"the line of a YAML error", StageYAML, "yaml: unmarshal errors:\n  line 7: mapping key \"a\" already defined at line 2", at(7, nil, "duplicate key"), true},
		{"another line", StageYAML, "yaml: line 7: did not find expected key", at(8, nil, "invalid YAML"), false},
		{"the field of a type error", StageDecode, "json: cannot unmarshal number into Go struct field TaskStep.config.run.args of type string", at(9, args, "cannot use number"), true},
		{"another field", StageDecode, "json: cannot unmarshal number into Go struct field TaskStep.config.run.path of type string", at(9, args, "cannot use number"), false},
		{"an unknown field", StageDecode, `json: unknown field "tags"`, at(4, job.Child(concourse.Key("tags")), `unknown field "tags"`), true},
		{"a step's place", StageValidate, "jobs.unit.plan.do[2].get(repo): unknown resource 'repo'", at(12, step, `unknown resource "repo"`), true},
		{"another step", StageValidate, "jobs.unit.plan.do[1].get(repo): unknown resource 'repo'", at(12, step, `unknown resource "repo"`), false},
		{"another job", StageValidate, "jobs.other.plan.do[2].get(repo): unknown resource 'repo'", at(12, step, `unknown resource "repo"`), false},
		{"a quoted name", StageValidate, "resource 'repo' is not used", at(3, concourse.Path{concourse.Key("resources"), concourse.Named(0, "repo")}, "not used"), true},
		{"another name", StageValidate, "resource 'other' is not used", at(3, concourse.Path{concourse.Key("resources"), concourse.Named(0, "repo")}, "not used"), false},
		{"no place", StageDecode, "no step configured", at(5, step, "aggregate was removed"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := About(tc.stage, tc.message, concourse.Diagnostics{tc.ours}); got != tc.want {
				t.Errorf("About(%q, %v) = %v, want %v", tc.message, tc.ours, got, tc.want)
			}
		})
	}
	if About(StageDecode, "no step configured", concourse.Diagnostics{{File: "p.yml", Message: "x"}}) {
		t.Error("an error without a position is about something")
	}
}

func TestWarnedAbout(t *testing.T) {
	ours := concourse.Diagnostics{
		{File: "p.yml", Pos: concourse.Pos{Line: 3, Col: 5}, Severity: concourse.SeverityWarning, Message: `job "Unit" is not a valid identifier: start with a lowercase letter`},
	}
	if !WarnedAbout(atc.ConfigWarning{Type: "invalid_identifier", Message: "jobs.Unit: 'Unit' is not a valid identifier: must start with a lowercase letter or a number"}, ours) {
		t.Error("the same name's warning is not found")
	}
	if WarnedAbout(atc.ConfigWarning{Type: "invalid_identifier", Message: "jobs.Other: 'Other' is not a valid identifier: must start with a lowercase letter or a number"}, ours) {
		t.Error("another name's warning is found")
	}
	if WarnedAbout(atc.ConfigWarning{Type: "deprecated_field", Message: "jobs.unit.build_logs_to_retain is deprecated. Use build_log_retention instead."}, ours) {
		t.Error("a warning of another meaning is found")
	}
}
