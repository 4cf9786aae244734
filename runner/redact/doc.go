// Package redact hides secret values in the lines the runner writes, with Concourse's rule:
// every line of every secret string value (credentials, load_var values without reveal),
// trimmed, that is longer than one character becomes ((redacted)). Occurrences that
// overlap are hidden together, as one ((redacted)), so that a secret inside a longer one
// is hidden whole and no part of either shows.
//
// The output is scanned once, with an Aho–Corasick automaton of the secrets, in time
// linear in its size whatever the number of secrets, and in memory bounded by the longest
// secret whatever the length of a line. A Writer passes a byte on as soon as no secret can
// cover it any more; it holds back only a tail that may begin a secret, and writes that
// tail anyway after a short idle time (DefaultIdle), so that a progress bar drawn with \r
// shows as it is drawn.
package redact
