// Package cli is the concourse-tekton command line: it parses flags, reads files, and wires
// the library packages together. It holds no logic of its own beyond that.
package cli
