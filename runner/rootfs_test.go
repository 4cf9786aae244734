package runner

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// A snapshot keeps what changed since the process started, on the root's own file
// system: new and rewritten files, new directories and links, whatever the user; not
// what the image had untouched, nor the directories skipped, nor a file past the budget.
// Restored elsewhere, each is there with its content, mode and link.
func TestRootfsSnapshot(t *testing.T) {
	root := t.TempDir()
	write := func(name, content string, mode os.FileMode) {
		t.Helper()
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	write("etc/untouched", "from the image", 0o644)
	write("etc/rewritten", "from the image", 0o644)
	write("tmp/build/work/old", "the working directory", 0o644)
	time.Sleep(50 * time.Millisecond)
	since := time.Now()
	time.Sleep(50 * time.Millisecond)

	write("etc/rewritten", "by the step", 0o600)
	write("tmp/retry_number", "2\n", 0o644)
	write("opt/tool/bin/run", "#!/bin/sh\n", 0o755)
	write("tmp/build/work/new", "in the working directory", 0o644)
	write("tmp/build/.work.started", "", 0o644)
	write("tmp/build/zz-after-the-mark", "", 0o644)
	write("tmp/abs-input/f", "staged again by a session", 0o644)
	write("tmp/huge", string(make([]byte, 2048)), 0o644)
	if err := os.Symlink("/opt/tool/bin/run", filepath.Join(root, "usr-local-run")); err != nil {
		t.Fatal(err)
	}
	defer func(b int64) { rootfsSnapshotBudget = b }(rootfsSnapshotBudget)
	rootfsSnapshotBudget = 1024

	dst := filepath.Join(t.TempDir(), "volumes", "1", "%rootfs.tar")
	// Skipped: the working directory, the process mark (a file: its siblings are still
	// walked), an input at an absolute path.
	skip := []string{filepath.Join(root, "tmp/build/work"), filepath.Join(root, "tmp/build/.work.started"), filepath.Join(root, "tmp/abs-input")}
	if err := snapshotRootfs(root, since, skip, dst); err != nil {
		t.Fatal(err)
	}
	var names []string
	f, err := os.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, hdr.Name)
	}
	f.Close()
	// The directories that gained an entry are there too (their inodes changed).
	want := []string{"etc/rewritten", "opt/", "opt/tool/", "opt/tool/bin/", "opt/tool/bin/run", "tmp/", "tmp/build/", "tmp/build/zz-after-the-mark", "tmp/retry_number", "usr-local-run"}
	slices.Sort(names)
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("the snapshot's entries (-want +got):\n%s", diff)
	}

	into := t.TempDir()
	write2 := filepath.Join(into, "etc", "rewritten")
	if err := os.MkdirAll(filepath.Dir(write2), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(write2, []byte("from the image"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := restoreRootfs(dst, into); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"etc/rewritten": "by the step", "tmp/retry_number": "2\n", "opt/tool/bin/run": "#!/bin/sh\n"} {
		got, err := os.ReadFile(filepath.Join(into, name))
		if err != nil || string(got) != content {
			t.Errorf("%s restored: %q, %v, want %q", name, got, err, content)
		}
	}
	for name, mode := range map[string]os.FileMode{"etc/rewritten": 0o600, "opt/tool/bin/run": 0o755} {
		if info, err := os.Stat(filepath.Join(into, name)); err != nil || info.Mode().Perm() != mode {
			t.Errorf("%s restored with mode %v (%v), want %v", name, info.Mode(), err, mode)
		}
	}
	if link, err := os.Readlink(filepath.Join(into, "usr-local-run")); err != nil || link != "/opt/tool/bin/run" {
		t.Errorf("the link restored: %q, %v", link, err)
	}

	// Out of time at once: an empty snapshot.
	defer func(d time.Duration) { rootfsSnapshotTime = d }(rootfsSnapshotTime)
	rootfsSnapshotTime = 0
	if err := snapshotRootfs(root, since, nil, dst); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(dst); err != nil || info.Size() > 1024 {
		t.Errorf("a snapshot out of time: %v, %v", info, err)
	}

	// No snapshot: nothing to restore.
	if err := restoreRootfs(filepath.Join(t.TempDir(), "none.tar"), into); err != nil {
		t.Errorf("restoring no snapshot: %v", err)
	}
}

// An entry whose path leaves the root is refused.
func TestRootfsRestoreRefusesEscape(t *testing.T) {
	src := filepath.Join(t.TempDir(), "evil.tar")
	f, err := os.Create(src)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(f)
	if err := tw.WriteHeader(&tar.Header{Name: "../outside", Typeflag: tar.TypeReg, Mode: 0o644, Size: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	root := filepath.Join(t.TempDir(), "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := restoreRootfs(src, root); err == nil {
		t.Error("an entry outside the root was restored")
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(root), "outside")); err == nil {
		t.Error("the file outside the root was written")
	}
}
