package runner

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/concourse-tekton/concourse-tekton/internal/tarstream"
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// The container's own file system, kept for an intercept session: Concourse keeps a
// failed step's container, and `fly intercept` into it finds what its process left
// outside its working directory (a file in /tmp, a tool it installed). Here the
// container goes with its pod. So when a task run as root fails, times out or is
// aborted, or a get's or put's script (run as root, as resources are) fails, the runner
// writes what its process changed in the container's file system (each file, directory
// and symbolic link whose inode changed since the process started, on the root file
// system only) into a tar on the build volume, rootfsSnapshotBudget bytes of file data
// and rootfsSnapshotTime at most; an intercept session in a pod made again from the
// step's own restores it before its command starts. The working directory is not in it:
// the session makes it again from the build volume. A step that does not run as root is
// not kept: its session, which restores as root, would otherwise write what its user
// could not.

// keepsRootfs tells whether a task whose process runs with cred (nil: the container's
// user) has its container's files kept: when it runs as root, and so does the runner.
func keepsRootfs(cred *syscall.Credential) bool {
	return (cred == nil || cred.Uid == 0) && os.Geteuid() == 0
}

// keepRootfs keeps what the step's process, run with cred and started at started,
// changed in the container's file system outside the runner's own paths (the working
// directory of a task, of a get or put, and a task's process mark), if it is kept
// (keepsRootfs). Best effort: a snapshot that cannot be written leaves an intercept
// session without the container's files, and the step as it ended.
func (s *step) keepRootfs(cred *syscall.Credential, started time.Time, own ...string) {
	if !keepsRootfs(cred) {
		return
	}
	root := s.opts.rootfs
	skip := append([]string{s.paths.Volume, runspec.RunnerDir, filepath.Join(root, "proc"), filepath.Join(root, "sys"), filepath.Join(root, "dev")}, own...)
	_ = snapshotRootfs(root, started.Add(-rootfsSnapshotMargin), skip, filepath.Join(s.paths.Volume, rootfsSnapshotPath(s.spec.PlanID)))
}

// rootfsSnapshotBudget bounds the file data a snapshot keeps, with a quarter of the
// space the build volume has left: the volume is small (1Gi by default), and a session
// seldom wants more than a step's scratch files. Files past it are left out.
var rootfsSnapshotBudget int64 = 64 << 20

// rootfsSnapshotTime bounds how long a failed step spends keeping its files (a walk of a
// large image, a Docker daemon's layers): what is kept by then is kept.
var rootfsSnapshotTime = 5 * time.Second

// rootfsSnapshotMargin is how long before its process started a step's files count as
// changed by it: the kernel stamps inodes with a clock that lags the one time.Now reads by
// up to a tick.
const rootfsSnapshotMargin = time.Second

// rootfsSnapshotPath is where a step's snapshot is, relative to the build volume's root:
// beside its artifacts, in a file no artifact can be (runspec.Escape never writes '%'
// before lowercase letters).
func rootfsSnapshotPath(planID string) string {
	return path.Join(runspec.VolumesDir, runspec.Escape(planID), "%rootfs.tar")
}

// snapshotRootfs writes the snapshot of the file system under root (the container's /)
// changed since since, leaving out the directories in skip and whatever is not on root's
// file system (mounts: the build volume, secrets, /proc). A file it cannot read is left
// out; an error is one of writing the snapshot, which is then not there.
func snapshotRootfs(root string, since time.Time, skip []string, dst string) error {
	rootInfo, err := os.Lstat(root)
	if err != nil {
		return err
	}
	rootDev := rootInfo.Sys().(*syscall.Stat_t).Dev
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	tmp := dst + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	tw := tar.NewWriter(f)
	budget, deadline := rootfsSnapshotBudget, time.Now().Add(rootfsSnapshotTime)
	var fsStat syscall.Statfs_t
	if syscall.Statfs(filepath.Dir(dst), &fsStat) == nil {
		// A quarter of what the volume has left at most: the build's later steps, and
		// the snapshots of its other failed steps (attempts), need the rest.
		budget = min(budget, int64(fsStat.Bavail)*fsStat.Bsize/4)
	}
	walkErr := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if time.Now().After(deadline) {
			return fs.SkipAll
		}
		if err != nil {
			if d != nil && d.IsDir() && p != root {
				return fs.SkipDir
			}
			return nil
		}
		if p == root {
			return nil
		}
		if slices.Contains(skip, p) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if !ok || st.Dev != rootDev {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if time.Unix(st.Ctim.Sec, st.Ctim.Nsec).Before(since) {
			return nil
		}
		return addToSnapshot(tw, root, p, info, &budget)
	})
	err = errors.Join(walkErr, tw.Close(), f.Close())
	if err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}

// addToSnapshot writes one changed entry: a directory, a symbolic link, or a regular file
// that fits in what is left of budget. Anything else (a socket, a device, a pipe) is left
// out.
func addToSnapshot(tw *tar.Writer, root, p string, info fs.FileInfo, budget *int64) error {
	mode := info.Mode()
	link := ""
	switch {
	case mode.IsDir():
	case mode&fs.ModeSymlink != 0:
		target, err := os.Readlink(p)
		if err != nil {
			return nil
		}
		link = target
	case mode.IsRegular():
		if info.Size() > *budget {
			return nil
		}
	default:
		return nil
	}
	hdr, err := tar.FileInfoHeader(info, link)
	if err != nil {
		return nil
	}
	rel, err := filepath.Rel(root, p)
	if err != nil {
		return nil
	}
	hdr.Name, hdr.Uname, hdr.Gname = filepath.ToSlash(rel), "", ""
	if mode.IsDir() {
		hdr.Name += "/"
	}
	if !mode.IsRegular() {
		return tw.WriteHeader(hdr)
	}
	src, err := os.Open(p)
	if err != nil {
		return nil // gone, or unreadable: left out
	}
	defer src.Close()
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	n, err := io.Copy(tw, io.LimitReader(src, hdr.Size))
	if err != nil {
		return err
	}
	if n < hdr.Size {
		// It shrank while read: the tar wants the size the header says.
		if _, err := tw.Write(make([]byte, hdr.Size-n)); err != nil {
			return err
		}
	}
	*budget -= hdr.Size
	return nil
}

// restoreKeptRootfs restores what the step, its process run with cred, kept of its
// container's files (keepRootfs), if anything, for an intercept session in the pod made
// again from its own.
func (s *step) restoreKeptRootfs(cred *syscall.Credential) error {
	if !keepsRootfs(cred) {
		return nil
	}
	return restoreRootfs(filepath.Join(s.paths.Volume, rootfsSnapshotPath(s.spec.PlanID)), s.opts.rootfs)
}

// restoreRootfs writes a snapshot back under root, over what is there: each entry at its
// path, with its mode, owner and modification time (tarstream.ExtractOwned, which refuses
// an entry whose path leaves root). No snapshot is nothing to restore.
func restoreRootfs(src, root string) error {
	f, err := os.Open(src)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if err := tarstream.ExtractOwned(f, root); err != nil {
		return fmt.Errorf("restoring the container's files: %w", err)
	}
	return nil
}
