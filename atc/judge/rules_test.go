package judge

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/internal/testcorpus"
)

// validatorDir is the project's validator (the concourse package), beside this module.
var validatorDir = filepath.Join("..", "..", "concourse")

// ownRules are the validator's rules that are the project's own, not Concourse's: no case
// can tell them from Concourse's verdict, and each says why it is there.
var ownRules = map[string]string{
	"%s name is %s, over the limit of %s for a name: the build's Kubernetes objects carry it, and the API server refuses an object whose annotations pass 256 KiB: shorten it": "Concourse has no limit on a name; the API server has one on what a build's objects carry",
	"across var has no name: no ((.:var)) can use its values":                                                                 "Concourse accepts it silently; its values run, under a name no ((.:var)) gives",
	"max_in_flight is negative: Concourse never starts a build of this job":                                                   "Concourse accepts it silently; its scheduler then finds the job always at its limit",
	"invalid timeout %q: the step errors when it runs; use a duration such as 30m or 1h30m":                                   "Concourse accepts a get's, put's or task's timeout silently and reads it when the step runs",
	"across var %q has no values: Concourse runs the step for none":                                                           "Concourse accepts it silently and reads the values when the step runs",
	"across var %q: values must be a list (or a ((var)) that gives one): Concourse errors the step when it runs":              "Concourse accepts it silently and reads the values when the step runs",
	"limit must not be negative: Concourse errors the build at this step when it runs (here the steps run with no limit)":     "Concourse accepts it silently; its in_parallel step cannot run with it",
	"cache has no path: Concourse caches the task's whole working directory then, which a build here refuses: give it a path": "Concourse accepts it silently, and caches the whole working directory",
	"%s has no image: Concourse runs it in its worker's root file system; a build on Tekton runs it in the default task image (--default-task-image; the web node's --tekton-default-task-image), and refuses it without one: %s": "Concourse accepts it silently, and runs the task in its worker's root file system",
}

// knownDifferences are the cases whose verdicts differ from Concourse's by design, each
// with why (docs/how-it-works.md's known differences list them). Each must still differ.
var knownDifferences = map[string]string{
	"rule case: a name over the limit": "a name over 16 KiB is refused: the build's Kubernetes objects carry it, which the API server bounds",
}

