package outdir

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// faultyFS is the OS's file system, but for the nth call of one operation, which fails.
type faultyFS struct {
	osFS
	op    string
	n     int
	calls map[string]int
	// beforeExchange runs before an exchange, as another process would.
	beforeExchange func()
}

var _ fileSystem = (*faultyFS)(nil)

var errInjected = errors.New("injected failure")

func (f *faultyFS) fail(op string) error {
	if f.calls == nil {
		f.calls = map[string]int{}
	}
	f.calls[op]++
	if op == f.op && f.calls[op] == f.n {
		return fmt.Errorf("%s #%d: %w", op, f.n, errInjected)
	}
	return nil
}

func (f *faultyFS) WriteFile(name string, data []byte, perm fs.FileMode) error {
	if err := f.fail("WriteFile"); err != nil {
		return err
	}
	return f.osFS.WriteFile(name, data, perm)
}

func (f *faultyFS) Rename(oldpath, newpath string) error {
	if err := f.fail("Rename"); err != nil {
		return err
	}
	return f.osFS.Rename(oldpath, newpath)
}

func (f *faultyFS) Link(oldname, newname string) error {
	if err := f.fail("Link"); err != nil {
		return err
	}
	return f.osFS.Link(oldname, newname)
}

func (f *faultyFS) Exchange(a, b string) error {
	if err := f.fail("Exchange"); err != nil {
		return err
	}
	if f.beforeExchange != nil {
		f.beforeExchange()
	}
	return f.osFS.Exchange(a, b)
}

// snapshot is every entry under root: a file's mode and content, a directory's mode, a
// link's target.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			out[rel] = "-> " + target
		case d.IsDir():
			out[rel] = info.Mode().String()
		default:
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			out[rel] = info.Mode().String() + " " + string(data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// layout makes files (content by path; a path ending in / is a directory) under root.
func layout(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for path, content := range files {
		full := filepath.Join(root, path)
		if strings.HasSuffix(path, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(full, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

var newSet = []File{
	{Name: "task-a.yaml", Data: []byte("task a v2\n"), Perm: 0o644},
	{Name: "pipeline-p-one.yaml", Data: []byte("one v2\n"), Perm: 0o600},
	{Name: "pipeline-p-three.yaml", Data: []byte("three v1\n"), Perm: 0o644},
}

// before is a directory of an earlier conversion: job two is gone since, README.md is
// the user's.
var before = map[string]string{
	"task-a.yaml":         "task a v1\n",
	"pipeline-p-one.yaml": "one v1\n",
	"pipeline-p-two.yaml": "two v1\n",
	"README.md":           "mine\n",
}

var remove = []string{"pipeline-p-two.yaml"}

// after is before once newSet replaced it.
func after(extra map[string]string) map[string]string {
	want := map[string]string{
		".":                     "drwxr-xr-x",
		"task-a.yaml":           "-rw-r--r-- task a v2\n",
		"pipeline-p-one.yaml":   "-rw------- one v2\n",
		"pipeline-p-three.yaml": "-rw-r--r-- three v1\n",
		"README.md":             "-rw-r--r-- mine\n",
	}
	for k, v := range extra {
		want[k] = v
	}
	return want
}

func TestReplaceFailsAtomically(t *testing.T) {
	tests := []struct {
		name string
		// dir is what the directory holds first; nil: it does not exist.
		dir   map[string]string
		op    string
		n     int
		wantN map[string]int // the operations done, where it matters which path was taken
	}{
		{name: "new directory: second file", op: "WriteFile", n: 2},
		{name: "new directory: renaming it into place", op: "Rename", n: 1},
		{name: "swap: first file", dir: before, op: "WriteFile", n: 1},
		{name: "swap: last file", dir: before, op: "WriteFile", n: 3},
		{name: "in place: second file", dir: withSubdir(before), op: "WriteFile", n: 2},
		{name: "in place: first rename", dir: withSubdir(before), op: "Rename", n: 1},
		{name: "in place: a rename part-way", dir: withSubdir(before), op: "Rename", n: 3},
		{name: "in place: removing the stale file", dir: withSubdir(before), op: "Rename", n: 6},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "out")
			if tc.dir != nil {
				layout(t, dir, tc.dir)
			}
			was := snapshot(t, root)
			fsys := &faultyFS{op: tc.op, n: tc.n}
			err := replace(context.Background(), fsys, dir, newSet, remove)
			if !errors.Is(err, errInjected) {
				t.Fatalf("replace: %v, want the injected failure", err)
			}
			if diff := cmp.Diff(was, snapshot(t, root)); diff != "" {
				t.Errorf("the directory changed (-want +got):\n%s", diff)
			}
		})
	}
}

func withoutReadme(m map[string]string) map[string]string {
	delete(m, "README.md")
	return m
}

func withSubdir(m map[string]string) map[string]string {
	out := map[string]string{"charts/": ""}
	for k, v := range m {
		out[k] = v
	}
	return out
}

func TestReplace(t *testing.T) {
	canSwap := exchangeWorks(t)
	tests := []struct {
		name  string
		dir   map[string]string
		op    string // an operation that fails (the rest carries on another way)
		n     int
		want  map[string]string
		swaps bool // the directory is swapped in one step
	}{
		{name: "new directory", want: withoutReadme(after(nil))},
		{name: "swap", dir: before, want: after(nil), swaps: canSwap},
		{name: "exchange fails: in place", dir: before, op: "Exchange", n: 1, want: after(nil)},
		{name: "no hard link: in place", dir: before, op: "Link", n: 1, want: after(nil)},
		{name: "a subdirectory: in place", dir: withSubdir(before), want: after(map[string]string{"charts": "drwxr-xr-x"})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "out")
			var was fs.FileInfo
			if tc.dir != nil {
				layout(t, dir, tc.dir)
				var err error
				if was, err = os.Stat(dir); err != nil {
					t.Fatal(err)
				}
			}
			fsys := &faultyFS{op: tc.op, n: tc.n}
			if err := replace(context.Background(), fsys, dir, newSet, remove); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, snapshot(t, dir)); diff != "" {
				t.Errorf("directory (-want +got):\n%s", diff)
			}
			if was != nil {
				now, err := os.Stat(dir)
				if err != nil {
					t.Fatal(err)
				}
				if swapped := !os.SameFile(was, now); swapped != tc.swaps {
					t.Errorf("swapped = %v, want %v", swapped, tc.swaps)
				}
			}
			entries, err := os.ReadDir(root)
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != 1 {
				t.Errorf("left beside the directory: %v", entries)
			}
		})
	}
}

