// Package render writes Concourse build events for people, byte for byte as fly does
// (`fly watch`, `fly trigger-job -w`: fly/eventstream/render.go), and for programs, as the
// ATC's event envelopes one per line. It writes only to the io.Writer it is given and keeps
// no state beyond what fly keeps while it renders one build.
//
// What fly writes, per event (bold and colours only with Options.Color):
//
//	log                          the payload, raw
//	initialize-task              "initializing" (bold)
//	start-task                   "running <path> <args...>" (bold), from the task's config
//	selected-worker              "selected worker: <name>" (label bold)
//	waiting-for-worker           "no suitable workers found, waiting for worker..." (bold)
//	initialize-check             "initializing check: <name>" (label bold)
//	streaming-volume             "streaming volume <v> from worker <w>" (words bold)
//	waiting-for-streamed-volume  "waiting for volume <v> to be streamed by another step"
//	error                        the message in bold red
//	status                       started: nothing; else the word: succeeded green, failed
//	                             red, errored bold red, aborted magenta
//
// Every other event (the get, put and generic step events, finish-task, image-check, ...)
// writes nothing. fly stops at the first status other than started, and so does a Renderer.
//
// Exit codes are fly's: 0 succeeded, 1 failed, 2 errored, 3 aborted, 255 for a status fly
// does not know; fly returns the exit status of the last finish-task in place of these
// when it is not 0, which Renderer.ExitCode reproduces and the status-only ExitCode cannot.
package render