// ruleCases are pipelines written to give each rule of the validator that neither the
// corpus nor its mutations give, judged as the corpus is: each must draw Concourse's
// verdict where the rule gives ours.
var ruleCases = map[string]string{
	"a group's glob that is not one": `
resources: [{name: r, type: git, source: {}}]
groups: [{name: g, jobs: ["[a"]}]
jobs: [{name: a, plan: [{get: r}]}]`,
	"a name over the limit": `
resources: [{name: r, type: git, source: {}}]
jobs: [{name: ` + strings.Repeat("a", 17<<10) + `, plan: [{get: r}]}]`,
	"a group with a resource that does not exist": `
resources: [{name: r, type: git, source: {}}]
groups: [{name: g, jobs: [a], resources: [nope]}]
jobs: [{name: a, plan: [{get: r}]}]`,
	"a var source using one that does not exist": `
var_sources: [{name: a, type: dummy, config: {vars: {k: ((b:v))}}}]
jobs: [{name: a, plan: [{task: t, config: {platform: linux, image_resource: {type: registry-image, source: {repository: busybox}}, run: {path: "true"}}}]}]`,
	"var sources using each other": `
var_sources:
- {name: a, type: dummy, config: {vars: {k: ((b:v))}}}
- {name: b, type: dummy, config: {vars: {k: ((a:v))}}}
jobs: [{name: a, plan: [{task: t, config: {platform: linux, image_resource: {type: registry-image, source: {repository: busybox}}, run: {path: "true"}}}]}]`,
	"a background image that is not a URL": `
display: {background_image: "http://[::1"}
jobs: [{name: a, plan: [{task: t, config: {platform: linux, image_resource: {type: registry-image, source: {repository: busybox}}, run: {path: "true"}}}]}]`,
	"a background image of another scheme": `
display: {background_image: "javascript:alert(1)"}
jobs: [{name: a, plan: [{task: t, config: {platform: linux, image_resource: {type: registry-image, source: {repository: busybox}}, run: {path: "true"}}}]}]`,
	"jobs passing to each other": `
resources: [{name: r, type: git, source: {}}]
jobs:
- {name: a, plan: [{get: r, passed: [b]}]}
- {name: b, plan: [{get: r, passed: [a]}]}`,
	"both log retentions": `
resources: [{name: r, type: git, source: {}}]
jobs: [{name: a, build_logs_to_retain: 3, build_log_retention: {builds: 2}, plan: [{get: r}]}]`,
	"a negative build_logs_to_retain": `
resources: [{name: r, type: git, source: {}}]
jobs: [{name: a, build_logs_to_retain: -1, plan: [{get: r}]}]`,
	"negative retained builds": `
resources: [{name: r, type: git, source: {}}]
jobs: [{name: a, build_log_retention: {builds: -1}, plan: [{get: r}]}]`,
	"negative retained days": `
resources: [{name: r, type: git, source: {}}]
jobs: [{name: a, build_log_retention: {days: -1}, plan: [{get: r}]}]`,
	"negative minimum succeeded builds": `
resources: [{name: r, type: git, source: {}}]
jobs: [{name: a, build_log_retention: {builds: 2, minimum_succeeded_builds: -1}, plan: [{get: r}]}]`,
	"more minimum succeeded builds than builds": `
resources: [{name: r, type: git, source: {}}]
jobs: [{name: a, build_log_retention: {builds: 2, minimum_succeeded_builds: 5}, plan: [{get: r}]}]`,
	"a negative max_in_flight": `
resources: [{name: r, type: git, source: {}}]
jobs: [{name: a, max_in_flight: -1, plan: [{get: r}]}]`,
	"a task with both file and config": `
resources: [{name: r, type: git, source: {}}]
jobs: [{name: a, plan: [{get: r}, {task: t, file: r/t.yml, config: {platform: linux, image_resource: {type: registry-image, source: {repository: busybox}}, run: {path: "true"}}}]}]`,
	"a hermetic task": `
jobs: [{name: a, plan: [{task: t, hermetic: true, config: {platform: linux, image_resource: {type: registry-image, source: {repository: busybox}}, run: {path: "true"}}}]}]`,
	"a var loaded twice": `
resources: [{name: r, type: git, source: {}}]
jobs: [{name: a, plan: [{get: r}, {load_var: v, file: r/a}, {load_var: v, file: r/b}]}]`,
	"a var loaded over an outer one": `
resources: [{name: r, type: git, source: {}}]
jobs: [{name: a, plan: [{get: r}, {load_var: v, file: r/a}, {across: [{var: x, values: [1]}], do: [{load_var: v, file: r/b}]}]}]`,
	"a var loaded from no file": `
jobs: [{name: a, plan: [{load_var: v}]}]`,
	"a timeout that is no duration": `
resources: [{name: r, type: git, source: {}}]
jobs: [{name: a, plan: [{do: [{get: r}], timeout: soon}]}]`,
	"a get's timeout that is no duration": `
resources: [{name: r, type: git, source: {}}]
jobs: [{name: a, plan: [{get: r, timeout: soon}]}]`,
	"no attempts": `
resources: [{name: r, type: git, source: {}}]
jobs: [{name: a, plan: [{get: r, attempts: 0}]}]`,
	"an across var with no name": `
resources: [{name: r, type: git, source: {}}]
jobs: [{name: a, plan: [{get: r, across: [{values: [1, 2]}]}]}]`,
	"an across var at no more than none in flight": `
resources: [{name: r, type: git, source: {}}]
jobs: [{name: a, plan: [{get: r, across: [{var: x, values: [1, 2], max_in_flight: 0}]}]}]`,
	"an across var with no values": `
resources: [{name: r, type: git, source: {}}]
jobs: [{name: a, plan: [{get: r, across: [{var: x}]}]}]`,
	"an across var whose values are not a list": `
resources: [{name: r, type: git, source: {}}]
jobs: [{name: a, plan: [{get: r, across: [{var: x, values: {a: 1}}]}]}]`,
	"a cache ttl that is no duration": `
jobs: [{name: a, plan: [{task: t, config: {platform: linux, image_resource: {type: registry-image, source: {repository: busybox}}, caches: [{path: c, ttl: soon}], run: {path: "true"}}}]}]`,
	"a cache ttl under a second": `
jobs: [{name: a, plan: [{task: t, config: {platform: linux, image_resource: {type: registry-image, source: {repository: busybox}}, caches: [{path: c, ttl: 10ms}], run: {path: "true"}}}]}]`,
	"a negative in_parallel limit": `
resources: [{name: r, type: git, source: {}}]
jobs: [{name: a, plan: [{in_parallel: {limit: -1, steps: [{get: r}]}}]}]`,
}

// rule is one of the validator's rules: the format of its errorf or warnf, and where.
type rule struct {
	format string
	at     string
}

// validatorRules finds every rule of the validator in its source: each call of the
// validator's errorf or warnf (receiver v), and each fieldError (a task config's rules),
// with a literal format or a constant's.
func validatorRules(t *testing.T) []rule {
	t.Helper()
	entries, err := os.ReadDir(validatorDir)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	consts := map[string]string{}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(validatorDir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if i < len(vs.Values) {
						if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							consts[n.Name], _ = strconv.Unquote(lit.Value)
						}
					}
				}
			}
		}
	}
	var rules []rule
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) < 2 {
				return true
			}
			switch fun := call.Fun.(type) {
			case *ast.SelectorExpr:
				if recv, ok := fun.X.(*ast.Ident); !ok || recv.Name != "v" || fun.Sel.Name != "errorf" && fun.Sel.Name != "warnf" {
					return true
				}
			case *ast.Ident:
				if fun.Name != "fieldError" {
					return true
				}
			default:
				return true
			}
			pos := fset.Position(call.Pos())
			var format string
			switch arg := call.Args[1].(type) {
			case *ast.BasicLit:
				format, _ = strconv.Unquote(arg.Value)
			case *ast.Ident:
				format = consts[arg.Name]
			}
			if format == "" {
				t.Errorf("%s: a rule whose format is neither a literal nor a constant's: the judge cannot name it", pos)
				return true
			}
			rules = append(rules, rule{format: format, at: filepath.Base(pos.Filename) + ":" + strconv.Itoa(pos.Line)})
			return true
		})
	}
	if len(rules) == 0 {
		t.Fatalf("no rule of the validator found in %s", validatorDir)
	}
	return rules
}

