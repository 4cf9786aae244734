package git

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/concourse-tekton/concourse-tekton/e2e/resource/resourcetest"
)

func TestMain(m *testing.M) {
	if name, ok := resourcetest.ActingAsScript(); ok {
		os.Exit(Main(name, Env{Args: os.Args, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, TmpDir: os.TempDir()}))
	}
	os.Exit(m.Run())
}

// sh runs a shell snippet in dir with a fixed identity, for building fixtures.
func sh(t *testing.T, dir, script string) string {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=Ann", "GIT_AUTHOR_EMAIL=a@x.invalid",
		"GIT_COMMITTER_NAME=Ann", "GIT_COMMITTER_EMAIL=a@x.invalid", "HOME="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
	return strings.TrimSpace(string(out))
}

// origin makes a bare repository whose branch main holds three commits, and returns its
// file:// URL and the commits, oldest first.
func origin(t *testing.T) (string, []string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	sh(t, dir, "git init -q -b main work && git init -q --bare origin.git")
	var commits []string
	for _, msg := range []string{"one", "two", "three"} {
		commits = append(commits, sh(t, filepath.Join(dir, "work"), "echo "+msg+" > file && git add file && git commit -q -m "+msg+" && git rev-parse HEAD"))
	}
	sh(t, filepath.Join(dir, "work"), "git push -q ../origin.git main")
	return "file://" + filepath.Join(dir, "origin.git"), commits
}

func TestCheck(t *testing.T) {
	uri, c := origin(t)
	bin := resourcetest.Scripts(t)
	src := `"source":{"uri":"` + uri + `"}`
	for _, tc := range []struct {
		name, request string
		want          []Version
	}{
		{"newest without a version", `{` + src + `}`, []Version{{c[2]}}},
		{"from the given version on", `{` + src + `,"version":{"ref":"` + c[0] + `"}}`, []Version{{c[0]}, {c[1]}, {c[2]}}},
		{"the newest alone when the version is gone", `{` + src + `,"version":{"ref":"0123456789012345678901234567890123456789"}}`, []Version{{c[2]}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := resourcetest.Run(t, bin, "check", tc.request, nil)
			if !r.Succeeded(t, 0, "") {
				return
			}
			var got []Version
			r.Decode(t, &got)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("versions (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("no uri", func(t *testing.T) {
		resourcetest.Run(t, bin, "check", `{"source":{}}`, nil).Succeeded(t, 1, "source.uri is required")
	})
}

func TestInAndOut(t *testing.T) {
	uri, c := origin(t)
	bin := resourcetest.Scripts(t)
	dest := filepath.Join(t.TempDir(), "repo")
	r := resourcetest.Run(t, bin, "in", `{"source":{"uri":"`+uri+`"},"version":{"ref":"`+c[1]+`"}}`, nil, dest)
	if !r.Succeeded(t, 0, "") {
		return
	}
	var got Response
	r.Decode(t, &got)
	want := Response{Version: Version{c[1]}, Metadata: []MetadataField{{Name: "commit", Value: c[1]}, {Name: "author", Value: "Ann"}, {Name: "message", Value: "two"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("in (-want +got):\n%s", diff)
	}
	if b, _ := os.ReadFile(filepath.Join(dest, "file")); string(b) != "two\n" {
		t.Errorf("checked-out file holds %q, want the second commit's", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dest, ".git", "ref")); string(b) != c[1]+"\n" {
		t.Errorf(".git/ref holds %q", b)
	}

	// A task commits on top of what it got; out pushes it to the branch.
	sh(t, dest, "git checkout -q -b work && echo four > file && git commit -q -am four")
	r = resourcetest.Run(t, bin, "out", `{"source":{"uri":"`+uri+`","branch":"next"},"params":{"repository":"repo"}}`, nil, filepath.Dir(dest))
	if !r.Succeeded(t, 0, "") {
		return
	}
	r.Decode(t, &got)
	r = resourcetest.Run(t, bin, "check", `{"source":{"uri":"`+uri+`","branch":"next"}}`, nil)
	var newest []Version
	if r.Succeeded(t, 0, "") {
		r.Decode(t, &newest)
	}
	if diff := cmp.Diff([]Version{got.Version}, newest); diff != "" {
		t.Errorf("check after out (-want +got):\n%s", diff)
	}
	resourcetest.Run(t, bin, "out", `{"source":{"uri":"`+uri+`"},"params":{}}`, nil, dest).Succeeded(t, 1, "params.repository is required")
}
