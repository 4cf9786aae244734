package eval

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/concourse-tekton/concourse-tekton/runspec"
)

func leaf(id string) runspec.Node { return runspec.Node{ID: id, Kind: runspec.KindLeaf} }

func many(kind runspec.Kind, id string, steps ...runspec.Node) runspec.Node {
	return runspec.Node{ID: id, Kind: kind, Steps: steps}
}

func wrap(kind runspec.Kind, id string, step runspec.Node) runspec.Node {
	return runspec.Node{ID: id, Kind: kind, Step: &step}
}

func hook(kind runspec.Kind, id string, step, h runspec.Node) runspec.Node {
	return runspec.Node{ID: id, Kind: kind, Step: &step, Hook: &h}
}

func failFast(n runspec.Node) runspec.Node {
	n.FailFast = true
	return n
}

func slotted(n runspec.Node) runspec.Node {
	n.Slotted = true
	return n
}

// facts parses "a=s b=f c=e d=a e=n !g #x=2 ABORT" into outcomes (s, f, e, a, n), fired
// groups (!g), the present slots of slotted across steps (#x=2) and the build's abort.
func facts(t *testing.T, s string) Facts {
	t.Helper()
	words := map[string]runspec.Outcome{"s": succeeded, "f": failed, "e": errored, "a": aborted, "n": neverRan}
	f := Facts{Outcomes: map[string]runspec.Outcome{}, Fired: map[string]bool{}, Present: map[string]int{}}
	for _, field := range strings.Fields(s) {
		if field == "ABORT" {
			f.Aborted = true
			continue
		}
		if g, ok := strings.CutPrefix(field, "!"); ok {
			f.Fired[g] = true
			continue
		}
		if x, ok := strings.CutPrefix(field, "#"); ok {
			id, n, _ := strings.Cut(x, "=")
			count, err := strconv.Atoi(n)
			if err != nil {
				t.Fatalf("bad fact %q", field)
			}
			f.Present[id] = count
			continue
		}
		id, w, ok := strings.Cut(field, "=")
		if !ok || words[w] == "" {
			t.Fatalf("bad fact %q", field)
		}
		f.Outcomes[id] = words[w]
	}
	return f
}

