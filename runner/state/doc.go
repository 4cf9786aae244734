// Package state reads and writes a build's state directory on the build volume: outcomes,
// the abort and fail-fast markers, start claims, deadlines, hook detach decisions, the
// scoped artifact and local var registries, and step results (layout in runspec's doc).
//
// Several pods of a build use it at once, so every write is atomic: a file is written
// beside its final name and renamed into place (last writer wins, like Concourse's
// artifact repository), or linked into place when only the first writer may win (deadline
// starts, claims, markers). Readers never see half a file. Nothing here panics on a
// malformed file: it is reported as an error or, where the spec says so, ignored.
package state
