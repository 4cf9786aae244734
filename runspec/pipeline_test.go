package runspec

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPipelineFrame(t *testing.T) {
	p := PipelineToSet{Team: "other", Pipeline: "child", InstanceVars: map[string]any{"n": json.Number("1")},
		Config: json.RawMessage(`{"jobs":[{"name":"j"}]}`), Warnings: []string{"WARNING: x"}}
	frame, err := p.Frame()
	if err != nil {
		t.Fatal(err)
	}
	line := string(frame)
	if !strings.HasSuffix(line, "\x07\n") || strings.Count(line, "\n") != 1 || !IsPipelineFrame(line) {
		t.Fatalf("frame %q: want one OSC line", line)
	}
	got, err := ParsePipelineFrame(line)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(p, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}

	tests := []struct {
		name, line, wantErr string
	}{
		{"not a frame", "setting pipeline: child\n", "not a set-pipeline frame"},
		{"cut short", line[:len(line)-3], "cut short"},
		{"other version", strings.Replace(line, ";set-pipeline;1;", ";set-pipeline;2;", 1), `version "2"`},
		{"altered payload", strings.Replace(line, ";set-pipeline;1;", ";set-pipeline;1;!", 1), "illegal base64"},
		{"no pipeline", frameOf(t, PipelineToSet{Config: json.RawMessage(`{}`)}), "names no pipeline"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParsePipelineFrame(tt.line)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %v, want one with %q", err, tt.wantErr)
			}
		})
	}
}

func frameOf(t *testing.T, p PipelineToSet) string {
	t.Helper()
	f, err := p.Frame()
	if err != nil {
		t.Fatal(err)
	}
	return string(f)
}

func TestVersionsFrame(t *testing.T) {
	v := CheckedVersions{{"ref": "a"}, {"ref": "b", "path": "x;y\x07"}}
	frame, err := v.Frame()
	if err != nil {
		t.Fatal(err)
	}
	line := string(frame)
	if !strings.HasSuffix(line, "\x07\n") || strings.Count(line, "\n") != 1 || strings.Count(line, "\x07") != 1 || !IsVersionsFrame(line) || IsPipelineFrame(line) {
		t.Fatalf("frame %q: want one OSC line, a versions frame alone", line)
	}
	got, err := ParseVersionsFrame(strings.TrimSuffix(line, "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(v, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	pipeline := frameOf(t, PipelineToSet{Pipeline: "p", Config: json.RawMessage(`{}`)})
	for _, tt := range []struct{ name, line, wantErr string }{
		{"a set-pipeline frame", pipeline, "not a check-versions frame"},
		{"cut short", line[:len(line)-3], "cut short"},
		{"other version", strings.Replace(line, ";check-versions;1;", ";check-versions;2;", 1), `version "2"`},
		{"none", string(must(CheckedVersions{}.Frame())), "no versions"},
		{"a null one", string(must(CheckedVersions{{"ref": "a"}, nil}.Frame())), "a null one"},
	} {
		if _, err := ParseVersionsFrame(tt.line); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%s: error %v, want one with %q", tt.name, err, tt.wantErr)
		}
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