func TestFinal(t *testing.T) {
	const (
		do         = runspec.KindDo
		inParallel = runspec.KindInParallel
		across     = runspec.KindAcross
		retry      = runspec.KindRetry
		try        = runspec.KindTry
		timeout    = runspec.KindTimeout
		onSuccess  = runspec.KindOnSuccess
		onFailure  = runspec.KindOnFailure
		onError    = runspec.KindOnError
		onAbort    = runspec.KindOnAbort
		ensure     = runspec.KindEnsure
	)
	seq := many(do, "d", leaf("1"), leaf("2"), leaf("3"))
	par := many(inParallel, "p", leaf("1"), leaf("2"), leaf("3"))
	tests := []struct {
		name  string
		tree  runspec.Node
		facts string
		want  runspec.Outcome
	}{
		{"leaf succeeded", leaf("1"), "1=s", succeeded},
		{"leaf failed", leaf("1"), "1=f", failed},
		{"leaf never ran", leaf("1"), "1=n", neverRan},
		{"leaf with no outcome errored (its pod died)", leaf("1"), "", errored},
		{"leaf with no outcome in an aborted build: interrupted before it started", leaf("1"), "ABORT", aborted},
		{"aborted build: a step interrupted while it waited, then its ensure hook", hook(ensure, "h", leaf("1"), leaf("2")), "2=s ABORT", aborted},
		{"aborted build: a do interrupted at its second step", seq, "1=s ABORT", aborted},
		{"aborted build whose steps all ended keeps their outcome", seq, "1=s 2=s 3=f ABORT", failed},

		{"empty do succeeds", many(do, "d"), "", succeeded},
		{"do all succeed", seq, "1=s 2=s 3=s", succeeded},
		{"do stops at the first failure", seq, "1=s 2=f", failed},
		{"do stops at the first error", seq, "1=e", errored},
		{"do: a step whose pod died errors the do", seq, "1=s", errored},
		{"do: later steps that never ran contribute nothing", seq, "1=f 2=s", failed},
		{"do aborted", seq, "1=s 2=a", aborted},
		{"do that never started", seq, "1=n", neverRan},
		{"do cancelled between steps", seq, "1=s 2=n", aborted},

		{"in_parallel all succeed", par, "1=s 2=s 3=s", succeeded},
		{"in_parallel failed", par, "1=s 2=f 3=s", failed},
		{"in_parallel errored beats failed", par, "1=e 2=f 3=s", errored},
		{"in_parallel aborted beats errored", par, "1=e 2=a 3=f", aborted},
		{"in_parallel: pod died", par, "1=s 3=s", errored},
		{"empty in_parallel succeeds", many(inParallel, "p"), "", succeeded},
		{"fail_fast: own aborts left out", failFast(par), "1=f 2=a 3=n !p", failed},
		{"fail_fast: own aborts left out, error wins", failFast(par), "1=e 2=a 3=f !p", errored},
		{"fail_fast not fired: aborts are the build's", failFast(par), "1=f 2=a 3=s", aborted},
		{"without fail_fast aborts count", par, "1=f 2=a 3=s !p", aborted},
		{"fired with only aborts to see", failFast(par), "1=a 2=a 3=a !p", aborted},
		{"in_parallel that never started", par, "1=n 2=n 3=n", neverRan},
		{"across is in_parallel", failFast(many(across, "x", leaf("1"), leaf("2"))), "1=s 2=f", failed},
		{"slotted across: absent slots count for nothing", slotted(many(across, "x", leaf("1"), leaf("2"), leaf("3"))), "1=s #x=1", succeeded},
		{"slotted across: a present slot failed", slotted(many(across, "x", leaf("1"), leaf("2"), leaf("3"))), "1=s 2=f #x=2", failed},
		{"slotted across: a present slot's pod died", slotted(many(across, "x", leaf("1"), leaf("2"), leaf("3"))), "1=s #x=2", errored},
		{"slotted across with no combinations succeeds", slotted(many(across, "x", leaf("1"), leaf("2"))), "#x=0", succeeded},
		{"slotted across whose count is unknown errored", slotted(many(across, "x", leaf("1"), leaf("2"))), "1=s", errored},
		{"slotted across: fail_fast", failFast(slotted(many(across, "x", leaf("1"), leaf("2"), leaf("3")))), "1=f 2=a #x=2 !x", failed},
		{
			"slotted across after its resolver",
			many(do, "x/resolved", leaf("x"), slotted(many(across, "x", leaf("1"), leaf("2")))),
			"x=e", errored,
		},

		{"retry first attempt succeeds", many(retry, "r", leaf("1"), leaf("2")), "1=s", succeeded},
		{"retry after failure", many(retry, "r", leaf("1"), leaf("2")), "1=f 2=s", succeeded},
		{"retry after error", many(retry, "r", leaf("1"), leaf("2")), "1=e 2=s", succeeded},
		{"retry: the last attempt counts", many(retry, "r", leaf("1"), leaf("2")), "1=s 2=f", succeeded},
		{"retry all failed", many(retry, "r", leaf("1"), leaf("2")), "1=e 2=f", failed},
		{"retry last errored", many(retry, "r", leaf("1"), leaf("2")), "1=f 2=e", errored},
		{"retry stops on abort", many(retry, "r", leaf("1"), leaf("2")), "1=a", aborted},
		{"retry: next attempt's pod died", many(retry, "r", leaf("1"), leaf("2")), "1=f", errored},
		{"retry cancelled before next attempt", many(retry, "r", leaf("1"), leaf("2")), "1=f 2=n", aborted},

		{"try swallows failure", wrap(try, "t", leaf("1")), "1=f", succeeded},
		{"try swallows error", wrap(try, "t", leaf("1")), "1=e", succeeded},
		{"try swallows a dead pod", wrap(try, "t", leaf("1")), "", succeeded},
		{"try keeps abort", wrap(try, "t", leaf("1")), "1=a", aborted},
		{"try of never ran", wrap(try, "t", leaf("1")), "1=n", neverRan},
		{"do continues after try", many(do, "d", wrap(try, "t", leaf("1")), leaf("2")), "1=f 2=s", succeeded},

		{"timeout passes through a timed-out failure", wrap(timeout, "t", leaf("1")), "1=f", failed},
		{"timeout passes success", wrap(timeout, "t", leaf("1")), "1=s", succeeded},

		{"on_success hook result is the result", hook(onSuccess, "h", leaf("1"), leaf("2")), "1=s 2=f", failed},
		{"on_success hook succeeds", hook(onSuccess, "h", leaf("1"), leaf("2")), "1=s 2=s", succeeded},
		{"on_success hook not run on failure", hook(onSuccess, "h", leaf("1"), leaf("2")), "1=f", failed},
		{"on_success hook not run on error", hook(onSuccess, "h", leaf("1"), leaf("2")), "1=e", errored},
		{"on_success hook pod died", hook(onSuccess, "h", leaf("1"), leaf("2")), "1=s", errored},

		{"on_failure: still failed when the hook succeeds", hook(onFailure, "h", leaf("1"), leaf("2")), "1=f 2=s", failed},
		{"on_failure: still failed when the hook fails", hook(onFailure, "h", leaf("1"), leaf("2")), "1=f 2=f", failed},
		{"on_failure: hook error errors", hook(onFailure, "h", leaf("1"), leaf("2")), "1=f 2=e", errored},
		{"on_failure: hook abort aborts", hook(onFailure, "h", leaf("1"), leaf("2")), "1=f 2=a", aborted},
		{"on_failure: hook pod died errors", hook(onFailure, "h", leaf("1"), leaf("2")), "1=f", errored},
		{"on_failure: no hook on success", hook(onFailure, "h", leaf("1"), leaf("2")), "1=s", succeeded},
		{"on_failure: no hook on error", hook(onFailure, "h", leaf("1"), leaf("2")), "1=e", errored},

		{"on_error: stays errored when the hook succeeds", hook(onError, "h", leaf("1"), leaf("2")), "1=e 2=s", errored},
		{"on_error: stays errored when the hook fails", hook(onError, "h", leaf("1"), leaf("2")), "1=e 2=f", errored},
		{"on_error: no hook on failure", hook(onError, "h", leaf("1"), leaf("2")), "1=f", failed},
		{"on_error: no hook on abort", hook(onError, "h", leaf("1"), leaf("2")), "1=a", aborted},
		{"on_error: dead pod is an error", hook(onError, "h", leaf("1"), leaf("2")), "2=s", errored},

		{"on_abort: stays aborted", hook(onAbort, "h", leaf("1"), leaf("2")), "1=a 2=f", aborted},
		{"on_abort: no hook on failure", hook(onAbort, "h", leaf("1"), leaf("2")), "1=f", failed},
		{"on_abort: timeout is not an abort", hook(onAbort, "h", wrap(timeout, "t", leaf("1")), leaf("2")), "1=f", failed},

		{"ensure: both succeed", hook(ensure, "h", leaf("1"), leaf("2")), "1=s 2=s", succeeded},
		{"ensure: failing hook fails a success", hook(ensure, "h", leaf("1"), leaf("2")), "1=s 2=f", failed},
		{"ensure: erroring hook errors a success", hook(ensure, "h", leaf("1"), leaf("2")), "1=s 2=e", errored},
		{"ensure: step failure stays", hook(ensure, "h", leaf("1"), leaf("2")), "1=f 2=s", failed},
		{"ensure: step error stays", hook(ensure, "h", leaf("1"), leaf("2")), "1=e 2=f", errored},
		{"ensure: abort wins", hook(ensure, "h", leaf("1"), leaf("2")), "1=a 2=e", aborted},
		{"ensure: hook aborted", hook(ensure, "h", leaf("1"), leaf("2")), "1=s 2=a", aborted},
		{"ensure: hook pod died", hook(ensure, "h", leaf("1"), leaf("2")), "1=s", errored},
		{"ensure of a step that never ran", hook(ensure, "h", leaf("1"), leaf("2")), "1=n", neverRan},

		{
			"job hooks: ensure(on_error(on_abort(on_failure(on_success(do)))))",
			hook(ensure, "9", hook(onError, "8", hook(onAbort, "7", hook(onFailure, "6", hook(onSuccess, "5", seq, leaf("s")), leaf("f")), leaf("a")), leaf("e")), leaf("c")),
			"1=s 2=f f=s c=s", failed,
		},
		{
			"job hooks on success",
			hook(ensure, "9", hook(onError, "8", hook(onAbort, "7", hook(onFailure, "6", hook(onSuccess, "5", seq, leaf("s")), leaf("f")), leaf("a")), leaf("e")), leaf("c")),
			"1=s 2=s 3=s s=s c=s", succeeded,
		},
		{
			"job aborted mid-way: on_abort and ensure ran",
			hook(ensure, "9", hook(onError, "8", hook(onAbort, "7", hook(onFailure, "6", hook(onSuccess, "5", seq, leaf("s")), leaf("f")), leaf("a")), leaf("e")), leaf("c")),
			"1=s 2=a a=s c=s", aborted,
		},
		{
			"put then implicit get",
			many(do, "8", leaf("1"), hook(onSuccess, "7", leaf("5"), leaf("6"))),
			"1=s 5=s 6=f", failed,
		},
		{
			"parallel in a fail-fast group: a sibling that never started",
			failFast(many(inParallel, "p", leaf("1"), hook(onAbort, "h", leaf("2"), leaf("3")))),
			"1=e 2=n !p", errored,
		},
		{
			"retry of composites with their own hooks",
			many(retry, "r", hook(onFailure, "h1", leaf("1"), leaf("n1")), hook(onFailure, "h2", leaf("2"), leaf("n2"))),
			"1=f n1=s 2=s", succeeded,
		},
		{"broken wrapper is an error, not a panic", runspec.Node{ID: "t", Kind: try}, "", errored},
		{"unknown kind is an error", runspec.Node{ID: "t", Kind: "dance"}, "", errored},
		{"hook without its hook is an error", runspec.Node{ID: "h", Kind: onSuccess, Step: &runspec.Node{ID: "1", Kind: runspec.KindLeaf}}, "1=s", errored},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Final(tt.tree, facts(t, tt.facts))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Final (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPartial(t *testing.T) {
	seq := many(runspec.KindDo, "d", leaf("1"), leaf("2"))
	tests := []struct {
		name     string
		tree     runspec.Node
		facts    string
		want     runspec.Outcome
		wantDone bool
	}{
		{"nothing yet", seq, "", "", false},
		{"first done, second to come", seq, "1=s", "", false},
		{"failure ends the do", seq, "1=f", failed, true},
		{"all done", seq, "1=s 2=s", succeeded, true},
		{"on_failure hook still to run", hook(runspec.KindOnFailure, "h", leaf("1"), leaf("2")), "1=f", "", false},
		{"on_failure hook ran", hook(runspec.KindOnFailure, "h", leaf("1"), leaf("2")), "1=f 2=s", failed, true},
		{"on_failure no hook", hook(runspec.KindOnFailure, "h", leaf("1"), leaf("2")), "1=s", succeeded, true},
		{"on_error hook still to run", hook(runspec.KindOnError, "h", leaf("1"), leaf("2")), "1=e", "", false},
		{"on_abort hook still to run", hook(runspec.KindOnAbort, "h", leaf("1"), leaf("2")), "1=a", "", false},
		{"ensure hook still to run", hook(runspec.KindEnsure, "h", leaf("1"), leaf("2")), "1=s", "", false},
		{"parallel waits for all", many(runspec.KindInParallel, "p", leaf("1"), leaf("2")), "1=f", "", false},
		{"try of a failure", wrap(runspec.KindTry, "t", leaf("1")), "1=f", succeeded, true},
		{"retry: next attempt to come", many(runspec.KindRetry, "r", leaf("1"), leaf("2")), "1=f", "", false},
		{"slotted across waits for its present slots", slotted(many(runspec.KindAcross, "x", leaf("1"), leaf("2"), leaf("3"))), "1=s #x=2", "", false},
		{"slotted across done with its present slots", slotted(many(runspec.KindAcross, "x", leaf("1"), leaf("2"), leaf("3"))), "1=s 2=s #x=2", succeeded, true},
		{"slotted across before its count", slotted(many(runspec.KindAcross, "x", leaf("1"))), "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, done := Partial(tt.tree, facts(t, tt.facts))
			if got != tt.want || done != tt.wantDone {
				t.Errorf("Partial = %q, %t; want %q, %t", got, done, tt.want, tt.wantDone)
			}
		})
	}
}
