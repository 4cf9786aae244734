//go:build unix

package tarstream

import (
	"io/fs"
	"syscall"
)

// linked says whether a file has more than one name.
func linked(info fs.FileInfo) bool {
	st, ok := info.Sys().(*syscall.Stat_t)
	return ok && st.Nlink > 1
}
