package translate

import (
	"strings"

	"github.com/concourse-tekton/concourse-tekton/runspec"
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
		out = strings.TrimRight(out[:max-11], "-") + "-" + runspec.ShortHash(s)
	}
	return out
}

// RunName is the name of a build's PipelineRun.
func RunName(pipeline, job, build string) string {
	return dnsName(pipeline+"-"+job+"-"+build, 63)
}
