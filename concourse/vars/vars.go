package vars

import (
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Reference is a parsed ((var)): an optional var source, a path and fields into the value.
// `((vault:creds.user))` is {Source: "vault", Path: "creds", Fields: ["user"]}. The source
// "." names the build's local vars.
type Reference struct {
	Source string
	Path   string
	Fields []string
}

// String renders the reference as it is written between the parentheses.
func (r Reference) String() string {
	var b strings.Builder
	if r.Source != "" {
		b.WriteString(r.Source + ":")
	}
	b.WriteString(segmentString(r.Path))
	for _, f := range r.Fields {
		b.WriteByte('.')
		b.WriteString(segmentString(f))
	}
	return b.String()
}

func segmentString(s string) string {
	if strings.ContainsAny(s, ",.:/ ") {
		return fmt.Sprintf("%q", s)
	}
	return s
}

// ParseReference parses the text between `((` and `))`. Dots split fields unless quoted; a
// colon outside quotes ends the source name.
func ParseReference(name string) (Reference, error) {
	if strings.Count(name, `"`)%2 != 0 {
		return Reference{}, fmt.Errorf("invalid var '%s': contains unclosed quotes", name)
	}
	var ref Reference
	rest := name
	if i, ok := findUnquoted(rest, ':'); ok {
		ref.Source = strings.TrimSpace(strings.ReplaceAll(rest[:i], `"`, ""))
		rest = rest[i+1:]
	}
	var fields []string
	for more := true; more; {
		var seg string
		i, found := findUnquoted(rest, '.')
		if found {
			seg, rest = rest[:i], rest[i+1:]
		} else {
			seg = rest
		}
		more = found
		seg = cleanPath(strings.ReplaceAll(strings.TrimSpace(seg), `"`, ""))
		if seg == "" {
			return Reference{}, fmt.Errorf("invalid var '%s': empty field", name)
		}
		fields = append(fields, seg)
	}
	ref.Path = fields[0]
	if len(fields) > 1 {
		ref.Fields = fields[1:]
	}
	return ref, nil
}

func findUnquoted(s string, r rune) (int, bool) {
	quoted := false
	for i, c := range s {
		switch c {
		case r:
			if !quoted {
				return i, true
			}
		case '"':
			quoted = !quoted
		}
	}
	return 0, false
}

func cleanPath(p string) string {
	if p == "" {
		return ""
	}
	if path.IsAbs(p) {
		return path.Clean(p)
	}
	return path.Clean("/" + p)[1:]
}

// Variables is where vars are looked up. Get reports found=false for a var it does not
// have; an error is for a var it has but cannot give (a missing field, a failing backend).
type Variables interface {
	Get(ref Reference) (value any, found bool, err error)
}

// StaticVariables are vars given up front (`-v`, `-y`, `-l`, task `vars:`). They answer
// references without a source only: `((vault:x))` is left for the var source at run time.
type StaticVariables map[string]any

var _ Variables = StaticVariables{}

// Get looks up ref.Path and walks ref.Fields into the value.
func (s StaticVariables) Get(ref Reference) (any, bool, error) {
	if ref.Source != "" {
		return nil, false, nil
	}
	v, ok := s[ref.Path]
	if !ok {
		return nil, false, nil
	}
	v, err := Traverse(v, ref.String(), ref.Fields)
	if err != nil {
		return nil, false, err
	}
	return v, true, nil
}

// Local are local vars, ((.:name)), given up front: the values of an across substep's
// combination, with which Concourse interpolates the substep before it runs. They answer
// references with the source "." only, so that every other var passes through.
type Local map[string]any

var _ Variables = Local{}

// Get looks up ref.Path and walks ref.Fields into the value.
func (l Local) Get(ref Reference) (any, bool, error) {
	if ref.Source != "." {
		return nil, false, nil
	}
	v, ok := l[ref.Path]
	if !ok {
		return nil, false, nil
	}
	v, err := Traverse(v, ref.String(), ref.Fields)
	return v, err == nil, err
}

// Traverse walks fields into a value of nested maps.
func Traverse(v any, name string, fields []string) (any, error) {
	for _, f := range fields {
		switch m := v.(type) {
		case map[string]any:
			next, ok := m[f]
			if !ok {
				return nil, MissingFieldError{Name: name, Field: f}
			}
			v = next
		case map[any]any:
			next, ok := m[f]
			if !ok {
				return nil, MissingFieldError{Name: name, Field: f}
			}
			v = next
		default:
			return nil, InvalidFieldError{Name: name, Field: f}
		}
	}
	return v, nil
}

// Multi looks vars up in each Variables in order; the first that has a var wins.
type Multi []Variables

var _ Variables = Multi{}

// Get returns the first answer that found the var or failed.
func (m Multi) Get(ref Reference) (any, bool, error) {
	for _, v := range m {
		val, found, err := v.Get(ref)
		if found || err != nil {
			return val, found, err
		}
	}
	return nil, false, nil
}

// MissingFieldError is a var whose value has no such field.
type MissingFieldError struct {
	Name  string
	Field string
}

func (e MissingFieldError) Error() string {
	return fmt.Sprintf("missing field '%s' in var: %s", e.Field, e.Name)
}

// InvalidFieldError is a var whose value is not a map, so it has no fields.
type InvalidFieldError struct {
	Name  string
	Field string
}

func (e InvalidFieldError) Error() string {
	return fmt.Sprintf("cannot access field '%s' of non-map value from var: %s", e.Field, e.Name)
}

// UndefinedVarsError lists the vars that were needed and not found.
type UndefinedVarsError struct {
	Vars []string
}

func (e UndefinedVarsError) Error() string {
	return "undefined vars: " + strings.Join(e.Vars, ", ")
}

// InvalidInterpolationError is a var spliced into a longer string whose value is not a
// string or an integer.
type InvalidInterpolationError struct {
	Name  string
	Value any
}

func (e InvalidInterpolationError) Error() string {
	return fmt.Sprintf("cannot interpolate non-primitive value (%T) for var: %s", e.Value, e.Name)
}

// The regexps of ((var)) references are compiled at their first use, not at init: every
// command of the binary would pay for them at start-up.
const interpolationPattern = `\(\((([-/\.\w\pL]+\:)?[-/\.:@"\w\pL]+)\)\)`

var interpolationAnchoredRegex = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\A` + interpolationPattern + `\z`) })

// Names returns the var names referenced in s, in order, as written: what
// interpolationPattern's first group matches, leftmost first, without overlaps. Its
// optional source prefix is made of characters of the name's own class, so a reference
// is "((", one or more of those characters, then "))". Scanned by hand: the regexp was
// a tenth of converting a pipeline.
func Names(s string) []string {
	var names []string
	for i := 0; ; {
		j := strings.Index(s[i:], "((")
		if j < 0 {
			return names
		}
		start := i + j + 2
		end := start
		for end < len(s) {
			r, size := utf8.DecodeRuneInString(s[end:])
			if !nameRune(r) {
				break
			}
			end += size
		}
		if end > start && strings.HasPrefix(s[end:], "))") {
			names = append(names, s[start:end])
			i = end + 2
			continue
		}
		// As the regexp does, the next match is looked for from the next character.
		i = i + j + 1
	}
}

// nameRune tells whether r may be in a reference's name: [-/.:@"\w\pL], \w being ASCII's
// letters, digits and _ as in Go's regexps (an invalid byte is utf8.RuneError, a symbol).
func nameRune(r rune) bool {
	switch {
	case r < utf8.RuneSelf:
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune(`_-/.:@"`, r)
	default:
		return unicode.IsLetter(r)
	}
}

