package concourse

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

var (
	yamlLineRegexp      = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^yaml: (?:line (\d+): )?(.*)$`) })
	unknownAnchorRegexp = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^unknown anchor '(.*)' referenced$`) })
)

// yamlErrorDiagnostic turns a YAML parser error into a diagnostic at the place to fix.
//
// The parser's own line is not that place: it does not give one for bad bytes, and for a
// syntax error it gives the line where the enclosing map or list starts (0-based, for most
// errors). So the diagnostic finds the bad byte itself, or the first line at which the
// document fails, and says what to do about the common causes.
func yamlErrorDiagnostic(file string, data []byte, err error) Diagnostic {
	msg := err.Error()
	d := Diagnostic{File: file, Pos: Pos{Line: 1, Col: 1}, Message: "invalid YAML: " + msg}
	m := yamlLineRegexp().FindStringSubmatch(msg)
	if m == nil {
		return d
	}
	line, _ := strconv.Atoi(m[1])
	problem := m[2]
	d.Message = "invalid YAML: " + problem
	switch {
	case readerProblems[problem]:
		if offset, what, ok := badChar(data); ok {
			d.Pos, d.Message = posAt(data, offset), "invalid YAML: "+what
		}
	case unknownAnchorRegexp().MatchString(problem):
		name := unknownAnchorRegexp().FindStringSubmatch(problem)[1]
		// The parser does not say where; the first use of the alias is where to look.
		if i := bytes.Index(data, []byte("*"+name)); i >= 0 {
			d.Pos = posAt(data, i)
		}
		d.Message += " (an anchor must be defined in the same file, before its first use)"
	default:
		d.Pos, d.Message = syntaxProblem(data, max(line, 1), problem)
	}
	return d
}

// readerProblems are the errors of the parser's input reader, which it reports without a
// position.
var readerProblems = map[string]bool{
	"invalid leading UTF-8 octet":        true,
	"incomplete UTF-8 octet sequence":    true,
	"invalid trailing UTF-8 octet":       true,
	"invalid length of a UTF-8 sequence": true,
	"invalid Unicode character":          true,
	"control characters are not allowed": true,
}

// badChar finds the first character the YAML reader refuses (yaml.v3's readerc.go): bytes
// that are not UTF-8, and control characters other than tab, line feed and carriage return.
func badChar(data []byte) (offset int, what string, ok bool) {
	if bytes.HasPrefix(data, []byte{0xfe, 0xff}) || bytes.HasPrefix(data, []byte{0xff, 0xfe}) {
		return 0, "", false // UTF-16, which the reader decodes itself
	}
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			return i, fmt.Sprintf("invalid UTF-8 byte 0x%02x: save the file as UTF-8", data[i]), true
		case r == 0:
			return i, "NUL byte: a YAML file is text and cannot hold one (is this a binary file?)", true
		case !yamlPrintable(r):
			return i, fmt.Sprintf("control character U+%04X is not allowed: write it as the escape \"\\u%04X\" in a double-quoted string", r, r), true
		}
		i += size
	}
	return 0, "", false
}

func yamlPrintable(r rune) bool {
	return r == 0x09 || r == 0x0a || r == 0x0d || (r >= 0x20 && r <= 0x7e) || r == 0x85 ||
		(r >= 0xa0 && r <= 0xd7ff) || (r >= 0xe000 && r <= 0xfffd) || (r >= 0x10000 && r <= 0x10ffff)
}

// indentationProblems are the parser errors that a line indented too much or too little
// causes.
var indentationProblems = map[string]bool{
	"did not find expected key":                              true,
	"did not find expected '-' indicator":                    true,
	"did not find expected node content":                     true,
	"mapping values are not allowed in this context":         true,
	"block sequence entries are not allowed in this context": true,
	"could not find expected ':'":                            true,
}

// syntaxProblem places a syntax error at the first line where the document fails with it,
// at or after the line the parser named, and says how to fix the common causes.
func syntaxProblem(data []byte, from int, problem string) (Pos, string) {
	line := failingLine(data, from, problem)
	text := lineText(data, line)
	indent := len(text) - len(strings.TrimLeft(text, " \t"))
	pos := Pos{Line: line, Col: utf8.RuneCountInString(text[:indent]) + 1}
	msg := "invalid YAML: " + problem
	switch {
	case strings.Contains(text[:indent], "\t"):
		pos.Col = strings.IndexByte(text, '\t') + 1
		return pos, msg + ": a tab cannot indent YAML, use spaces"
	case strings.HasPrefix(problem, "exceeded max depth"):
		// The parser's own bound, far above ours, which it checks before we can.
		return pos, fmt.Sprintf("the document goes over the loader's limit of %d levels of nested maps and lists here", maxDepth)
	case problem == "found character that cannot start any token":
		if i := strings.IndexAny(text, "@`"); i >= 0 {
			pos.Col = utf8.RuneCountInString(text[:i]) + 1
			return pos, msg + ": quote a value that starts with @ or `"
		}
	case problem == "found unexpected end of stream" || strings.HasPrefix(problem, "did not find expected ',' or"):
		if i := unclosed(text); i >= 0 {
			pos.Col = utf8.RuneCountInString(text[:i]) + 1
		}
		return pos, msg + ": check that the quotes and brackets opened on this line are closed"
	case problem == "mapping values are not allowed in this context":
		// `key: a: b` is a value with ": " in it, not a bad indentation.
		if i := secondMappingColon(text); i >= 0 {
			pos.Col = utf8.RuneCountInString(text[:i]) + 1
			return pos, msg + `: quote a value that contains ": "`
		}
	}
	if indentationProblems[problem] {
		msg += ": check the indentation of this line"
	}
	return pos, msg
}

