// Package resourcetest runs a resource type's check, in and out as real processes in
// tests: the test binary links itself as the three scripts and, started under one of
// those names with RunAsEnv set, acts as that script.
package resourcetest