// checkRules fails the test for each rule of the validator that no case shows to be
// Concourse's (ruleProblems), and prints the count.
func checkRules(t *testing.T, results []result) {
	t.Helper()
	rules := validatorRules(t)
	problems := ruleProblems(results, rules)
	for _, p := range problems {
		t.Error(p)
	}
	testcorpus.Report(t, "judge: %d rules of the validator, %d the project's own, %d shown to be Concourse's by a case that disagrees without them\n",
		len(rules), len(ownRules), len(rules)-len(ownRules)-len(problems))
}

// ruleProblems are the rules that no case shows to be Concourse's: one given by no case,
// or one whose every diagnostic could go without any case disagreeing with Concourse (so
// that disabling it would go unseen). A case shows a rule when, its diagnostics taken
// away, the case disagrees: a refusal no longer refused or placed where Concourse's
// message is about, a warning of Concourse's no longer given. Since the validator's rules
// only add diagnostics, taking a rule's away is what disabling it does (but where a rule
// ends a check early: a rule after it may then speak). The project's own rules (ownRules)
// are not Concourse's, and are left out.
func ruleProblems(results []result, rules []rule) []string {
	given := map[string]int{}
	shown := map[string]bool{}
	for _, r := range results {
		if r.problem != "" {
			continue
		}
		var formats []string
		for _, d := range r.ours {
			if d.Rule != "" && !slices.Contains(formats, d.Rule) {
				formats = append(formats, d.Rule)
			}
		}
		for _, format := range formats {
			given[format]++
			if shown[format] {
				continue
			}
			without := slices.DeleteFunc(slices.Clone(r.ours), func(d concourse.Diagnostic) bool { return d.Rule == format })
			if problem, _ := compare(r.theirs, without); problem != "" {
				shown[format] = true
			}
		}
	}
	var problems []string
	for _, ru := range rules {
		if _, own := ownRules[ru.format]; own {
			continue
		}
		switch {
		case given[ru.format] == 0:
			problems = append(problems, fmt.Sprintf("%s: rule %q is given by no case: no case shows it to be Concourse's", ru.at, ru.format))
		case !shown[ru.format]:
			problems = append(problems, fmt.Sprintf("%s: rule %q, given in %d cases, could be disabled with no case disagreeing with Concourse", ru.at, ru.format, given[ru.format]))
		}
	}
	return problems
}

// The check itself must catch a rule no case gives, and one whose diagnostics no case
// needs to agree with Concourse.
func TestRuleProblems(t *testing.T) {
	at := func(line int, rule, msg string, sev concourse.Severity) concourse.Diagnostic {
		return concourse.Diagnostic{Severity: sev, File: "p.yml", Pos: concourse.Pos{Line: line, Col: 1}, Path: concourse.Path{concourse.Key("jobs"), concourse.Named(0, "a")}, Message: msg, Rule: rule}
	}
	refused := Verdict{Stage: StageValidate, Errors: []string{"jobs.a has no plan"}}
	results := []result{
		// Needed: without it, Concourse's refusal has no error of ours.
		{theirs: refused, refused: true, ours: concourse.Diagnostics{at(2, "needed", "job a has no plan", concourse.SeverityError)}},
		// Not needed: the case is refused as Concourse refuses it without it too.
		{theirs: refused, refused: true, ours: concourse.Diagnostics{
			at(2, "needed", "job a has no plan", concourse.SeverityError),
			at(2, "redundant", "job a has nothing to do", concourse.SeverityError),
		}},
		// A case that disagrees already says nothing of its rules.
		{theirs: Verdict{}, problem: "Concourse accepts it, ours refuses it", ours: concourse.Diagnostics{at(3, "in a disagreement", "x", concourse.SeverityError)}},
	}
	rules := []rule{{"needed", "v.go:1"}, {"redundant", "v.go:2"}, {"never", "v.go:3"}, {"in a disagreement", "v.go:4"}}
	got := ruleProblems(results, rules)
	want := []string{
		`v.go:2: rule "redundant", given in 1 cases, could be disabled with no case disagreeing with Concourse`,
		`v.go:3: rule "never" is given by no case: no case shows it to be Concourse's`,
		`v.go:4: rule "in a disagreement" is given by no case: no case shows it to be Concourse's`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("ruleProblems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
