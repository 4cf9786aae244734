package state

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/concourse-tekton/concourse-tekton/runspec"
)

func TestOutcomes(t *testing.T) {
	d := Dir{Path: t.TempDir()}
	if err := d.WriteOutcome("5/image-get", runspec.Failed); err != nil {
		t.Fatal(err)
	}
	if err := d.WriteOutcome("6", runspec.Succeeded); err != nil {
		t.Fatal(err)
	}
	if err := d.WriteOutcome("6", runspec.Aborted); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(d.file(runspec.OutcomesDir, "7"), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := d.Outcomes([]string{"5/image-get", "6", "7", "8"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]runspec.Outcome{"5/image-get": runspec.Failed, "6": runspec.Aborted, "7": runspec.Errored}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
}

func TestMarkers(t *testing.T) {
	d := Dir{Path: t.TempDir()}
	if d.Aborted() || d.Fired("g") || d.Started("c") {
		t.Fatal("markers set in an empty directory")
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	for range 2 {
		if err := d.Abort(now); err != nil {
			t.Fatal(err)
		}
		if err := d.Fire("g", "c1"); err != nil {
			t.Fatal(err)
		}
		if err := d.ClaimStart("c"); err != nil {
			t.Fatal(err)
		}
	}
	if !d.Aborted() || !d.Fired("g") || !d.Started("c") {
		t.Fatal("markers not set")
	}
	if diff := cmp.Diff(map[string]bool{"g": true}, d.FiredGroups([]string{"g", "h"})); diff != "" {
		t.Errorf("fired groups (-want +got):\n%s", diff)
	}
}

func TestDeadlineStartIsWrittenOnce(t *testing.T) {
	d := Dir{Path: t.TempDir()}
	first := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	var wg sync.WaitGroup
	starts := make([]time.Time, 8)
	for i := range starts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := d.DeadlineStart("a/0/1", first.Add(time.Duration(i)*time.Second))
			if err != nil {
				t.Error(err)
			}
			starts[i] = s
		}()
	}
	wg.Wait()
	for _, s := range starts {
		if !s.Equal(starts[0]) {
			t.Fatalf("different starts: %v", starts)
		}
	}
	again, err := d.DeadlineStart("a/0/1", first.Add(time.Hour))
	if err != nil || !again.Equal(starts[0]) {
		t.Errorf("second start = %v, %v; want %v", again, err, starts[0])
	}
	if err := os.WriteFile(d.file(runspec.DeadlinesDir, "bad"), []byte("yesterday"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := d.DeadlineStart("bad", first); err == nil {
		t.Error("a malformed start was accepted")
	}
}

func TestDetach(t *testing.T) {
	d := Dir{Path: t.TempDir()}
	for _, asked := range []bool{true, false} {
		got, err := d.Detach("h", asked)
		if err != nil || !got {
			t.Errorf("Detach(h, %t) = %t, %v; want the first answer, true", asked, got, err)
		}
	}
	if got, _ := d.Detach("k", false); got {
		t.Error("Detach(k, false) = true")
	}
}

func TestArtifactScopes(t *testing.T) {
	d := Dir{Path: t.TempDir()}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(d.RegisterArtifact(nil, "repo", "volumes/1/repo"))
	must(d.RegisterArtifact(nil, "out", "volumes/2/out"))
	must(d.RegisterArtifact(nil, "out", "volumes/3/out"))
	must(d.RegisterArtifact([]string{"a/0"}, "repo", "volumes/a%2F0%2F1/repo"))
	must(d.RegisterArtifact([]string{"a/0"}, "inner", "volumes/a%2F0%2F2/inner"))

	tests := []struct {
		name  string
		scope []string
		want  map[string]string
	}{
		{"root", nil, map[string]string{"repo": "volumes/1/repo", "out": "volumes/3/out"}},
		{"substep sees its own first", []string{"a/0"}, map[string]string{"repo": "volumes/a%2F0%2F1/repo", "out": "volumes/3/out", "inner": "volumes/a%2F0%2F2/inner"}},
		{"another substep", []string{"a/1"}, map[string]string{"repo": "volumes/1/repo", "out": "volumes/3/out"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := d.Artifacts(tt.scope)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("artifacts (-want +got):\n%s", diff)
			}
			for name, want := range tt.want {
				if p, ok, err := d.Artifact(tt.scope, name); err != nil || !ok || p != want {
					t.Errorf("Artifact(%s) = %q, %t, %v; want %q", name, p, ok, err, want)
				}
			}
		})
	}
	if _, ok, _ := d.Artifact(nil, "inner"); ok {
		t.Error("an artifact made inside an across is visible after it")
	}
}

func TestVarsAndResults(t *testing.T) {
	d := Dir{Path: t.TempDir()}
	v := Var{Value: map[string]any{"n": json.Number("12345678901234567890")}, Redact: true}
	if err := d.SetVar([]string{"a/0"}, "x", v); err != nil {
		t.Fatal(err)
	}
	got, ok, err := d.LookupVar([]string{"a/0"}, "x")
	if err != nil || !ok {
		t.Fatalf("LookupVar = %v, %t, %v", got, ok, err)
	}
	if diff := cmp.Diff(v, got); diff != "" {
		t.Errorf("var (-want +got):\n%s", diff)
	}
	if _, ok, _ := d.LookupVar(nil, "x"); ok {
		t.Error("a substep's var is visible at the root")
	}
	if err := d.SetVar(nil, "bad", Var{}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(d.scoped("", "vars", "bad"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.LookupVar(nil, "bad"); err == nil {
		t.Error("a malformed var was accepted")
	}

	r := Result{Version: map[string]string{"ref": "abc"}, Metadata: []MetadataField{{Name: "a", Value: "b"}}}
	if err := d.WriteResult("5", r); err != nil {
		t.Fatal(err)
	}
	back, ok, err := d.ReadResult("5")
	if err != nil || !ok {
		t.Fatalf("ReadResult = %v, %t, %v", back, ok, err)
	}
	if diff := cmp.Diff(r, back); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	if _, ok, err := d.ReadResult("6"); ok || err != nil {
		t.Errorf("ReadResult of nothing = %t, %v", ok, err)
	}
}

func TestScopeVars(t *testing.T) {
	d := Dir{Path: t.TempDir()}
	set := func(scope []string, name string, v Var) {
		t.Helper()
		if err := d.SetVar(scope, name, v); err != nil {
			t.Fatal(err)
		}
	}
	if vs, err := d.ScopeVars([]string{"a/0"}); err != nil || len(vs) != 0 {
		t.Errorf("ScopeVars of an empty build = %v, %v", vs, err)
	}
	set(nil, "x", Var{Value: "root-x", Redact: true})
	set(nil, "shown", Var{Value: "root-shown"})
	set([]string{"a/0"}, "x", Var{Value: "inner-x", Redact: true})
	set([]string{"a/1"}, "y", Var{Value: "sibling-y", Redact: true})
	// A write under way leaves a temporary file beside the vars.
	if err := os.WriteFile(filepath.Join(filepath.Dir(d.scoped("", "vars", "x")), ".tmp-123"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := d.ScopeVars([]string{"a/0"})
	if err != nil {
		t.Fatal(err)
	}
	want := []Var{{Value: "inner-x", Redact: true}, {Value: "root-shown"}, {Value: "root-x", Redact: true}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ScopeVars (-want +got):\n%s", diff)
	}
	if err := os.WriteFile(d.scoped("", "vars", "bad"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := d.ScopeVars(nil); err == nil {
		t.Error("a malformed var was accepted")
	}
}

func TestUnescapeInvertsEscape(t *testing.T) {
	for _, s := range []string{"", "a/0/1", "..", "50%", "x y", "é"} {
		got, err := unescape(runspec.Escape(s))
		if err != nil || got != s {
			t.Errorf("unescape(Escape(%q)) = %q, %v", s, got, err)
		}
	}
	for _, bad := range []string{"%2", "%ZZ", "a%"} {
		if _, err := unescape(bad); err == nil {
			t.Errorf("unescape(%q) succeeded", bad)
		}
	}
}

func TestArtifactPathsStayInTheVolume(t *testing.T) {
	d := Dir{Path: t.TempDir()}
	if err := d.RegisterArtifact(nil, "evil", "../../../etc"); err != nil {
		t.Fatal(err)
	}
	if p, _, _ := d.Artifact(nil, "evil"); p != "etc" {
		t.Errorf("Artifact = %q, want etc", p)
	}
	if all, _ := d.Artifacts(nil); all["evil"] != "etc" {
		t.Errorf("Artifacts = %v", all)
	}
}

func TestSharedModes(t *testing.T) {
	d := Dir{Path: filepath.Join(t.TempDir(), "state")}
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	if err := d.WriteOutcome("1", runspec.Succeeded); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{
		d.Path: 0o777 | os.ModeDir,
		filepath.Join(d.Path, runspec.OutcomesDir):      0o777 | os.ModeDir,
		filepath.Join(d.Path, runspec.OutcomesDir, "1"): 0o666,
	} {
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode() != want {
			t.Errorf("%s has mode %v, want %v", path, info.Mode(), want)
		}
	}
}
