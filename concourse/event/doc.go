// Package event defines Concourse's build events, wire-compatible with the ATC's
// atc/event JSON: their payloads, versions and the envelope they are streamed in.
package event
