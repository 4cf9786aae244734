package translate

import (
	"bytes"
	"errors"
	"math"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// emitter writes a tree of parseJSON's (objects, slices, strings, float64s, bools, nils) as
// block YAML, byte for byte what yaml.v3's encoder (indent 2) writes for it, several times
// faster: it decides each string's style the way yaml.v3 does for the strings objects hold
// (ASCII, single-line or block literal) and asks yaml.v3 itself about the rest, one scalar
// at a time. What it cannot place (a multi-line key, a key longer than a simple key may be,
// a block scalar with characters it leaves to yaml.v3) makes encode return errUnplaced,
// and the object is then encoded by yaml.v3 whole.
type emitter struct {
	buf []byte
	// start is where the document begins in buf (after what buf held before it).
	start int
}

// errUnplaced says a value needs yaml.v3's whole-document encoder.
var errUnplaced = errors.New("value left to yaml.v3")

// maxSimpleKey is the length past which yaml.v3 writes a key as a complex key ("? ").
const maxSimpleKey = 128

// document writes v as a whole document.
func (e *emitter) document(v any) error {
	if err := e.root(v); err != nil {
		return err
	}
	e.buf = append(e.buf, '\n')
	return nil
}

// root writes v as a document, but for the line break that ends it.
func (e *emitter) root(v any) error {
	switch x := v.(type) {
	case *object:
		if len(x.members) > 0 {
			return e.mapping(x, 0, false)
		}
	case []any:
		if len(x) > 0 {
			return e.sequence(x, 0, false)
		}
	default:
		return e.scalar(v, 0)
	}
	// An empty collection at the root is a flow one.
	e.flowEmpty(v)
	return nil
}

// mapping writes o's members at column indent; inline says the first key follows on the
// current line (after a sequence's "- ").
func (e *emitter) mapping(o *object, indent int, inline bool) error {
	for i, m := range o.members {
		if i > 0 || !inline {
			e.indent(indent)
		}
		if err := e.key(m.key); err != nil {
			return err
		}
		e.buf = append(e.buf, ':')
		if err := e.value(m.val, indent); err != nil {
			return err
		}
	}
	return nil
}

// sequence writes s's items at column indent, each after "- ".
func (e *emitter) sequence(s []any, indent int, inline bool) error {
	for i, v := range s {
		if i > 0 || !inline {
			e.indent(indent)
		}
		e.buf = append(e.buf, '-')
		if err := e.item(v, indent); err != nil {
			return err
		}
	}
	return nil
}

// item writes a sequence's item after its "-", the dash being at column indent.
func (e *emitter) item(v any, indent int) error {
	switch x := v.(type) {
	case *object:
		if len(x.members) > 0 {
			e.buf = append(e.buf, ' ')
			return e.mapping(x, indent+2, true)
		}
	case []any:
		if len(x) > 0 {
			e.buf = append(e.buf, ' ')
			return e.sequence(x, indent+2, true)
		}
	}
	return e.leaf(v, indent)
}

// value writes a mapping's value after its "key:", the key being at column indent.
func (e *emitter) value(v any, indent int) error {
	switch x := v.(type) {
	case *object:
		if len(x.members) > 0 {
			return e.mapping(x, indent+2, false)
		}
	case []any:
		if len(x) > 0 {
			return e.sequence(x, indent+2, false)
		}
	}
	return e.leaf(v, indent)
}

// leaf writes " " and a scalar or an empty collection, the line it ends being at column
// indent (a block scalar's lines go two columns further).
func (e *emitter) leaf(v any, indent int) error {
	e.buf = append(e.buf, ' ')
	switch v.(type) {
	case *object, []any:
		e.flowEmpty(v)
		return nil
	}
	return e.scalar(v, indent)
}

func (e *emitter) flowEmpty(v any) {
	if _, ok := v.([]any); ok {
		e.buf = append(e.buf, "[]"...)
		return
	}
	e.buf = append(e.buf, "{}"...)
}

// indent ends the current line, if any, and starts one at column n.
func (e *emitter) indent(n int) {
	if len(e.buf) > e.start {
		e.buf = append(e.buf, '\n')
	}
	e.spaces(n)
}

// spaces writes n spaces.
func (e *emitter) spaces(n int) {
	const spaces = "                                                                "
	for ; n > len(spaces); n -= len(spaces) {
		e.buf = append(e.buf, spaces...)
	}
	e.buf = append(e.buf, spaces[:n]...)
}

func (e *emitter) key(k string) error {
	if len(k) > maxSimpleKey || strings.ContainsAny(k, "\n\r") || !isASCIIText(k) {
		return errUnplaced
	}
	return e.line(k)
}

func (e *emitter) scalar(v any, indent int) error {
	switch x := v.(type) {
	case nil:
		e.buf = append(e.buf, "null"...)
	case bool:
		e.buf = strconv.AppendBool(e.buf, x)
	case float64:
		e.buf = appendFloat(e.buf, x)
	case string:
		return e.text(x, isASCIIText(x), indent)
	default:
		return errUnplaced
	}
	return nil
}

// appendFloat writes a JSON number as yaml.v3 writes a float64.
func appendFloat(b []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(b, ".inf"...)
	case math.IsInf(f, -1):
		return append(b, "-.inf"...)
	case math.IsNaN(f):
		return append(b, ".nan"...)
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}

// text writes a string scalar; ascii says whether isASCIIText(s).
func (e *emitter) text(s string, ascii bool, indent int) error {
	if strings.IndexByte(s, '\n') >= 0 {
		if !ascii {
			return errUnplaced
		}
		return e.literal(s, indent)
	}
	return e.lineOf(s, ascii)
}

// line writes a string with no line break: plain when yaml.v3 would, else single-quoted
// when it may be; anything else (numbers, booleans and nulls as strings, characters
// outside printable ASCII) as yaml.v3 writes the string alone, which for a single line
// does not depend on where it stands.
func (e *emitter) line(s string) error {
	return e.lineOf(s, isASCIIText(s))
}

// lineOf is line, ascii saying whether isASCIIText(s).
func (e *emitter) lineOf(s string, ascii bool) error {
	if !ascii || s == "" {
		return e.byYAML(s)
	}
	switch resolveHint(s[0]) {
	case 'D', 'S', '.':
		switch {
		case allDigits(s):
			// An integer to yaml.v3 (or a float: "09"), so double-quoted.
			e.buf = append(append(append(e.buf, '"'), s...), '"')
			return nil
		case !numberLike(s):
			// A string whatever its first character: style as below.
		default:
			return e.byYAML(s)
		}
	case 'M':
		if isReserved(s) {
			e.buf = strconv.AppendQuote(e.buf, s)
			return nil
		}
	}
	if word(s) {
		// Most keys and many values: plain, as analyse would find.
		e.buf = append(e.buf, s...)
		return nil
	}
	if isIndicator[s[0]] {
		// Not plain, and single-quoted: analyse refuses that only to a line break, which
		// a line has none of. A step's spec, a long line of JSON, is one of these.
		e.singleQuoted(s)
		return nil
	}
	a := analyse(s)
	switch {
	case a.plain:
		e.buf = append(e.buf, s...)
	case a.single:
		e.singleQuoted(s)
	default:
		return e.byYAML(s)
	}
	return nil
}

// isIndicator are the characters that make a scalar they begin not plain, whatever
// follows (yaml_emitter_analyze_scalar's block indicators).
var isIndicator = [256]bool{'#': true, ',': true, '[': true, ']': true, '{': true, '}': true, '&': true, '*': true,
	'!': true, '|': true, '>': true, '\'': true, '"': true, '%': true, '@': true, '`': true}

// singleQuoted writes s single-quoted, its quotes doubled.
func (e *emitter) singleQuoted(s string) {
	e.buf = append(e.buf, '\'')
	for {
		i := strings.IndexByte(s, '\'')
		if i < 0 {
			break
		}
		e.buf = append(append(e.buf, s[:i+1]...), '\'')
		s = s[i+1:]
	}
	e.buf = append(append(e.buf, s...), '\'')
}

// word says s is a letter followed by letters, digits and "-_./": a plain scalar to
// analyse, once line has set aside the words YAML 1.1 reads as something else.
func word(s string) bool {
	if s == "" || !('a' <= s[0] && s[0] <= 'z' || 'A' <= s[0] && s[0] <= 'Z') {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == '/') {
			return false
		}
	}
	return true
}

