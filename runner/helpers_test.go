package runner

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/concourse-tekton/concourse-tekton/runner/state"
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

func TestResolvePath(t *testing.T) {
	tests := []struct{ in, want string }{
		{"repo", "/tmp/build/x/repo"},
		{"../repo", "/tmp/build/x/repo"},
		{"a/../b", "/tmp/build/x/a/b"},
		{"a..b", "/tmp/build/x/ab"},
		{"/abs/../path", "/path"},
		{"", "/tmp/build/x"},
	}
	for _, tt := range tests {
		if got := resolvePath("/tmp/build/x", tt.in); got != tt.want {
			t.Errorf("resolvePath(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestWorkDir(t *testing.T) {
	// sha256("test") is 9f86d081884c...: the first 4 bytes, in hex.
	if got := workDir("/tmp/build", "test"); got != "/tmp/build/9f86d081" {
		t.Errorf("workDir(test) = %q", got)
	}
}

func TestBuildURL(t *testing.T) {
	tests := []struct {
		name string
		b    runspec.Build
		want string
	}{
		{"job build", runspec.Build{ExternalURL: "https://ci", TeamName: "main", PipelineName: "app", JobName: "unit", Name: "7", ID: 42}, "https://ci/teams/main/pipelines/app/jobs/unit/builds/7"},
		{"instanced pipeline", runspec.Build{ExternalURL: "https://ci", TeamName: "main", PipelineName: "app", JobName: "unit", Name: "7", InstanceVars: map[string]any{"branch": "main", "n": 1}}, "https://ci/teams/main/pipelines/app/jobs/unit/builds/7?vars.branch=%22main%22&vars.n=1"},
		{"one-off build", runspec.Build{ExternalURL: "https://ci", ID: 42, Name: "42"}, "https://ci/builds/42"},
	}
	for _, tt := range tests {
		if got := buildURL(tt.b); got != tt.want {
			t.Errorf("%s: buildURL = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestParseVar(t *testing.T) {
	tests := []struct {
		file, format, data string
		want               any
		wantErr            bool
	}{
		{"v.txt", "", "  x \n", "x", false},
		{"v", "raw", " x\n", " x\n", false},
		{"v.json", "", `"s"`, "s", false},
		{"v.json", "", `[1, 2] 3`, nil, true},
		{"v.yaml", "", "a: b\n", map[string]any{"a": "b"}, false},
		{"v.txt", "yml", "- 1\n", []any{int64(1)}, false},
		{"v.txt", "json", "{", nil, true},
		{"v.txt", "toml", "", nil, true},
	}
	for _, tt := range tests {
		got, err := parseVar(tt.file, tt.format, []byte(tt.data))
		if (err != nil) != tt.wantErr {
			t.Errorf("parseVar(%s, %s) error = %v", tt.file, tt.format, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("parseVar(%s, %s) (-want +got):\n%s", tt.file, tt.format, diff)
		}
	}
}

func TestResultsWithin(t *testing.T) {
	field := func(name string, size int) state.MetadataField {
		return state.MetadataField{Name: name, Value: strings.Repeat("x", size)}
	}
	tests := []struct {
		name                      string
		r                         state.Result
		wantVersion, wantMetadata string
	}{
		{"small", state.Result{Version: map[string]string{"v": "1"}, Metadata: []state.MetadataField{{Name: "a", Value: "b"}}}, `{"v":"1"}`, `[{"name":"a","value":"b"}]`},
		{"no metadata", state.Result{Version: map[string]string{"v": "1"}}, `{"v":"1"}`, `[]`},
		{"metadata cut", state.Result{Version: map[string]string{"v": "1"}, Metadata: []state.MetadataField{field("a", 10), field("b", 100)}}, `{"v":"1"}`, `[{"name":"a","value":"xxxxxxxxxx"}]`},
		{"huge version", state.Result{Version: map[string]string{"v": strings.Repeat("y", 200)}}, `{}`, `[]`},
	}
	for _, tt := range tests {
		v, m, err := resultsWithin(tt.r, 80)
		if err != nil || string(v) != tt.wantVersion || string(m) != tt.wantMetadata {
			t.Errorf("%s: resultsWithin = %s, %s, %v; want %s, %s", tt.name, v, m, err, tt.wantVersion, tt.wantMetadata)
		}
	}
}

func TestCheckResultsWithin(t *testing.T) {
	v := func(s string) map[string]string { return map[string]string{"v": s} }
	// {"v":"1"} is 15 bytes as a JSON string; in a list, 13 and a comma.
	tests := []struct {
		name                  string
		versions              []map[string]string
		budget                int
		wantVersion, wantList string
		wantKept              int
		wantErr               bool
	}{
		{"none", nil, 100, `null`, `[]`, 0, false},
		{"one", []map[string]string{v("1")}, 100, `{"v":"1"}`, `[{"v":"1"}]`, 1, false},
		{"all fit, in order", []map[string]string{v("1"), v("2"), v("3")}, 100, `{"v":"3"}`, `[{"v":"1"},{"v":"2"},{"v":"3"}]`, 3, false},
		// 15 (version) + 4 (list's quotes and brackets) + 13 + 14 = 46: two fit, not three.
		{"the newest that fit", []map[string]string{v("1"), v("2"), v("3")}, 46, `{"v":"3"}`, `[{"v":"2"},{"v":"3"}]`, 2, false},
		{"one byte short of two", []map[string]string{v("1"), v("2"), v("3")}, 45, `{"v":"3"}`, `[{"v":"3"}]`, 1, false},
		{"always the last", []map[string]string{v("1"), v("2")}, 32, `{"v":"2"}`, `[{"v":"2"}]`, 1, false},
		{"the last does not fit", []map[string]string{v("1"), v("2")}, 31, ``, ``, 0, true},
		// Quotes and HTML characters take more room escaped than they do in the version.
		{"counted escaped", []map[string]string{v(`"<`), v(`"<`)}, 2*resultSize([]byte(`{"v":"\"\u003c"}`)) + 2, `{"v":"\"\u003c"}`, `[{"v":"\"\u003c"}]`, 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			version, list, kept, err := checkResultsWithin(tt.versions, tt.budget)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, want error %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if string(version) != tt.wantVersion || string(list) != tt.wantList || kept != tt.wantKept {
				t.Errorf("checkResultsWithin = %s, %s, %d; want %s, %s, %d", version, list, kept, tt.wantVersion, tt.wantList, tt.wantKept)
			}
			if size := resultSize(version) + resultSize(list); size > tt.budget {
				t.Errorf("results take %d bytes, over the budget of %d", size, tt.budget)
			}
		})
	}
}

func TestCheckResultsWithinMany(t *testing.T) {
	// A check from an old version: thousands of versions, the newest kept in order.
	var versions []map[string]string
	for i := range 5000 {
		versions = append(versions, map[string]string{"ref": strings.Repeat("0", 36) + fmt.Sprintf("%04d", i)})
	}
	version, list, kept, err := checkResultsWithin(versions, resultBudget)
	if err != nil {
		t.Fatal(err)
	}
	var got []map[string]string
	if err := json.Unmarshal(list, &got); err != nil {
		t.Fatal(err)
	}
	if kept != len(got) || kept < 40 || kept >= len(versions) {
		t.Fatalf("kept %d, listed %d of %d", kept, len(got), len(versions))
	}
	if diff := cmp.Diff(versions[len(versions)-kept:], got); diff != "" {
		t.Errorf("versions listed (-want +got):\n%s", diff)
	}
	if string(version) != `{"ref":"0000000000000000000000000000000000004999"}` {
		t.Errorf("version = %s, want the last", version)
	}
	if size := resultSize(version) + resultSize(list); size > resultBudget {
		t.Errorf("results take %d bytes, over %d", size, resultBudget)
	}
	// One more would not have fit.
	more, _ := json.Marshal(versions[len(versions)-kept-1:])
	if resultSize(version)+resultSize(more) <= resultBudget {
		t.Errorf("kept %d, but %d fit", kept, kept+1)
	}
}
