package translate

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// labelName makes a DNS-1123 label (at most 63 characters) of s: lowercase letters,
// digits and '-'. A name that had to be cut keeps a hash of the whole, so it stays unique.
func labelName(s string) string {
	return dnsName(s, 63)
}

func dnsName(s string, max int) string {
	out := dnsWord(s)
	if out[0] >= '0' && out[0] <= '9' {
		out = "x" + out
	}
	if len(out) > max {
		out = strings.TrimRight(out[:max-11], "-") + "-" + runspec.ShortHash(s)
	}
	return out
}

// dnsWord is s in lowercase letters and digits, every other run of characters one '-'
// (none at either end), or "x" when nothing is left.
func dnsWord(s string) string {
	if isDNSWord(s) {
		return s // most names of steps and jobs are
	}
	return makeDNSWord(s)
}

// makeDNSWord is dnsWord, made anew.
func makeDNSWord(s string) string {
	var b strings.Builder
	b.Grow(len(s))
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
	return out
}

// isDNSWord says dnsWord(s) is s: lowercase letters and digits, single '-'s between them.
func isDNSWord(s string) bool {
	if s == "" || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-' && s[i-1] != '-':
		default:
			return false
		}
	}
	return true
}

// RunName is the name of a build's PipelineRun: `<pipeline>-<job>-<build>`, readable for
// tkn, and unique (see objectName).
//
// pipeline is the pipeline's Scope: its name alone for team main's pipelines that are not
// instanced.
func RunName(pipeline, job, build string) string {
	return objectName(63, pipeline, job, build)
}

// PipelineName is the name of a job's Pipeline: `<pipeline>-<job>`, unique as RunName.
func PipelineName(pipeline, job string) string {
	return objectName(63, pipeline, job)
}

// Scope is what a pipeline's object names (RunName, PipelineName) are made from: the
// pipeline's name for a pipeline of team main that is not instanced (`booklit-unit-1`),
// else the team's name, the pipeline's and its instance vars together, which always gives
// names with a hash: two teams' pipelines of one name, or two instances of a pipeline,
// never share a Pipeline or a PipelineRun. Labels and annotations keep the names apart.
func Scope(team, pipeline string, instanceVars map[string]any) string {
	if (team == "" || team == "main") && len(instanceVars) == 0 {
		return pipeline
	}
	// JSON: exact (no two triples give one string), and encoding/json sorts map keys, so
	// one instance has one scope.
	key := []any{team, pipeline}
	if len(instanceVars) > 0 {
		key = append(key, instanceVars)
	}
	buf, err := json.Marshal(key)
	if err != nil {
		buf = []byte(fmt.Sprintf("%q", key))
	}
	return string(buf)
}

// objectName joins a pipeline's, a job's and maybe a build's names into one object name
// of at most max characters; distinct names never give the same object name. The plain
// join (`booklit-unit-1`, `app-build-image-7`) is kept when it says exactly which names it
// was made of: every name was a word of lowercase letters and digits already, only the
// job's has '-' in it (so the first word is the pipeline and the last the build), and the
// whole fits. Otherwise (`unit.test`, `Unit_Test`, a pipeline `a-b`, a name that must be
// cut) a hash of the exact names is appended, which a plain join cannot end with.
func objectName(max int, parts ...string) string {
	words := make([]string, len(parts))
	exact := true
	for i, p := range parts {
		words[i] = dnsWord(p)
		const job = 1
		if words[i] != p || i != job && strings.Contains(p, "-") {
			exact = false
		}
	}
	name := strings.Join(words, "-")
	if name[0] >= '0' && name[0] <= '9' {
		name, exact = "x"+name, false
	}
	if exact && len(name) <= max {
		return name
	}
	h := runspec.ShortHash(strings.Join(parts, "\x00"))
	if room := max - len(h) - 1; len(name) > room {
		name = strings.TrimRight(name[:room], "-")
	}
	return name + "-" + h
}