// literal writes a multi-line string of printable ASCII as a literal block scalar, as
// yaml.v3 does when it may; its lines go at column indent+2.
func (e *emitter) literal(s string, indent int) error {
	a := analyse(s)
	if !a.block {
		// Double-quoted on one line, whatever the context.
		return e.byYAML(s)
	}
	e.buf = append(e.buf, '|')
	if s[0] == ' ' || s[0] == '\n' {
		e.buf = append(e.buf, '2')
	}
	switch {
	case s[len(s)-1] != '\n':
		e.buf = append(e.buf, '-')
	case len(s) == 1 || s[len(s)-2] == '\n':
		e.buf = append(e.buf, '+')
	}
	e.buf = append(e.buf, '\n')
	breaks := true
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			e.buf = append(e.buf, '\n')
			breaks = true
			continue
		}
		if breaks {
			e.spaces(indent + 2)
			breaks = false
		}
		e.buf = append(e.buf, s[i])
	}
	// The line break that ends the scalar is the string's last, or the next item's.
	if e.buf[len(e.buf)-1] == '\n' {
		e.buf = e.buf[:len(e.buf)-1]
	}
	return nil
}

// byYAML writes a single-line scalar as yaml.v3 writes it as a document of its own.
func (e *emitter) byYAML(s string) error {
	out, err := yaml.Marshal(s)
	if err != nil {
		return err
	}
	out = bytes.TrimSuffix(out, []byte("\n"))
	if bytes.IndexByte(out, '\n') >= 0 {
		return errUnplaced
	}
	e.buf = append(e.buf, out...)
	return nil
}

