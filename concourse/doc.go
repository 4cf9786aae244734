// Package concourse is the Concourse data model: pipeline configs, task configs and
// build plans as wire-compatible Go types, loaded from YAML with the position of every
// node, and validated by Concourse's own rules, every problem reported at once.
//
// It does no I/O beyond the bytes and readers it is handed. Files are opened by the
// callers, and read through ReadConfig, which bounds them by the loader's limit.
package concourse
