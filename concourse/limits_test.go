package concourse

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// allocated is the number of bytes f allocates. Unlike a wall-clock bound, it does not
// depend on how loaded the machine is.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// aliasBomb is a 1 MB string aliased n times in a resource's source.
func aliasBomb(n int) string {
	var b strings.Builder
	b.WriteString("big: &big \"" + strings.Repeat("x", 1<<20) + "\"\n")
	b.WriteString("resources:\n- name: r\n  type: git\n  source:\n    a: [")
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("*big")
	}
	b.WriteString("]\njobs:\n- name: j\n  plan:\n  - get: r\n")
	return b.String()
}

// flowDo is a plan of n do steps nested in flow style, one line whatever n.
func flowDo(n int) string {
	return "jobs:\n- name: j\n  plan:\n  - " + strings.Repeat("{do: [", n) + "{task: t, file: f}" + strings.Repeat("]}", n) + "\n"
}

// blockDo is a plan of n do steps nested in block style.
func blockDo(n int) string {
	var b strings.Builder
	b.WriteString("jobs:\n- name: j\n  plan:\n")
	indent := "  "
	for range n {
		b.WriteString(indent + "- do:\n")
		indent += "  "
	}
	b.WriteString(indent + "- {task: t, file: f}\n")
	return b.String()
}

// laughs is the "billion laughs": each of n levels lists the one before ten times.
func laughs(n int) string {
	var b strings.Builder
	b.WriteString("l0: &l0 [a, a, a, a, a, a, a, a, a, a]\n")
	for i := 1; i <= n; i++ {
		p := fmt.Sprintf("*l%d", i-1)
		fmt.Fprintf(&b, "l%d: &l%d [%s]\n", i, i, strings.Repeat(p+", ", 9)+p)
	}
	b.WriteString("jobs: []\n")
	return b.String()
}

func TestLoaderLimits(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string
		// maxAlloc bounds what loading allocates, beyond the input: far below what these
		// inputs took before the limits (3 GB for the alias bomb, 8 GB for 4,900 do).
		maxAlloc uint64
	}{
		{
			name: "a 1 MB string aliased 400 times",
			yaml: aliasBomb(400),
			want: []string{`6:21: expanding alias *big here takes the document over the loader's limit of 4 MiB of text once aliases are expanded (an alias repeats its anchor's whole value each time it is used)`},
			// The YAML library reads the 1 MB string a few times over.
			maxAlloc: 32 << 20,
		},
		{
			name:     "aliases within the limits load",
			yaml:     aliasBomb(2),
			maxAlloc: 256 << 20,
		},
		{
			name:     "4,900 nested do",
			yaml:     flowDo(4900),
			want:     []string{`4:185: the document goes over the loader's limit of 64 levels of nested maps and lists here`},
			maxAlloc: 32 << 20,
		},
		{
			name:     "do nested in block style",
			yaml:     blockDo(40),
			want:     []string{`34:65: the document goes over the loader's limit of 64 levels of nested maps and lists here`},
			maxAlloc: 1 << 20,
		},
		{
			name: "depth reached through an alias is reported at the alias",
			yaml: "deep: &deep " + strings.Repeat("[", 40) + strings.Repeat("]", 40) + "\n" +
				"jobs: " + strings.Repeat("[", 30) + "*deep" + strings.Repeat("]", 30) + "\n",
			want:     []string{`2:37: expanding alias *deep here takes the document over the loader's limit of 64 levels of nested maps and lists once aliases are expanded (an alias repeats its anchor's whole value each time it is used)`},
			maxAlloc: 1 << 20,
		},
		{
			name:     "deeper than the YAML parser's own limit",
			yaml:     "jobs: " + strings.Repeat("[", 10_001) + strings.Repeat("]", 10_001) + "\n",
			want:     []string{`1:1: the document goes over the loader's limit of 64 levels of nested maps and lists here`},
			maxAlloc: 32 << 20,
		},
		{
			name:     "nesting within the limit loads",
			yaml:     flowDo(29),
			maxAlloc: 1 << 20,
		},
		{
			name:     "a 50 MB file without aliases is told about the file's size",
			yaml:     "jobs:\n" + strings.Repeat("# "+strings.Repeat("-", 1021)+"\n", 50<<10),
			want:     []string{`4097:1019: the file is 50.0 MiB, over the loader's limit of 4 MiB for a file (reached here)`},
			maxAlloc: 1 << 20,
		},
		{
			name: "600,000 values without aliases",
			yaml: "jobs: [" + strings.Repeat("0,", 600_000) + "0]\n",
			want: []string{`1:1000004: the document goes over the loader's limit of 500000 values here`},
			// The YAML library's tree of 1.2 MB of tiny values, before the limit is checked.
			maxAlloc: 512 << 20,
		},
		{
			name:     "billion laughs",
			yaml:     laughs(9),
			want:     []string{`6:20: expanding alias *l4 here takes the document over the loader's limit of 500000 values once aliases are expanded (an alias repeats its anchor's whole value each time it is used)`},
			maxAlloc: 256 << 20,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := []byte(tc.yaml)
			var diags Diagnostics
			alloc := allocated(func() { _, diags = ParsePipeline("p.yml", data, nil) })
			var got []string
			for _, d := range diags.Errors() {
				got = append(got, fmt.Sprintf("%d:%d: %s", d.Pos.Line, d.Pos.Col, d.Message))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if alloc > tc.maxAlloc {
				t.Errorf("loading allocated %d MiB, want at most %d MiB", alloc>>20, tc.maxAlloc>>20)
			}
			t.Logf("%d KiB in, %d KiB allocated", len(data)>>10, alloc>>10)
		})
	}
}

// TestDecodeErrorsAreBounded: each error of a job costs decoding it again, so there is a
// bound on how many are reported.
func TestDecodeErrorsAreBounded(t *testing.T) {
	yaml := "jobs:\n- name: j\n  plan:\n" + strings.Repeat("  - tsk: t\n", 3*maxDecodeErrors)
	_, diags := ParsePipeline("p.yml", []byte(yaml), nil)
	errs := diags.Errors()
	if len(errs) != maxDecodeErrors+1 {
		t.Fatalf("got %d errors, want %d:\n%v", len(errs), maxDecodeErrors+1, errs.Err())
	}
	want := fmt.Sprintf("stopped after %d errors here: fix these first", maxDecodeErrors)
	if got := errs[0]; got.Message != want || got.Pos != (Pos{Line: 2, Col: 3}) {
		t.Errorf("first error (sorted by position) = %v, want %q at 2:3", got, want)
	}
}