// isASCIIText says s holds printable ASCII and line feeds alone. It looks at eight bytes
// at a time: the spec of every step, a long line of JSON, goes through it.
func isASCIIText(s string) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(s); i += 8 {
		_ = s[i+7]
		x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		// No byte of 0x80 or more, none under 0x20 (a line feed is, and is looked at
		// byte by byte below), none 0x7f. Below 0x80, a byte plus 0x60 has its high bit
		// set where it is 0x20 or more, plus 1 where it is 0x7f, and neither carries
		// into the next byte.
		if (x|^(x+0x60*ones)|(x+ones))&highs != 0 {
			if !asciiBytes(s[i : i+8]) {
				return false
			}
		}
	}
	return asciiBytes(s[i:])
}

func asciiBytes(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\n') || c >= 0x7f {
			return false
		}
	}
	return true
}

// resolveHint is yaml.v3's first-character hint of what an unquoted scalar may resolve to
// besides a string: 'D' digit, 'S' sign, '.' float, 'M' a word of its table.
func resolveHint(c byte) byte {
	switch {
	case c == '+' || c == '-':
		return 'S'
	case c >= '0' && c <= '9':
		return 'D'
	case c == '.':
		return '.'
	case strings.IndexByte("yYnNtTfFoO~", c) >= 0:
		return 'M'
	}
	return 0
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// numberLike says s holds only characters that yaml.v3's integers, floats (.inf and .nan
// included), timestamps and base-60 floats are written with: a string with any other
// character resolves to a string.
func numberLike(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' ||
			strings.IndexByte("_+-.:xXoOtTzZiInN \t", c) >= 0) {
			return false
		}
	}
	return true
}

// isReserved says s, unquoted, would read as a boolean or null to yaml.v3 or to a YAML 1.1
// reader; yaml.v3 double-quotes it.
func isReserved(s string) bool {
	switch s {
	case "true", "True", "TRUE", "false", "False", "FALSE", "~", "null", "Null", "NULL",
		"y", "Y", "yes", "Yes", "YES", "on", "On", "ON", "n", "N", "no", "No", "NO", "off", "Off", "OFF":
		return true
	}
	return false
}

