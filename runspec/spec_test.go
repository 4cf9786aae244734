package runspec

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEncodeDecodeRoundTrip(t *testing.T) {
	spec := Spec{
		Mode:   ModeGet,
		PlanID: "5/image-get",
		Name:   "repo",
		Build:  Build{ID: 42, Name: "7", TeamName: "main", PipelineName: "app", JobName: "unit", InstanceVars: map[string]any{"b": "x", "a": json.Number("1")}},
		Paths:  Paths{Volume: "/v"},
		Context: []Layer{
			{Kind: LayerTimeout, ID: "9", Duration: "1m"},
			{Kind: LayerFailFast, ID: "8", Child: &Node{ID: "5", Kind: KindLeaf}},
		},
		Get: &Get{Type: "git", Source: map[string]any{"uri": "((repo-uri))", "depth": json.Number("12345678901234567890")}, VersionFrom: "4"},
	}
	enc, err := spec.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(enc, "\n") {
		t.Errorf("encoding has a newline: %s", enc)
	}
	again, err := spec.Encode()
	if err != nil || again != enc {
		t.Errorf("encoding is not deterministic: %s vs %s (%v)", enc, again, err)
	}
	got, err := Decode(enc)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(spec, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	args, err := spec.Args()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"step", "--spec=" + enc}, args); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name, data, want string
	}{
		{"not json", `{`, "decoding runner spec"},
		{"trailing", `{"mode":"join","plan_id":"1","join":{"tree":{"id":"1","kind":"leaf"}}} {}`, "trailing data"},
		{"unknown field", `{"mode":"task","plan_id":"1","task":{},"nope":1}`, "unknown field"},
		{"unknown mode", `{"mode":"dance","plan_id":"1"}`, `unknown mode "dance"`},
		{"missing payload", `{"mode":"get","plan_id":"1"}`, `mode get needs a "get" payload`},
		{"extra payload", `{"mode":"get","plan_id":"1","get":{"type":"git"},"put":{"type":"git"}}`, `mode get has a "put" payload`},
		{"no plan id", `{"mode":"task","task":{}}`, "plan_id is empty"},
		{"latest and a version", `{"mode":"get","plan_id":"1","get":{"type":"git","version":{"v":"1"},"latest":true}}`, "latest with a version"},
		{"latest and version_from", `{"mode":"get","plan_id":"1","get":{"type":"git","version_from":"0","latest":true}}`, "latest with a version"},
		{"bad layer", `{"mode":"task","plan_id":"1","task":{},"context":[{"kind":"fail_fast","id":"2"}]}`, "needs its child"},
		{"bad tree", `{"mode":"join","plan_id":"1","join":{"tree":{"id":"1","kind":"ensure","step":{"id":"2","kind":"leaf"}}}}`, "has step true and hook false"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode(tt.data)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Decode error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestEscape(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "%"},
		{"5", "5"},
		{"5/image-get", "5%2Fimage-get"},
		{"a/0/1", "a%2F0%2F1"},
		{"..", "%2E."},
		{".hidden", "%2Ehidden"},
		{"50%", "50%25"},
		{"my_task.v2", "my_task.v2"},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		got := Escape(tt.in)
		if got != tt.want {
			t.Errorf("Escape(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if other, dup := seen[got]; dup {
			t.Errorf("Escape(%q) = Escape(%q) = %q", tt.in, other, got)
		}
		seen[got] = tt.in
	}
}

func TestOutcomeExitCodes(t *testing.T) {
	got := map[Outcome]int{}
	for _, o := range []Outcome{Succeeded, Failed, Errored, Aborted, NeverRan} {
		if p, ok := ParseOutcome(string(o)); !ok || p != o {
			t.Errorf("ParseOutcome(%q) = %q, %t", o, p, ok)
		}
		got[o] = o.ExitCode()
	}
	want := map[Outcome]int{Succeeded: 0, Failed: 1, Errored: 2, Aborted: 3, NeverRan: 4}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("exit codes (-want +got):\n%s", diff)
	}
	if _, ok := ParseOutcome("pending"); ok {
		t.Error("ParseOutcome accepted pending")
	}
}

func TestRegistryImageType(t *testing.T) {
	for typ, want := range map[string]bool{"registry-image": true, "docker-image": true, "git": false, "mock": false, "": false, "Registry-Image": false} {
		if got := RegistryImageType(typ); got != want {
			t.Errorf("RegistryImageType(%q) = %v, want %v", typ, got, want)
		}
	}
}

// A spec's build is its name; the build's context gives the rest, and never replaces what
// the spec says.
func TestBuildComplete(t *testing.T) {
	b := Build{Name: "7"}
	if err := b.Complete(`{"team":"main","pipeline":"app","instance_vars":{"n":1},"job":"unit","external_url":"https://ci","check":true}`); err != nil {
		t.Fatal(err)
	}
	want := Build{Name: "7", TeamName: "main", PipelineName: "app", InstanceVars: map[string]any{"n": json.Number("1")}, JobName: "unit", ExternalURL: "https://ci", Check: true}
	if diff := cmp.Diff(want, b); diff != "" {
		t.Errorf("completed build (-want +got):\n%s", diff)
	}

	own := Build{Name: "8", TeamName: "ops", JobName: "own"}
	if err := own.Complete(`{"name":"1","team":"main","pipeline":"app","job":"unit"}`); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Build{Name: "8", TeamName: "ops", PipelineName: "app", JobName: "own"}, own); diff != "" {
		t.Errorf("a spec's own fields (-want +got):\n%s", diff)
	}

	none := Build{Name: "9"}
	if err := none.Complete(""); err != nil || !cmp.Equal(none, Build{Name: "9"}) {
		t.Errorf("no context: %+v, %v", none, err)
	}
	if err := none.Complete(`{"team":`); err == nil || !strings.Contains(err.Error(), "build's context") {
		t.Errorf("a context that is not JSON: err = %v", err)
	}
}
