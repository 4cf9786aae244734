// Package tarstream moves directory trees as tar streams: Write archives a directory (all
// of it, or the files a list names), Extract unpacks a stream into a directory and never
// writes outside it, whatever the stream's names and links say, nor through a link that
// is there, and refuses a stream over its limits of an entry's size, the entries and the
// depth of a name. Both ends of an upload
// or a download use it: the CLI on the user's machine, the step runner on the build
// volume. Ownership is not carried (files belong to whoever extracts them); permission
// bits are, but for setuid, setgid and sticky.
package tarstream