// analysis is what yaml.v3's emitter (yaml_emitter_analyze_scalar) allows for a string of
// printable ASCII and line feeds in block context.
type analysis struct {
	plain, single, block bool
}

// analysed are the bytes analyse looks at past a scalar's first.
var analysed = [256]bool{' ': true, '\n': true, ':': true, '#': true}

func analyse(s string) analysis {
	var blockIndicators, lineBreaks, leadingSpace, leadingBreak, trailingSpace, trailingBreak, breakSpace, spaceBreak bool
	if strings.HasPrefix(s, "---") || strings.HasPrefix(s, "...") {
		blockIndicators = true
	}
	precededByWhitespace, previousSpace, previousBreak := true, false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if i > 0 && !analysed[c] {
			// A run of bytes that say nothing on their own: skip it.
			for i+1 < len(s) && !analysed[s[i+1]] {
				i++
			}
			precededByWhitespace, previousSpace, previousBreak = false, false, false
			continue
		}
		followedByWhitespace := i+1 >= len(s) || s[i+1] == ' ' || s[i+1] == '\n'
		if i == 0 {
			switch {
			case isIndicator[c]:
				blockIndicators = true
			case c == '?' || c == ':' || c == '-':
				if followedByWhitespace {
					blockIndicators = true
				}
			}
		} else {
			switch c {
			case ':':
				if followedByWhitespace {
					blockIndicators = true
				}
			case '#':
				if precededByWhitespace {
					blockIndicators = true
				}
			}
		}
		switch c {
		case ' ':
			if i == 0 {
				leadingSpace = true
			}
			if i == len(s)-1 {
				trailingSpace = true
			}
			if previousBreak {
				breakSpace = true
			}
			previousSpace, previousBreak = true, false
		case '\n':
			lineBreaks = true
			if i == 0 {
				leadingBreak = true
			}
			if i == len(s)-1 {
				trailingBreak = true
			}
			if previousSpace {
				spaceBreak = true
			}
			previousSpace, previousBreak = false, true
		default:
			previousSpace, previousBreak = false, false
		}
		precededByWhitespace = c == ' ' || c == '\n'
	}
	a := analysis{plain: true, single: true, block: true}
	if leadingSpace || leadingBreak || trailingSpace || trailingBreak || lineBreaks || blockIndicators {
		a.plain = false
	}
	if trailingSpace || spaceBreak {
		a.block = false
	}
	if breakSpace || spaceBreak {
		a.plain, a.single = false, false
	}
	return a
}

// keyLess is yaml.v3's order of a map's string keys (keyList.Less) for ASCII keys: runs
// of digits by their numeric value, letters before other characters, else byte by byte.
// (A non-ASCII key makes the emitter leave the object to yaml.v3, which orders it itself.)
func keyLess(a, b string) bool {
	isDigit := func(c byte) bool { return c >= '0' && c <= '9' }
	isLetter := func(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
	digits := false
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] == b[i] {
			digits = isDigit(a[i])
			continue
		}
		al, bl := isLetter(a[i]), isLetter(b[i])
		if al && bl {
			return a[i] < b[i]
		}
		if al || bl {
			if digits {
				return al
			}
			return bl
		}
		var an, bn int64
		if a[i] == '0' || b[i] == '0' {
			for j := i - 1; j >= 0 && isDigit(a[j]); j-- {
				if a[j] != '0' {
					an, bn = 1, 1
					break
				}
			}
		}
		ai, bi := i, i
		for ; ai < len(a) && isDigit(a[ai]); ai++ {
			an = an*10 + int64(a[ai]-'0')
		}
		for ; bi < len(b) && isDigit(b[bi]); bi++ {
			bn = bn*10 + int64(b[bi]-'0')
		}
		if an != bn {
			return an < bn
		}
		if ai != bi {
			return ai < bi
		}
		return a[i] < b[i]
	}
	return len(a) < len(b)
}
