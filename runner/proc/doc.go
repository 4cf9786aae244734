// Package proc runs one child process the way a Concourse container runs a step's process:
// in its own process group, its output relayed as it comes, and, when its context ends,
// stopped gracefully (SIGTERM to the group, a grace period, then SIGKILL), as Garden stops
// a container's processes on abort or timeout.
package proc