// InterpolateString resolves the vars in one string. When the whole string is one var, the
// value keeps its type (a map, a number); otherwise only strings and integers are spliced
// in. References not found are left in place and returned in missing.
func InterpolateString(s string, v Variables) (value any, missing []Reference, err error) {
	names := Names(s)
	if names == nil {
		return s, nil, nil
	}
	out := s
	for _, name := range names {
		ref, err := ParseReference(name)
		if err != nil {
			return nil, nil, err
		}
		val, found, err := v.Get(ref)
		if err != nil {
			return nil, nil, err
		}
		if !found {
			missing = append(missing, ref)
			continue
		}
		if interpolationAnchoredRegex().MatchString(s) {
			return val, nil, nil
		}
		str, ok := spliceable(val)
		if !ok {
			return nil, nil, InvalidInterpolationError{Name: name, Value: val}
		}
		out = strings.ReplaceAll(out, "(("+name+"))", str)
	}
	return out, missing, nil
}

func spliceable(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case json.Number:
		return x.String(), true
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return fmt.Sprint(x), true
	}
	return "", false
}

// Interpolate resolves every var in a generic JSON value (maps with string keys, lists,
// strings, numbers), map keys included. When strict, a var that is not found is an
// UndefinedVarsError listing every such var; otherwise it stays in place. The input is not
// modified.
func Interpolate(value any, v Variables, strict bool) (any, error) {
	missing := map[string]bool{}
	out, err := interpolate(value, v, missing)
	if err != nil {
		return nil, err
	}
	if strict && len(missing) > 0 {
		names := make([]string, 0, len(missing))
		for n := range missing {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, UndefinedVarsError{Vars: names}
	}
	return out, nil
}

func interpolate(value any, v Variables, missing map[string]bool) (any, error) {
	switch x := value.(type) {
	case string:
		out, miss, err := InterpolateString(x, v)
		for _, r := range miss {
			missing[r.String()] = true
		}
		return out, err
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			r, err := interpolate(e, v, missing)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			r, err := interpolate(e, v, missing)
			if err != nil {
				return nil, err
			}
			key, err := interpolate(k, v, missing)
			if err != nil {
				return nil, err
			}
			ks, ok := key.(string)
			if !ok {
				ks = fmt.Sprint(key)
			}
			out[ks] = r
		}
		return out, nil
	}
	return value, nil
}