// failingLine finds the smallest number of whole lines that the parser already refuses
// with problem: the line where the document goes wrong. The search starts at the line the
// parser named, which is mostly at or before that line: it probes prefixes of growing
// length, then bisects, as the prefixes before that line parse or fail otherwise.
//
// Each probe parses its prefix again. The probes stop when they have parsed 16 times the
// file, or twice the largest file, with the best line found so far: a syntax error is
// seldom far from the line the parser names, but a big file would otherwise take seconds
// to locate one.
func failingLine(data []byte, from int, problem string) int {
	ends := lineEnds{data: data}
	total := ends.count()
	budget := min(16*len(data), 2*maxFileBytes)
	fails := func(k int) bool {
		if k >= total {
			return true
		}
		prefix := data[:ends.end(k)]
		budget -= len(prefix)
		return failsWith(prefix, problem)
	}
	good := min(from, total) - 1
	if good > 0 && fails(good) {
		good = 0 // the parser named a line past the problem (the end of the stream)
	}
	bad := total
	for step := 1; good+step < total && budget > 0; step *= 2 {
		if fails(good + step) {
			bad = good + step
			break
		}
		good += step
	}
	for bad-good > 1 && budget > 0 {
		mid := good + (bad-good)/2
		if fails(mid) {
			bad = mid
		} else {
			good = mid
		}
	}
	return bad
}

func failsWith(prefix []byte, problem string) bool {
	var doc yaml.Node
	err := yaml.NewDecoder(bytes.NewReader(prefix)).Decode(&doc)
	if err == nil {
		return false
	}
	m := yamlLineRegexp().FindStringSubmatch(err.Error())
	return m != nil && m[2] == problem
}

// lineEnds finds where lines end, remembering the last one it found so that the probes of
// failingLine, which mostly move forward, do not scan the file from its start each time.
type lineEnds struct {
	data      []byte
	line, off int // line `line` (1-based; 0 before the first) ends before data[off]
}

// count is the number of lines: a last line without a newline counts.
func (l *lineEnds) count() int {
	n := bytes.Count(l.data, []byte("\n"))
	if len(l.data) > 0 && l.data[len(l.data)-1] != '\n' {
		n++
	}
	return max(n, 1)
}

// end is the offset just after line k's newline (or the end of the data).
func (l *lineEnds) end(k int) int {
	if k < l.line {
		l.line, l.off = 0, 0
	}
	for l.line < k {
		i := bytes.IndexByte(l.data[l.off:], '\n')
		if i < 0 {
			l.line, l.off = k, len(l.data)
			break
		}
		l.line, l.off = l.line+1, l.off+i+1
	}
	return l.off
}

// lineText is line k (1-based) without its line break.
func lineText(data []byte, k int) string {
	l := lineEnds{data: data}
	start := l.end(k - 1)
	end := start + bytes.IndexByte(data[start:], '\n')
	if end < start {
		end = len(data)
	}
	return strings.TrimRight(string(data[start:end]), "\r")
}

// unclosed finds the first quote or bracket a line leaves open, or -1. Quotes count where
// a value can start, as in YAML.
func unclosed(line string) int {
	var open []int // the brackets still open, and the quote last
	for i := 0; i < len(line); i++ {
		c := line[i]
		if n := len(open); n > 0 && (line[open[n-1]] == '"' || line[open[n-1]] == '\'') {
			switch {
			case c == '\\' && line[open[n-1]] == '"':
				i++
			case c == line[open[n-1]]:
				open = open[:n-1]
			}
			continue
		}
		switch c {
		case '"', '\'':
			if i == 0 || strings.IndexByte(" [{,", line[i-1]) >= 0 {
				open = append(open, i)
			}
		case '[', '{':
			open = append(open, i)
		case ']', '}':
			if len(open) > 0 {
				open = open[:len(open)-1]
			}
		case '#':
			if i == 0 || line[i-1] == ' ' {
				i = len(line)
			}
		}
	}
	if len(open) == 0 {
		return -1
	}
	return open[0]
}

// secondMappingColon finds the ": " of a mapping inside a plain value (`key: a: b`), or -1.
func secondMappingColon(line string) int {
	first := -1
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case c == '#' && (i == 0 || line[i-1] == ' '):
			return -1
		case (c == '"' || c == '\'') && (i == 0 || line[i-1] == ' '):
			return -1 // quoted: not the case this looks for
		case c == ':' && (i+1 == len(line) || line[i+1] == ' '):
			if first >= 0 {
				return i
			}
			first = i
		}
	}
	return -1
}
