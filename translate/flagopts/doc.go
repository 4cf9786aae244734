// Package flagopts turns the compile settings that concourse-tekton's commands and the
// web node share (images, scheduling, volumes, the image registry), as their flags give
// them, into translate.Options: one reading and one error text for each, whichever
// command spells the flag. It reads no files and asks no cluster.
package flagopts
