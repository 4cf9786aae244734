// Package podexec does the backend's work inside the pods of builds, through pods/exec
// and pods of its own that mount a build's volume: it aborts a build (the runner's abort
// marker, written from a running step's container or from an abort pod), intercepts a
// step (a session in its container, or in a pod made again from a finished step's), and
// moves a one-off build's artifacts onto and off its volume (a transfer pod). It reads
// and maps no events; tektonrun.Client hands it its target (New).
package podexec
