package outdir

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// crashFS is the OS's file system, killed (a panic the test recovers) at the nth call of
// one operation: what is on disk then is what a SIGKILL would leave.
type crashFS struct {
	osFS
	op    string
	n     int
	calls int
}

type crashed struct{}

func (f *crashFS) crash(op string) {
	if op == f.op {
		if f.calls++; f.calls == f.n {
			panic(crashed{})
		}
	}
}

func (f *crashFS) WriteFile(name string, data []byte, perm os.FileMode) error {
	f.crash("WriteFile")
	return f.osFS.WriteFile(name, data, perm)
}

func (f *crashFS) Rename(oldpath, newpath string) error {
	f.crash("Rename")
	return f.osFS.Rename(oldpath, newpath)
}

// replaceUntilKilled runs replace on fsys and says whether it was killed.
func replaceUntilKilled(t *testing.T, fsys fileSystem, dir string) (killed bool) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(crashed); !ok {
				panic(r)
			}
			killed = true
		}
	}()
	if err := replace(context.Background(), fsys, dir, newSet, remove); err != nil {
		t.Fatal(err)
	}
	return false
}

// TestRecoverAfterKill kills an in-place Replace at every write and every rename: the next
// Replace of the directory first finds it as it was (killed before the journal was
// written) or as the killed one committed it (after), with nothing of the killed run left.
func TestRecoverAfterKill(t *testing.T) {
	old := map[string]string{".": "drwxr-xr-x", "charts": "drwxr-xr-x"}
	for k, v := range before {
		old[k] = "-rw-r--r-- " + v
	}
	for _, op := range []string{"WriteFile", "Rename"} {
		for n := 1; ; n++ {
			root := t.TempDir()
			dir := filepath.Join(root, "out")
			layout(t, dir, withSubdir(before))
			if !replaceUntilKilled(t, &crashFS{op: op, n: n}, dir) {
				if n == 1 {
					t.Fatalf("%s: replace made no call to kill it at", op)
				}
				break
			}
			// Killed before the journal (while writing), the directory is as it was;
			// killed while renaming, the next run finishes the renames.
			want := old
			if op == "Rename" {
				want = after(map[string]string{"charts": "drwxr-xr-x"})
			}
			if err := recoverLeftovers(osFS{}, dir, true); err != nil {
				t.Fatalf("%s #%d: recovering: %v", op, n, err)
			}
			if diff := cmp.Diff(want, snapshot(t, dir)); diff != "" {
				t.Errorf("%s #%d killed, then recovered (-want +got):\n%s", op, n, diff)
			}
		}
	}
}

// TestRecoverBeside: a Replace killed while it prepared a directory beside the one it
// replaces (a new one, or one swapped whole) leaves it; the next Replace removes it.
func TestRecoverBeside(t *testing.T) {
	for name, files := range map[string]map[string]string{"new": nil, "swapped": before} {
		t.Run(name, func(t *testing.T) {
			root, dir, was := outDir(t, files)
			if !replaceUntilKilled(t, &crashFS{op: "WriteFile", n: 2}, dir) {
				t.Fatal("not killed")
			}
			if len(snapshot(t, root)) == len(was) {
				t.Fatal("the killed run left nothing: the test shows nothing")
			}
			if err := recoverLeftovers(osFS{}, dir, files != nil); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(was, snapshot(t, root)); diff != "" {
				t.Errorf("killed, then recovered (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRecoverLeavesARunningConversion: the staging directories of a process that still
// runs are its own, and stay.
func TestRecoverLeavesARunningConversion(t *testing.T) {
	dir := t.TempDir()
	parent := os.Getppid() // a process that runs, and is not this one
	theirs := filepath.Join(dir, stagingPrefix+strconv.Itoa(parent)+"-x")
	beside := filepath.Join(filepath.Dir(dir), "."+filepath.Base(dir)+".new-"+strconv.Itoa(parent)+"-y")
	gone := filepath.Join(dir, stagingPrefix+"999999999-z")
	for _, d := range []string{theirs, beside, gone} {
		if err := os.MkdirAll(filepath.Join(d, "new"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	defer os.RemoveAll(beside)
	if err := recoverLeftovers(osFS{}, dir, true); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{theirs, beside} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s went: %v", d, err)
		}
	}
	if _, err := os.Stat(gone); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s, of a process that is gone, stayed: %v", gone, err)
	}
}

// TestReplaceInterrupted: a context that ends before the files are committed leaves the
// directory as it was, whichever way it would have been written.
func TestReplaceInterrupted(t *testing.T) {
	for name, files := range map[string]map[string]string{"new": nil, "swapped": before, "in place": withSubdir(before)} {
		t.Run(name, func(t *testing.T) {
			root, dir, was := outDir(t, files)
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if err := Replace(ctx, dir, newSet, remove); !errors.Is(err, context.Canceled) {
				t.Fatalf("Replace: %v, want context.Canceled", err)
			}
			if diff := cmp.Diff(was, snapshot(t, root)); diff != "" {
				t.Errorf("changed (-want +got):\n%s", diff)
			}
		})
	}
}

// outDir is a directory out in a new root, holding files (nil: out does not exist), and a
// snapshot of the root.
func outDir(t *testing.T, files map[string]string) (root, dir string, was map[string]string) {
	t.Helper()
	root = t.TempDir()
	dir = filepath.Join(root, "out")
	if files != nil {
		layout(t, dir, files)
	}
	return root, dir, snapshot(t, root)
}
