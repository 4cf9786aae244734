package runner

import (
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

func TestDetectInputs(t *testing.T) {
	params := map[string]any{
		"a": "built/image.tar",
		"b": "./src/x",
		"c": "../../up/x",
		"d": []any{"list/1", map[string]any{"e": "nested/y"}},
		"f": 3,
		"g": "/abs/path",
	}
	want := []string{"built", "src", "up", "list", "nested", "abs"}
	if diff := cmp.Diff(want, detectInputs(params)); diff != "" {
		t.Errorf("detectInputs (-want +got):\n%s", diff)
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
