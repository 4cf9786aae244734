// Package git is a Concourse git resource type for tests, a subset of
// concourse/git-resource that drives the real git binary: check lists the commits of
// source.branch from the given ref on, in clones and checks out a ref, out pushes a
// repository to the branch. It reaches repositories by any URL git itself can (file://
// or git:// to a git daemon in the cluster), so tests need nothing outside the machine.
package git
