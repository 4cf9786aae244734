package runner_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// Concourse's lines on the across step's stderr before it evaluates its values.
const acrossWarning = "\x1b[1;33mWARNING: the across step is experimental and subject to change!\x1b[0m\n\n" +
	"\x1b[33mfollow RFC #29 for updates: https://github.com/concourse/rfcs/pull/29\x1b[0m\n\n"

// loadVar runs a load_var of the file content as the local var name, revealed.
func (w *world) loadVar(planID, name, content string) {
	w.t.Helper()
	w.artifact("vars-"+name, map[string]string{"v.yml": content})
	lv := w.spec(runspec.ModeLoadVar, planID, name)
	lv.LoadVar = &runspec.LoadVar{File: "vars-" + name + "/v.yml", Reveal: true}
	w.checkRun(w.run(lv), planID, runspec.Succeeded)
}

func (w *world) combinations(planID string) string {
	data, _ := os.ReadFile(filepath.Join(w.volume, runspec.StateDir, runspec.AcrossDir, runspec.Escape(planID)))
	return string(data)
}

func TestAcrossResolver(t *testing.T) {
	tests := []struct {
		name   string
		local  string // the local var dynamic, as YAML; "" for none
		vars   []runspec.AcrossVar
		slots  int
		want   runspec.Outcome
		combos string // the combinations file
		count  string
		said   string // the end of what the step said (stderr and error)
	}{
		{
			name:   "a static list",
			vars:   []runspec.AcrossVar{{Name: "x", Values: []any{"a", "b"}}},
			slots:  4,
			want:   runspec.Succeeded,
			combos: `{"vars":["x"],"values":[["a"],["b"]]}`,
			count:  "2",
		},
		{
			name:   "a local var, first var slowest",
			local:  "[dynamic1, dynamic2, 4]",
			vars:   []runspec.AcrossVar{{Name: "static", Values: []any{"s1", "s2"}}, {Name: "dynamic", Values: "((.:dynamic))"}},
			slots:  6,
			want:   runspec.Succeeded,
			combos: `{"vars":["static","dynamic"],"values":[["s1","dynamic1"],["s1","dynamic2"],["s1",4],["s2","dynamic1"],["s2","dynamic2"],["s2",4]]}`,
			count:  "6",
		},
		{
			name:   "vars inside a list",
			local:  "elem",
			vars:   []runspec.AcrossVar{{Name: "x", Values: []any{"a", "((.:dynamic))"}}},
			slots:  2,
			want:   runspec.Succeeded,
			combos: `{"vars":["x"],"values":[["a"],["elem"]]}`,
			count:  "2",
		},
		{
			name:   "no values",
			local:  "[]",
			vars:   []runspec.AcrossVar{{Name: "x", Values: "((.:dynamic))"}},
			slots:  2,
			want:   runspec.Succeeded,
			combos: `{"vars":["x"],"values":[]}`,
			count:  "0",
		},
		{
			name:  "more combinations than slots",
			local: "[a, b, c]",
			vars:  []runspec.AcrossVar{{Name: "x", Values: "((.:dynamic))"}},
			slots: 2,
			want:  runspec.Errored,
			said:  "the across step has 3 combinations of values, more than the 2 it was converted for: convert the pipeline with a larger --across-slots\n",
		},
		{
			name:  "not a list",
			local: "just-a-string",
			vars:  []runspec.AcrossVar{{Name: "x", Values: "((.:dynamic))"}},
			slots: 2,
			want:  runspec.Errored,
			said:  "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal string into Go value of type []interface {}\n",
		},
		{
			name:  "an undefined var",
			vars:  []runspec.AcrossVar{{Name: "x", Values: "((.:dynamic))"}},
			slots: 2,
			want:  runspec.Errored,
			said:  "undefined vars: .:dynamic\n",
		},
		{
			name:   "shadowing a local var",
			local:  "[a]",
			vars:   []runspec.AcrossVar{{Name: "dynamic", Values: "((.:dynamic))"}},
			slots:  2,
			want:   runspec.Succeeded,
			combos: `{"vars":["dynamic"],"values":[["a"]]}`,
			count:  "1",
			said:   "\x1b[1;33mWARNING: across step shadows local var 'dynamic'\x1b[0m\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			if tt.local != "" {
				w.loadVar("1", "dynamic", tt.local)
			}
			spec := w.spec(runspec.ModeAcross, "5", "")
			spec.Across = &runspec.Across{Vars: tt.vars, Slots: tt.slots}
			r := w.run(spec)
			w.checkRun(r, "5", tt.want)
			if got := w.combinations("5"); got != tt.combos {
				t.Errorf("combinations = %s, want %s", got, tt.combos)
			}
			if got := w.result("5", runspec.ResultCount); got != tt.count {
				t.Errorf("count = %q, want %q", got, tt.count)
			}
			if said := r.said(); !strings.HasPrefix(said, acrossWarning) || !strings.HasSuffix(said, tt.said) {
				t.Errorf("said %q, want the warning and then %q", said, tt.said)
			}
		})
	}
}

