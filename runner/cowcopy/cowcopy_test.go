package cowcopy

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// entry is what a copy must keep of a file.
type entry struct {
	Mode  fs.FileMode
	Size  int64
	Sum   string
	Link  string
	MTime time.Time
	UID   uint32
	GID   uint32
}

// snapshot describes every file below root by its relative path.
func snapshot(t *testing.T, root string) map[string]entry {
	t.Helper()
	out := map[string]entry{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		info, err := d.Info()
		if err != nil {
			return err
		}
		st := info.Sys().(*syscall.Stat_t)
		e := entry{Mode: info.Mode(), MTime: info.ModTime(), UID: st.Uid, GID: st.Gid}
		switch {
		case info.Mode().IsRegular():
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			e.Size, e.Sum = info.Size(), fmt.Sprintf("%x", sha256.Sum256(data))
		case info.Mode()&fs.ModeSymlink != 0:
			e.Link, _ = os.Readlink(path)
		}
		if rel == "." {
			e.MTime = time.Time{}
		}
		out[rel] = e
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// fixture builds a tree with the cases a copy can get wrong.
func fixture(t *testing.T) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "src")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "a/b/c"), 0o755))
	must(os.MkdirAll(filepath.Join(root, "empty"), 0o750))
	must(os.WriteFile(filepath.Join(root, "a/b/c/file.txt"), []byte("hello"), 0o644))
	must(os.WriteFile(filepath.Join(root, "run.sh"), []byte("#!/bin/sh\necho hi\n"), 0o755))
	must(os.WriteFile(filepath.Join(root, "empty.txt"), nil, 0o600))
	big := make([]byte, 3<<20+17)
	for i := range big {
		big[i] = byte(i * 7)
	}
	must(os.WriteFile(filepath.Join(root, "big.bin"), big, 0o644))
	must(os.Symlink("a/b/c/file.txt", filepath.Join(root, "link")))
	must(os.Symlink("/nowhere/at/all", filepath.Join(root, "dangling")))
	must(os.Link(filepath.Join(root, "run.sh"), filepath.Join(root, "hardlink.sh")))
	must(syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644))
	must(os.MkdirAll(filepath.Join(root, "locked"), 0o755))
	must(os.WriteFile(filepath.Join(root, "locked/inside"), []byte("x"), 0o444))
	must(os.Chmod(filepath.Join(root, "locked"), 0o555))
	t.Cleanup(func() { os.Chmod(filepath.Join(root, "locked"), 0o755) })
	old := time.Date(2001, 2, 3, 4, 5, 6, 7000, time.UTC)
	_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if d.Type()&fs.ModeSymlink == 0 && path != root && d.Name() != "locked" {
			must(os.Chtimes(path, old, old))
		}
		return nil
	})
	return root
}

func TestTreeKeepsEverything(t *testing.T) {
	src := fixture(t)
	want := snapshot(t, src)
	for _, opt := range []Options{{}, {NoClone: true, Workers: 1}} {
		t.Run(fmt.Sprintf("%+v", opt), func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "deep", "dst")
			stats, err := Tree(src, dst, opt)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Chmod(filepath.Join(dst, "locked"), 0o755) })
			if diff := cmp.Diff(want, snapshot(t, dst)); diff != "" {
				t.Errorf("copy (-want +got):\n%s", diff)
			}
			// Hard links become separate files: writing one must not change the other.
			for _, name := range []string{"run.sh", "hardlink.sh"} {
				info, err := os.Stat(filepath.Join(dst, name))
				if err != nil {
					t.Fatal(err)
				}
				if n := info.Sys().(*syscall.Stat_t).Nlink; n != 1 {
					t.Errorf("%s has %d links in the copy", name, n)
				}
			}
			if stats.Files != 6 {
				t.Errorf("stats = %+v, want 6 files", stats)
			}
		})
	}
}

func TestWritesToTheCopyDoNotLeak(t *testing.T) {
	src := fixture(t)
	want := snapshot(t, src)
	dst := filepath.Join(t.TempDir(), "dst")
	if _, err := Tree(src, dst, Options{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a/b/c/file.txt", "big.bin", "hardlink.sh", "link"} {
		f, err := os.OpenFile(filepath.Join(dst, name), os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprint(f, "changed")
		f.Close()
	}
	if err := os.RemoveAll(filepath.Join(dst, "a")); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, snapshot(t, src)); diff != "" {
		t.Errorf("the original changed (-want +got):\n%s", diff)
	}
}

func TestSameAsCpA(t *testing.T) {
	src := fixture(t)
	dir := t.TempDir()
	ours, theirs := filepath.Join(dir, "ours"), filepath.Join(dir, "theirs")
	if _, err := Tree(src, ours, Options{}); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", src, theirs).CombinedOutput(); err != nil {
		t.Fatalf("cp -a: %v: %s", err, out)
	}
	t.Cleanup(func() {
		os.Chmod(filepath.Join(ours, "locked"), 0o755)
		os.Chmod(filepath.Join(theirs, "locked"), 0o755)
	})
	a, b := snapshot(t, theirs), snapshot(t, ours)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("cp -a vs ours (-cp +ours):\n%s", diff)
	}
}

func TestErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, src, dst string }{
		{"missing source", filepath.Join(dir, "nope"), filepath.Join(dir, "d1")},
		{"source is a file", file, filepath.Join(dir, "d2")},
		{"destination exists", dir, file},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Tree(tt.src, tt.dst, Options{}); err == nil {
				t.Error("no error")
			}
		})
	}
}

// TestCloneWhereSupported runs where COWCOPY_BENCH_DIR names a directory on a filesystem
// that can share extents (XFS with reflink, btrfs): every non-empty file must be cloned,
// and writes to the clone must still not reach the original.
func TestCloneWhereSupported(t *testing.T) {
	base := os.Getenv("COWCOPY_BENCH_DIR")
	if base == "" {
		t.Skip("COWCOPY_BENCH_DIR is not set")
	}
	dir, err := os.MkdirTemp(base, "cowcopy-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	src := filepath.Join(dir, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "f"), []byte("original"), 0o644); err != nil {
		t.Fatal(err)
	}
	stats, err := Tree(src, filepath.Join(dir, "dst"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if stats.Cloned != 1 {
		t.Errorf("stats = %+v, want the file cloned", stats)
	}
	if err := os.WriteFile(filepath.Join(dir, "dst", "f"), []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join(src, "f")); string(data) != "original" {
		t.Errorf("the original changed: %q", data)
	}
}

func TestTreeGivenToAnOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving files away needs root")
	}
	src := fixture(t)
	want := snapshot(t, src)
	for name, e := range want {
		e.UID, e.GID = 65534, 65533
		want[name] = e
	}
	for _, opt := range []Options{{Owner: &Owner{UID: 65534, GID: 65533}}, {Owner: &Owner{UID: 65534, GID: 65533}, NoClone: true, Workers: 1}} {
		t.Run(fmt.Sprintf("NoClone=%v", opt.NoClone), func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "dst")
			if _, err := Tree(src, dst, opt); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Chmod(filepath.Join(dst, "locked"), 0o755) })
			if diff := cmp.Diff(want, snapshot(t, dst)); diff != "" {
				t.Errorf("copy (-want +got):\n%s", diff)
			}
		})
	}
}
