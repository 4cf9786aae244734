package judge

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/concourse/concourse/atc"
	"github.com/google/go-cmp/cmp"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/planner"
	"github.com/concourse-tekton/concourse-tekton/internal/testcorpus"
)

// firstID is the number both planners count plan IDs up from: a time, as the web node
// gives its PlanFactory its start time, so that the IDs are hexadecimal numbers of
// several digits, as in Concourse's builds.
const firstID = 1_700_000_000

// planCase is one job of a pipeline both validators accept, read by both.
type planCase struct {
	file, job string
	// mutated: the pipeline is a mutation of a corpus file.
	mutated  bool
	theirs   *atc.Config
	ours     *concourse.Config
	versions map[string]concourse.Version
}

// TestJudgePlans: for every job of every corpus pipeline, and of every mutation of one
// (judgeCases'), that Concourse's validator and the project's both accept, Concourse 8.2.5's planner (builds.Planner, given what the
// web node's scheduler gives it: Plan) and the project's (concourse/planner, which
// `concourse-tekton plan` prints) make the same plan JSON, byte for byte, IDs included:
// both count up from the same first ID, and each get fetches the version its build
// input gives. One difference is stated, not let off unseen: a map key that YAML 1.1
// reads as a boolean (keysAsWritten), counted apart.
func TestJudgePlans(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: every job of the corpus through both planners")
	}
	start := time.Now()
	cases, files := planCases(t)
	count, fromFiles := map[planVerdict]int{}, 0
	for i, r := range each(cases, judgePlan) {
		if !cases[i].mutated {
			fromFiles++
		}
		if count[r.verdict]++; r.verdict == plannedOtherwise && count[r.verdict] <= maxShown {
			t.Errorf("%s, job %s: %s", cases[i].file, cases[i].job, r.problem)
		}
	}
	if differ := count[plannedOtherwise]; differ > maxShown {
		t.Errorf("and %d more jobs whose plans differ", differ-maxShown)
	}
	testcorpus.Report(t, "judge plans: %d jobs (%d of corpus files, the others of mutations of them) of %d pipelines both validators accept: %d planned byte for byte as Concourse 8.2.5's planner plans them, %d but for map keys YAML 1.1 reads as booleans (a known difference), %d otherwise (%v)\n",
		len(cases), fromFiles, files, count[plannedAlike], count[keysAsWritten], count[plannedOtherwise], time.Since(start).Round(time.Second))
}

// planCases are the jobs of the corpus pipelines, and of their mutations (judgeCases'),
// that both validators accept, each with a version for every get step of the job.
func planCases(t *testing.T) (cases []planCase, accepted int) {
	t.Helper()
	var texts []judgeCase
	all, _ := judgeCases(t)
	for _, c := range all {
		if !c.task {
			texts = append(texts, c)
		}
	}
	for i, js := range each(texts, jobCases) {
		if js.err != nil {
			t.Fatalf("%s: %v", texts[i].name, js.err)
		}
		if js.cases != nil {
			accepted++
		}
		cases = append(cases, js.cases...)
	}
	return cases, accepted
}

// fileJobs are the jobs of a pipeline file, read by both planners: none when a validator
// refuses it.
type fileJobs struct {
	cases []planCase
	err   error
}

// jobCases are the jobs of a pipeline file, when both validators accept it.
func jobCases(c judgeCase) fileJobs {
	p, diags := concourse.ParsePipeline(c.name, c.data, nil)
	if diags.Err() != nil {
		return fileJobs{}
	}
	v, saved, err := SavedConfig(c.data)
	if err != nil || len(v.Errors) > 0 {
		return fileJobs{err: err}
	}
	cases := []planCase{}
	for i := range p.Config.Jobs {
		job := &p.Config.Jobs[i]
		versions := map[string]concourse.Version{}
		p.WalkJob(job, concourse.Path{concourse.Key("jobs"), concourse.Named(i, job.Name)}, func(sc concourse.StepConfig, _ concourse.Path) {
			if g, ok := sc.(*concourse.GetStep); ok {
				versions[g.Name] = concourse.Version{"ref": "v-" + g.Name}
			}
		}, nil)
		cases = append(cases, planCase{file: c.name, job: job.Name, mutated: c.name != c.file, theirs: &saved, ours: &p.Config, versions: versions})
	}
	return fileJobs{cases: cases}
}

// planVerdict is how a job's two plans compare.
type planVerdict int

const (
	plannedAlike planVerdict = iota
	// keysAsWritten: the plans differ only in map keys that YAML 1.1 reads as booleans,
	// which ours keep as written (no: stays "no") where Concourse's become "true" or
	// "false": docs/how-it-works.md lists it among the known differences.
	keysAsWritten
	plannedOtherwise
)

// planResult is how a job's plans compare, and how they differ when they do.
type planResult struct {
	verdict planVerdict
	problem string
}

// judgePlan plans a job with both planners and says how their plans differ, if they do.
func judgePlan(c planCase) planResult {
	versions := map[string]atc.Version{}
	for name, v := range c.versions {
		versions[name] = atc.Version(v)
	}
	theirs, theirErr := Plan(*c.theirs, c.job, versions, firstID)
	ours, ourErr := planner.PlanJob(c.ours, c.job, planner.Options{Versions: c.versions, FirstID: firstID})
	if theirErr != nil || ourErr != nil {
		return planResult{plannedOtherwise, "Concourse's planner says " + errText(theirErr) + ", ours " + errText(ourErr)}
	}
	theirJSON, err := json.Marshal(theirs)
	if err != nil {
		return planResult{plannedOtherwise, "encoding Concourse's plan: " + err.Error()}
	}
	ourJSON, err := json.Marshal(ours)
	if err != nil {
		return planResult{plannedOtherwise, "encoding our plan: " + err.Error()}
	}
	switch {
	case bytes.Equal(theirJSON, ourJSON):
		return planResult{plannedAlike, ""}
	case cmp.Equal(decoded(theirJSON, nil), decoded(ourJSON, yaml11Bools)):
		return planResult{keysAsWritten, ""}
	}
	return planResult{plannedOtherwise, "the plans differ (-Concourse +ours):\n" + cmp.Diff(indented(theirJSON), indented(ourJSON))}
}

// yaml11Bools are the map keys YAML 1.1 (Concourse's templating) reads as booleans, and
// the text Concourse's JSON has of each.
var yaml11Bools = map[string]string{
	"y": "true", "Y": "true", "yes": "true", "Yes": "true", "YES": "true", "on": "true", "On": "true", "ON": "true", "True": "true", "TRUE": "true",
	"n": "false", "N": "false", "no": "false", "No": "false", "NO": "false", "off": "false", "Off": "false", "OFF": "false", "False": "false", "FALSE": "false",
}

// decoded is plan JSON as plain values, each map key renamed as keys has it.
func decoded(data []byte, keys map[string]string) any {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return err.Error()
	}
	var rename func(any) any
	rename = func(v any) any {
		switch v := v.(type) {
		case map[string]any:
			out := map[string]any{}
			for k, e := range v {
				if to, ok := keys[k]; ok {
					k = to
				}
				out[k] = rename(e)
			}
			return out
		case []any:
			for i, e := range v {
				v[i] = rename(e)
			}
		}
		return v
	}
	return rename(v)
}

func errText(err error) string {
	if err == nil {
		return "nothing"
	}
	return "\"" + err.Error() + "\""
}

// indented is plan JSON indented, for a diff to show where two plans differ.
func indented(data []byte) string {
	var out bytes.Buffer
	if err := json.Indent(&out, data, "", "  "); err != nil {
		return string(data)
	}
	return out.String()
}
