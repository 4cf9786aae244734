// Package cowcopy makes a private copy of a directory tree: what a Concourse task gets for
// each input (a copy-on-write child of the artifact's volume). Writes to the copy never
// reach the original, so hard links are never used. Each regular file is cloned (FICLONE)
// where the filesystem can share extents, which costs no data copy; elsewhere the files
// are copied in parallel (copy_file_range, so a filesystem that can still shortcuts it).
// Modes, ownership (when permitted), symlinks and modification times are kept, as
// `cp -a` keeps them; or the whole copy is given to one owner, as baggageclaim gives the
// volumes of a container whose user is not root to that user.
package cowcopy
