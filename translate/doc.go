// Package translate compiles Concourse build plans into Tekton v1 objects. It is pure: no
// I/O, no client-go, no clock or randomness; the same input gives the same bytes.
package translate
