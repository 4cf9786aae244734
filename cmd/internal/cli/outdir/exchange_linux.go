//go:build linux

package outdir

import (
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// exchange swaps two paths atomically with renameat2(RENAME_EXCHANGE). A file system
// without it (or a kernel before 3.15) fails, having changed nothing.
func exchange(a, b string) error {
	if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE); err != nil {
		return &os.LinkError{Op: "exchange", Old: a, New: b, Err: err}
	}
	return nil
}

// copyOwner gives path the owner and group of info, when it may: a directory swapped in
// for one of another user's (convert run with sudo) stays theirs.
func copyOwner(path string, info fs.FileInfo) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok || (int(st.Uid) == os.Getuid() && int(st.Gid) == os.Getgid()) {
		return
	}
	_ = os.Lchown(path, int(st.Uid), int(st.Gid))
}

// syncAll makes the files written in dir, and dir, durable: one syncfs(2) for the file
// system they are on, where a sync of each file cost a disk flush each (tens of thousands
// of files written by one conversion).
func syncAll(dir string, _ []string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Syncfs(int(f.Fd())); err != nil {
		return &os.PathError{Op: "syncfs", Path: dir, Err: err}
	}
	return nil
}
