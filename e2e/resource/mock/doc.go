// Package mock is a Concourse resource type for tests, compatible with Concourse's own
// mock resource (github.com/concourse/mock-resource) as testflight uses it: check, in and
// out behave as that resource's do, for the same source and params, without touching
// the outside world. One binary serves all three scripts; it dispatches on its name.
//
// Differences, on purpose: "privileged" means the container holds CAP_SYS_ADMIN (on
// Kubernetes, without user namespaces, upstream's uid_map test would call every
// container privileged), print_env writes to stderr (stdout carries the JSON reply; in a
// source, it makes check print its environment), and
// get and put accept a "fail" param that makes them fail with that message.
package mock
