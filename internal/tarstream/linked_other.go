//go:build !unix

package tarstream

import "io/fs"

// linked says whether a file may have more than one name: without a count of its
// links, any may.
func linked(fs.FileInfo) bool { return true }
