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
