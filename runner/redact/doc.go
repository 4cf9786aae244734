// Package redact hides secret values in the lines the runner writes, with Concourse's rule:
// every line of every secret string value (credentials, load_var values without reveal),
// trimmed, that is longer than one character becomes ((redacted)).
package redact