// TestReplaceKeepsNewcomers checks that a file created in the directory while the new one
// is prepared is not lost with the old one.
func TestReplaceKeepsNewcomers(t *testing.T) {
	if !exchangeWorks(t) {
		t.Skip("no RENAME_EXCHANGE here")
	}
	dir := filepath.Join(t.TempDir(), "out")
	layout(t, dir, before)
	fsys := &faultyFS{beforeExchange: func() { layout(t, dir, map[string]string{"notes.txt": "new\n"}) }}
	if err := replace(context.Background(), fsys, dir, newSet, remove); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(after(map[string]string{"notes.txt": "-rw-r--r-- new\n"}), snapshot(t, dir)); diff != "" {
		t.Errorf("directory (-want +got):\n%s", diff)
	}
}

func TestReplaceThroughSymlink(t *testing.T) {
	root := t.TempDir()
	layout(t, filepath.Join(root, "real"), before)
	link := filepath.Join(root, "out")
	if err := os.Symlink("real", link); err != nil {
		t.Fatal(err)
	}
	if err := Replace(context.Background(), link, newSet, remove); err != nil {
		t.Fatal(err)
	}
	if target, err := os.Readlink(link); err != nil || target != "real" {
		t.Errorf("the link is now %q, %v", target, err)
	}
	if diff := cmp.Diff(after(nil), snapshot(t, filepath.Join(root, "real"))); diff != "" {
		t.Errorf("directory (-want +got):\n%s", diff)
	}
}

func TestReplaceErrors(t *testing.T) {
	tests := []struct {
		name   string
		dir    map[string]string
		files  []File
		remove []string
		want   string
	}{
		{
			name:  "a directory in the way",
			dir:   map[string]string{"task-a.yaml/": "", "README.md": "mine\n"},
			files: newSet,
			want:  "task-a.yaml is in the way: it is not a regular file; move it away",
		},
		{
			name:  "a path for a name",
			files: []File{{Name: "../x.yaml"}},
			want:  `invalid file name "../x.yaml"`,
		},
		{
			name:  "twice the same name",
			files: []File{{Name: "x.yaml"}, {Name: "x.yaml"}},
			want:  "two files named x.yaml",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "out")
			layout(t, dir, tc.dir)
			was := snapshot(t, root)
			err := Replace(context.Background(), dir, tc.files, tc.remove)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want it to say %q", err, tc.want)
			}
			if diff := cmp.Diff(was, snapshot(t, root)); diff != "" {
				t.Errorf("the directory changed (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReplaceNotADirectory(t *testing.T) {
	file := filepath.Join(t.TempDir(), "out")
	layout(t, filepath.Dir(file), map[string]string{"out": "x"})
	if err := Replace(context.Background(), file, newSet, nil); err == nil || !strings.Contains(err.Error(), "is not a directory") {
		t.Errorf("error = %v", err)
	}
}

// exchangeWorks reports whether this system swaps directories in one step.
func exchangeWorks(t *testing.T) bool {
	t.Helper()
	root := t.TempDir()
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	layout(t, root, map[string]string{"a/": "", "b/": ""})
	return exchange(a, b) == nil
}

// TestReplaceWorkingDirectory checks that the working directory is replaced in place, not
// swapped: the shell that ran `convert -o .` stays in the directory it sees.
func TestReplaceWorkingDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	layout(t, dir, before)
	t.Chdir(dir)
	fsys := &faultyFS{}
	if err := replace(context.Background(), fsys, ".", newSet, remove); err != nil {
		t.Fatal(err)
	}
	if fsys.calls["Exchange"] != 0 {
		t.Errorf("the working directory was swapped")
	}
	if diff := cmp.Diff(after(nil), snapshot(t, ".")); diff != "" {
		t.Errorf("directory (-want +got):\n%s", diff)
	}
}
