// Command e2eimages builds the e2e cluster's images as docker-save tarballs, one per
// image, from binaries on disk: pause, busybox, Tekton's entrypoint, nop and
// workingdirinit, the test resource types, and the probe a team's step runs against
// another team's things (e2e/cmd/probe). It prints "<reference> <file>" per image.
package main
