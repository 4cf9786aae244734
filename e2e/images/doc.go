// Package images says what goes into each image of the e2e cluster (pause, busybox,
// Tekton's, the test resource types), as pure functions from binaries to file lists;
// e2e/cmd/e2eimages reads the binaries and writes the tarballs. PushPrivate gives the
// tests of both e2e suites an image of their own in a registry that wants credentials.
package images
