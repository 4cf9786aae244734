// Command e2eimages builds the e2e cluster's images as docker-save tarballs, one per
// image, from binaries on disk: pause, busybox, Tekton's entrypoint, nop and
// workingdirinit, and the test resource types. It prints "<reference> <file>" per image.
package main
