package cli

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConvertShortCredentials: a credential's value too short to be looked for in the
// objects, or a number spliced into a string, is in no file others may read: the files
// of a pipeline that uses it are its owner's only, and it is warned about (it was
// written mode 0644, unsaid: `ci:20240611@` in the PipelineRun).
func TestConvertShortCredentials(t *testing.T) {
	const p = `resources:
- name: repo
  type: git
  source: {uri: "https://ci:((git_password))@git.example.com/r.git"}
jobs:
- name: unit
  plan:
  - get: repo
`
	file := writeFile(t, "app.yml", p)
	tests := []struct {
		name    string
		vars    string // a vars file
		args    []string
		private bool // every file the owner's only
		warned  string
	}{
		{name: "a number spliced in", vars: "git_password: 20240611\n", warned: "git_password"},
		{name: "a short string", args: []string{"-v", "git_password=pw1"}, private: true, warned: "git_password"},
		{name: "a short number", vars: "git_password: 123\n", private: true, warned: "git_password"},
		{name: "left for run time"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			args := append([]string{"convert", file, "-o", dir}, tc.args...)
			if tc.vars != "" {
				args = append(args, "-l", writeFile(t, "vars.yml", tc.vars))
			}
			code, _, stderr := run(t, "", args...)
			if code != 0 {
				t.Fatalf("code %d: %s", code, stderr)
			}
			if got := strings.Join(plainTextWarnings(stderr), "\n"); (tc.warned != "") != strings.Contains(got, "(("+tc.warned+")) looks like a credential") {
				t.Errorf("warnings: %q, want one of ((%s)): %v", got, tc.warned, tc.warned != "")
			}
			held := 0
			for name, f := range filesOf(t, dir) {
				holds := strings.Contains(f.data, "ci:20240611@") || strings.Contains(f.data, "ci:pw1@") || strings.Contains(f.data, "ci:123@")
				if holds {
					held++
				}
				if (holds || tc.private) && f.mode != 0o600 {
					t.Errorf("%s holds the password, mode %v", name, f.mode)
				}
			}
			if tc.warned != "" && held == 0 {
				t.Errorf("no file holds the value: the vars were not applied")
			}
		})
	}
}

// file is a file's content and permissions.
type file struct {
	data string
	mode fs.FileMode
}

// filesOf reads the files of dir, by name.
func filesOf(t *testing.T, dir string) map[string]file {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]file{}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = file{data: string(data), mode: info.Mode().Perm()}
	}
	return out
}
