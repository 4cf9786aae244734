package judge

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/internal/testcorpus"
)

// judgeCase is one file given to both validators.
type judgeCase struct {
	// name is the corpus file's, with the mutation when there is one.
	name string
	file string
	task bool
	data []byte
}

// result is what became of a case: a disagreement when problem is set.
type result struct {
	c       judgeCase
	refused bool
	problem string
	theirs  Verdict
	ours    concourse.Diagnostics
}

// maxShown bounds the disagreements the test prints in full.
const maxShown = 40

// TestJudge runs every file of the corpus (pipelines, and task files), and mutations of
// each, through Concourse's validator and the project's, and fails on every case where
// they disagree: a verdict (accepted or refused), a refusal of ours without a position or
// elsewhere than where Concourse's message is about, or a warning of Concourse's that ours
// does not give (on a file both accept). There is no list of cases let off: a case that
// cannot agree would say why here, and docs/how-it-works.md's known differences list it.
func TestJudge(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the corpus and its mutations through both validators take a minute")
	}
	start := time.Now()
	cases, files := judgeCases(t)
	results := each(cases, judge)

	var refused, disagreements, known int
	for _, r := range results {
		if r.refused {
			refused++
		}
		if why, ok := knownDifferences[r.c.name]; ok {
			if r.problem == "" {
				t.Errorf("%s: agrees with Concourse, although it is a known difference (%s): take it off the list", r.c.name, why)
			}
			known++
			continue
		}
		if r.problem == "" {
			continue
		}
		if disagreements++; disagreements <= maxShown {
			t.Errorf("%s: %s\n  Concourse: %s\n  ours:      %s", r.c.name, r.problem, verdictText(r.theirs), oursText(r.ours))
		}
	}
	if disagreements > maxShown {
		t.Errorf("and %d more disagreements", disagreements-maxShown)
	}
	testcorpus.Report(t, "judge: %d cases (%d corpus files, %d mutations of them, %d written for rules): %d accepted by both, %d refused by both, %d known differences, %d disagreements with Concourse 8.2.5's validator (%v)\n",
		len(cases), files, len(cases)-files-len(ruleCases), len(ruleCases), len(cases)-refused-disagreements-known, refused, known, disagreements, time.Since(start).Round(time.Second))
	checkRules(t, results)
}

// forEach calls f(i) for each i below n, on every processor at once.
func forEach(n int, f func(i int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := range next {
				f(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// each is f of every case, worked out on every processor at once.
func each[C, R any](cases []C, f func(C) R) []R {
	results := make([]R, len(cases))
	forEach(len(cases), func(i int) { results[i] = f(cases[i]) })
	return results
}

// judgeCases are the corpus's pipelines and task files, each followed by its mutations.
func judgeCases(t *testing.T) (cases []judgeCase, files int) {
	t.Helper()
	for _, task := range []bool{false, true} {
		list := testcorpus.Pipelines(t)
		if task {
			list = testcorpus.Tasks(t)
		}
		each := make([][]judgeCase, len(list))
		errs := make([]error, len(list))
		forEach(len(list), func(i int) {
			data, err := os.ReadFile(list[i])
			base := filepath.Base(list[i])
			each[i], errs[i] = []judgeCase{{name: base, file: base, task: task, data: data}}, err
			for _, m := range Mutate(base, data, mutationsOf(data)) {
				each[i] = append(each[i], judgeCase{name: base + " [" + m.String() + "]", file: base, task: task, data: m.Data})
			}
		})
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		cases, files = append(cases, slices.Concat(each...)...), files+len(list)
	}
	for _, name := range slices.Sorted(maps.Keys(ruleCases)) {
		cases = append(cases, judgeCase{name: "rule case: " + name, file: "rule-case.yml", data: []byte(strings.TrimPrefix(ruleCases[name], "\n"))})
	}
	return cases, files
}

// mutationsOf is how many mutations a file gets: fewer for a larger file, whose every
// mutation costs more to validate, so that the test stays within a minute on two cores.
func mutationsOf(data []byte) int {
	return min(32, max(2, 100_000/max(1, len(data))))
}

// judge gives a case to both validators and says where they disagree.
func judge(c judgeCase) result {
	r := result{c: c}
	if c.task {
		r.theirs = TaskFile(c.data)
		_, r.ours = concourse.LoadTaskConfig(c.file, c.data, concourse.TaskFileOptions{})
	} else {
		r.theirs = Pipeline(c.data)
		_, r.ours = concourse.ParsePipeline(c.file, c.data, nil)
	}
	r.problem, r.refused = compare(r.theirs, r.ours)
	return r
}

// compare says where ours disagrees with Concourse's verdict, "" when they agree, and
// whether both refuse the case.
func compare(theirs Verdict, ours concourse.Diagnostics) (problem string, refused bool) {
	errs := ours.Errors()
	theyRefuse := len(theirs.Errors) > 0
	switch {
	case theyRefuse && len(errs) == 0:
		return "Concourse refuses it, ours accepts it", false
	case !theyRefuse && len(errs) > 0:
		return "Concourse accepts it, ours refuses it", false
	case theyRefuse:
		for _, d := range errs {
			if d.File == "" || d.Pos.Line == 0 {
				return "ours refuses it without a position: " + d.Error(), true
			}
		}
		for _, m := range messages(theirs) {
			if !About(theirs.Stage, m, errs) {
				return "no error of ours is where Concourse's is: " + m, true
			}
		}
		return "", true
	}
	for _, w := range theirs.Warnings {
		if !WarnedAbout(w, ours.Warnings()) {
			return "ours does not warn as Concourse does: " + w.Message, false
		}
	}
	return "", false
}

// messages splits Concourse's errors into one problem each: configvalidate groups them
// under headers ("invalid jobs:"), a tab before each.
func messages(v Verdict) []string {
	if v.Stage != StageValidate {
		return v.Errors
	}
	var out []string
	for _, e := range v.Errors {
		for _, line := range strings.Split(e, "\n") {
			line = strings.TrimSpace(line)
			if line == "" || (strings.HasPrefix(line, "invalid ") && strings.HasSuffix(line, ":")) {
				continue
			}
			out = append(out, line)
		}
	}
	return out
}

func verdictText(v Verdict) string {
	if len(v.Errors) == 0 {
		var ws []string
		for _, w := range v.Warnings {
			ws = append(ws, w.Message)
		}
		return "accepted " + strings.Join(ws, "; ")
	}
	return "refused (" + string(v.Stage) + ") " + strings.Join(messages(v), "; ")
}

func oursText(ds concourse.Diagnostics) string {
	lines := make([]string, len(ds))
	for i, d := range ds {
		lines[i] = d.Error()
	}
	if len(ds.Errors()) == 0 {
		return "accepted " + strings.Join(lines, "; ")
	}
	return "refused " + strings.Join(lines, "; ")
}
