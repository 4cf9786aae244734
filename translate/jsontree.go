package translate

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// object is a JSON object whose members are in the order yaml.v3 writes a map's keys.
type object struct {
	members []member
}

type member struct {
	key string
	val any
}

// parseJSON decodes JSON (json.Marshal's) into the tree the emitter writes: *object,
// []any, string, float64, bool and nil; an empty `status` object and a null
// `creationTimestamp` (what Go's zero values add and nobody wrote) are left out, at any
// depth. It is encoding/json's decoding into interfaces without the maps: objects are
// read into a slice and sorted once.
func parseJSON(data []byte) (any, error) {
	p := jsonParser{data: data}
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	p.space()
	if p.pos != len(p.data) {
		return nil, p.errorf("data after the value")
	}
	return v, nil
}

type jsonParser struct {
	data []byte
	pos  int
}

func (p *jsonParser) errorf(format string, args ...any) error {
	return fmt.Errorf("JSON at offset %d: %s", p.pos, fmt.Sprintf(format, args...))
}

func (p *jsonParser) space() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *jsonParser) value() (any, error) {
	p.space()
	if p.pos >= len(p.data) {
		return nil, p.errorf("unexpected end")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		return p.string()
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	}
	for _, lit := range []struct {
		text string
		val  any
	}{{"true", true}, {"false", false}, {"null", nil}} {
		if len(p.data)-p.pos >= len(lit.text) && string(p.data[p.pos:p.pos+len(lit.text)]) == lit.text {
			p.pos += len(lit.text)
			return lit.val, nil
		}
	}
	return nil, p.errorf("unexpected %q", p.data[p.pos])
}

func (p *jsonParser) object() (any, error) {
	p.pos++ // {
	o := &object{}
	p.space()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return o, nil
	}
	for {
		p.space()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return nil, p.errorf("expected a key")
		}
		key, err := p.string()
		if err != nil {
			return nil, err
		}
		p.space()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return nil, p.errorf("expected ':'")
		}
		p.pos++
		val, err := p.value()
		if err != nil {
			return nil, err
		}
		if !dropped(key, wroteOf(val)) {
			o.members = append(o.members, member{key, val})
		}
		more, err := p.separator('}')
		if err != nil {
			return nil, err
		}
		if !more {
			sortMembers(o.members)
			return o, nil
		}
	}
}

// separator reads what follows a member or an element: ',' says
// more follow, close ends the object or array.
func (p *jsonParser) separator(close byte) (more bool, err error) {
	p.space()
	if p.pos >= len(p.data) {
		return false, p.errorf("unexpected end")
	}
	p.pos++
	switch p.data[p.pos-1] {
	case ',':
		return true, nil
	case close:
		return false, nil
	}
	return false, p.errorf("expected ',' or '%c'", close)
}

func (p *jsonParser) array() (any, error) {
	p.pos++ // [
	a := []any{}
	p.space()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return a, nil
	}
	for {
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		a = append(a, v)
		more, err := p.separator(']')
		if err != nil {
			return nil, err
		}
		if !more {
			return a, nil
		}
	}
}

func (p *jsonParser) number() (any, error) {
	start := p.pos
	for p.pos < len(p.data) && (p.data[p.pos] >= '0' && p.data[p.pos] <= '9' || strings.IndexByte("+-.eE", p.data[p.pos]) >= 0) {
		p.pos++
	}
	f, err := strconv.ParseFloat(string(p.data[start:p.pos]), 64)
	if err != nil {
		return nil, p.errorf("number %q: %v", p.data[start:p.pos], err)
	}
	return f, nil
}

// string reads a string, its escapes decoded as encoding/json decodes them (a lone
// surrogate becomes U+FFFD).
func (p *jsonParser) string() (string, error) {
	p.pos++ // "
	start := p.pos
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case '"':
			s := string(p.data[start:p.pos])
			p.pos++
			return s, nil
		case '\\':
			return p.escaped(start)
		}
		p.pos++
	}
	return "", p.errorf("unterminated string")
}

// escaped reads the rest of a string from its first backslash. The unescaped text is
// never longer than the escaped, so it is built in one allocation.
func (p *jsonParser) escaped(start int) (string, error) {
	var out strings.Builder
	out.Grow(p.quotedLen(start))
	out.Write(p.data[start:p.pos])
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			return out.String(), nil
		case c != '\\':
			out.WriteByte(c)
			p.pos++
			continue
		}
		if p.pos+1 >= len(p.data) {
			break
		}
		p.pos += 2
		switch e := p.data[p.pos-1]; e {
		case '"', '\\', '/':
			out.WriteByte(e)
		case 'b':
			out.WriteByte('\b')
		case 'f':
			out.WriteByte('\f')
		case 'n':
			out.WriteByte('\n')
		case 'r':
			out.WriteByte('\r')
		case 't':
			out.WriteByte('\t')
		case 'u':
			r, ok := p.hex4()
			if !ok {
				return "", p.errorf("bad \\u escape")
			}
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if p.pos+1 < len(p.data) && p.data[p.pos] == '\\' && p.data[p.pos+1] == 'u' {
					save := p.pos
					p.pos += 2
					if r2, ok = p.hex4(); !ok {
						return "", p.errorf("bad \\u escape")
					}
					if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
						out.WriteRune(d)
						continue
					}
					p.pos = save
				}
				r = utf8.RuneError
			}
			out.WriteRune(r)
		default:
			return "", p.errorf("bad escape \\%c", e)
		}
	}
	return "", p.errorf("unterminated string")
}

// quotedLen is the length of the string's escaped text from start to its closing quote
// (or to the end of the data).
func (p *jsonParser) quotedLen(start int) int {
	for i := p.pos; i < len(p.data); i++ {
		switch p.data[i] {
		case '"':
			return i - start
		case '\\':
			i++
		}
	}
	return len(p.data) - start
}

func (p *jsonParser) hex4() (rune, bool) {
	if p.pos+4 > len(p.data) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(p.data[p.pos:p.pos+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	p.pos += 4
	return rune(n), true
}
