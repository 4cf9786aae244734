// Package pvc owns the volumes of builds: the build volume, resource and task caches, their
// clones, and their garbage collection.
package pvc
