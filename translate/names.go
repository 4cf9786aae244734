package translate

import "strings"

// The labels on every object of a build (the full names are in annotations of the same
// keys: a label value is cut and made label-safe, see LabelValue).
const (
	annotationPrefix = "concourse-ci.org/"
	LabelTeam        = annotationPrefix + "team"
	LabelPipeline    = annotationPrefix + "pipeline"
	LabelJob         = annotationPrefix + "job"
	LabelBuild       = annotationPrefix + "build"
	LabelManagedBy   = "app.kubernetes.io/managed-by"
	ManagedBy        = "concourse-tekton"
)

// labelName makes a DNS-1123 label (at most 63 characters) of s: lowercase letters,
// digits and '-'. A name that had to be cut keeps a hash of the whole, so it stays unique.
func labelName(s string) string {
	return dnsName(s, 63)
}

func dnsName(s string, max int) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
			continue
		}
		if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	out := strings.Trim(b.String(), "-")
	if out == "" {
		out = "x"
	}
	if out[0] >= '0' && out[0] <= '9' {
		out = "x" + out
	}
	if len(out) > max {
		out = strings.TrimRight(out[:max-11], "-") + "-" + shortHash(s)
	}
	return out
}

// RunName is the name of a build's PipelineRun.
func RunName(pipeline, job, build string) string {
	return dnsName(pipeline+"-"+job+"-"+build, 63)
}

// LabelValue is the label value translate gives a name (team, pipeline, job, build); the
// full name is in an annotation of the same key.
func LabelValue(s string) string { return labelValue(s) }

// labelValue makes a label value (at most 63 characters of [A-Za-z0-9._-], starting and
// ending with an alphanumeric) of s; the full value goes in an annotation beside it.
func labelValue(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	out := strings.Trim(b.String(), "._-")
	if len(out) > 63 {
		out = strings.Trim(out[:52], "._-") + "-" + shortHash(s)
	}
	return out
}
