// Package ociimage builds small one-layer container images from files held in memory,
// reproducibly (the same input always gives the same digest), without a Docker engine:
// it writes them as docker-save tarballs that `ctr images import` loads, or pushes them
// to a registry.
package ociimage