// TestAcrossSlot: a step of slot i reads combination i, interpolates its spec with it
// (the step name and everything Concourse's substep template holds) and has its values
// as local vars; AcrossVars shadow them; a slot with no combination errors.
func TestAcrossSlot(t *testing.T) {
	w := newWorld(t)
	w.loadVar("1", "dynamic", "[dynamic1, 4]")
	resolver := w.spec(runspec.ModeAcross, "5", "")
	resolver.Across = &runspec.Across{Vars: []runspec.AcrossVar{{Name: "static", Values: []any{"static1"}}, {Name: "dynamic", Values: "((.:dynamic))"}}, Slots: 3}
	w.checkRun(w.run(resolver), "5", runspec.Succeeded)

	echo := func(planID string, index int, across map[string]any) run {
		task := w.taskSpec(planID, "t-((.:dynamic))", shConfig(`echo "running across ((.:static)) ((.:dynamic)) $V"; pwd`, map[string]any{"params": map[string]any{"V": "v_((.:dynamic))"}}))
		task.Scope = []string{"5/" + string(rune('0'+index))}
		task.AcrossSlots = []runspec.AcrossSlot{{Plan: "5", Index: index}}
		task.AcrossVars = across
		return w.run(task)
	}
	r := echo("5/1/1", 1, nil)
	w.checkRun(r, "5/1/1", runspec.Succeeded)
	sum := sha256.Sum256([]byte("t-4"))
	if want := "running across static1 4 v_4\n" + filepath.Join(w.tmpBuild, hex.EncodeToString(sum[:4])) + "\n"; r.stdout != want {
		t.Errorf("slot 1 said %q, want %q (its name interpolated too)", r.stdout, want)
	}
	r = echo("5/0/1", 0, map[string]any{"static": "inner"})
	w.checkRun(r, "5/0/1", runspec.Succeeded)
	if !strings.HasPrefix(r.stdout, "running across inner dynamic1 v_dynamic1\n") {
		t.Errorf("slot 0 under an inner static across said %q", r.stdout)
	}
	r = echo("5/2/1", 2, nil)
	w.checkRun(r, "5/2/1", runspec.Errored)
	if !strings.Contains(r.failure, "across step 5 has no combination 2") {
		t.Errorf("a slot past the combinations: %q", r.failure)
	}
}

// TestAcrossJoin: a join over a slotted across reads how many slots are present from the
// combinations its resolver wrote, and ignores the others.
func TestAcrossJoin(t *testing.T) {
	w := newWorld(t)
	resolver := w.spec(runspec.ModeAcross, "5", "")
	resolver.Across = &runspec.Across{Vars: []runspec.AcrossVar{{Name: "x", Values: []any{"a", "b"}}}, Slots: 3}
	w.checkRun(w.run(resolver), "5", runspec.Succeeded)
	leaf := func(id string) runspec.Node { return runspec.Node{ID: id, Kind: runspec.KindLeaf} }
	slots := runspec.Node{ID: "5", Kind: runspec.KindAcross, Slotted: true, Steps: []runspec.Node{leaf("5/0/1"), leaf("5/1/1"), leaf("5/2/1")}}
	tree := runspec.Node{ID: "5/resolved", Kind: runspec.KindDo, Steps: []runspec.Node{leaf("5"), slots}}
	join := w.spec(runspec.ModeJoin, "5/resolved", "")
	join.Join = &runspec.Join{Tree: tree}
	w.recordOutcome("5/0/1", runspec.Succeeded)
	// Slot 1 is present and has no outcome: its pod died.
	w.checkJoin(w.run(join), "5/resolved", runspec.Errored)
	w.recordOutcome("5/1/1", runspec.Succeeded)
	w.checkJoin(w.run(join), "5/resolved", runspec.Succeeded)
}
