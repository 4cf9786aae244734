package judge

import (
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/concourse/concourse/atc"

	"github.com/concourse-tekton/concourse-tekton/concourse"
)

// About reports whether one of the project's errors is at a place that Concourse's
// message, from stage, is about. Concourse's messages place a problem in one of three
// ways, and each is checked as precisely as it allows:
//
//   - a line of the file (YAML errors): the error is on that line;
//   - a field (decoding errors: `Go struct field TaskStep.config.run.args`, `unknown field
//     "tags"`): the error's path goes through that field;
//   - a place in the config (configvalidate: `jobs.unit.plan.do[2].get(repo)`, or a
//     quoted name: `resource 'repo' is not used`): the error is under that job, resource
//     or group, at the same step, or names the same thing.
//
// A message that names no place at all (`no step configured`) is about any error of the
// project that has a position.
func About(stage Stage, message string, errs concourse.Diagnostics) bool {
	return slices.ContainsFunc(errs, func(d concourse.Diagnostic) bool {
		return d.Pos.Line > 0 && about(stage, message, d)
	})
}

var (
	lineRe        = regexp.MustCompile(`\bline (\d+)\b`)
	structFieldRe = regexp.MustCompile(`Go struct field [\w.]+?\.([\w.]+) of type`)
	unknownRe     = regexp.MustCompile(`unknown fields?:? (?:"([^"]+)"|\[([^\]]*)\])`)
	sectionRe     = regexp.MustCompile(`^(groups|resources|resource_types|prototypes|var_sources|jobs)(\[\d+\]|\.)`)
	parenRe       = regexp.MustCompile(`\([^()]*\)`)
	indexRe       = regexp.MustCompile(`\[(\d+)\]`)
	quotedRe      = regexp.MustCompile(`'([^']+)'`)
)

func about(stage Stage, message string, d concourse.Diagnostic) bool {
	path := parsePath(d.Path.String())
	switch stage {
	case StageYAML, StageTemplate:
		if m := lineRe.FindStringSubmatch(message); m != nil {
			return strconv.Itoa(d.Pos.Line) == m[1]
		}
		return true
	case StageDecode:
		if m := structFieldRe.FindStringSubmatch(message); m != nil {
			return containsRun(path.keys(), strings.Split(m[1], "."))
		}
		if m := unknownRe.FindStringSubmatch(message); m != nil {
			names := strings.Fields(strings.NewReplacer(`"`, " ", ",", " ").Replace(m[1] + " " + m[2]))
			return slices.ContainsFunc(names, func(n string) bool {
				return slices.Contains(path.keys(), n) || strings.Contains(d.Message, strconv.Quote(n))
			})
		}
		return true
	}
	return aboutPlace(message, path, d)
}

// aboutPlace matches a configvalidate message with an error of the project.
func aboutPlace(message string, path pathParts, d concourse.Diagnostic) bool {
	place, _, found := strings.Cut(message, ": ")
	if !found || !sectionRe.MatchString(place) {
		// No place: a quoted name the message is about, or the section it is in.
		for _, m := range quotedRe.FindAllStringSubmatch(message, -1) {
			if path.names(m[1]) || slices.Contains(path.keys(), m[1]) || strings.Contains(d.Message, strconv.Quote(m[1])) {
				return true
			}
		}
		return !quotedRe.MatchString(message)
	}
	if len(path) < 2 || !path[1].isIndex {
		return false
	}
	element := path[0].key + "." + path[1].text
	if _, err := strconv.Atoi(path[1].text); err == nil {
		element = path[0].key + "[" + path[1].text + "]"
	}
	rest, ok := strings.CutPrefix(place, element)
	if !ok || (rest != "" && rest[0] != '.' && rest[0] != '[' && rest[0] != ' ') {
		return false
	}
	// `jobs.unit has negative build_logs_to_retain`: the place ends at the space.
	rest, _, _ = strings.Cut(rest, " ")
	// The indices of the steps (and of across vars) down to the place.
	var want []string
	for _, m := range indexRe.FindAllStringSubmatch(parenRe.ReplaceAllString(rest, ""), -1) {
		want = append(want, m[1])
	}
	var got []string
	for _, p := range path[2:] {
		if p.isIndex {
			got = append(got, p.text)
		}
	}
	return len(got) >= len(want) && slices.Equal(got[:len(want)], want)
}

// WarnedAbout reports whether one of the project's warnings has the meaning of Concourse's
// warning w.
func WarnedAbout(w atc.ConfigWarning, warnings concourse.Diagnostics) bool {
	var needles []string
	switch {
	case w.Type == "invalid_identifier":
		m := quotedRe.FindStringSubmatch(w.Message)
		needles = []string{strconv.Quote(m[1]) + " is not a valid identifier"}
	case w.Type == "deprecated_field":
		needles = []string{"build_logs_to_retain is deprecated"}
	case w.Type == "var_shadowed":
		m := quotedRe.FindStringSubmatch(w.Message)
		needles = []string{strconv.Quote(m[1]), "shadows"}
	case strings.Contains(w.Message, "specifies image: on the step"):
		needles = []string{"sets `image`"}
	case strings.Contains(w.Message, "hermetic"):
		needles = []string{"hermetic"}
	default:
		needles = []string{w.Message}
	}
	return slices.ContainsFunc(warnings, func(d concourse.Diagnostic) bool {
		for _, n := range needles {
			if !strings.Contains(d.Message, n) {
				return false
			}
		}
		return d.Pos.Line > 0
	})
}

// pathParts is a rendered path of the project's (jobs[unit].plan[2].task) split into
// its keys and list elements.
type pathParts []pathPart

type pathPart struct {
	text    string
	key     string
	isIndex bool
}

func parsePath(s string) pathParts {
	var out pathParts
	for s != "" {
		switch s[0] {
		case '.':
			s = s[1:]
		case '[':
			end := strings.IndexByte(s, ']')
			if end < 0 {
				return out
			}
			out = append(out, pathPart{text: s[1:end], isIndex: true})
			s = s[end+1:]
		default:
			end := strings.IndexAny(s, ".[")
			if end < 0 {
				end = len(s)
			}
			out = append(out, pathPart{key: s[:end], text: s[:end]})
			s = s[end:]
		}
	}
	return out
}

func (p pathParts) keys() []string {
	var keys []string
	for _, e := range p {
		if !e.isIndex {
			keys = append(keys, e.key)
		}
	}
	return keys
}

// names reports whether an element of the path is the list element named name.
func (p pathParts) names(name string) bool {
	return slices.ContainsFunc(p, func(e pathPart) bool { return e.isIndex && e.text == name })
}

// containsRun reports whether run occurs in s, contiguously.
func containsRun(s, run []string) bool {
	for i := 0; i+len(run) <= len(s); i++ {
		if slices.Equal(s[i:i+len(run)], run) {
			return true
		}
	}
	return false
}
