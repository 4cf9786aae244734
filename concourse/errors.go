package concourse

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// PathElem is one step of a path into a config: a map key, or a list index (with the
// name of the element when it has one, so paths read `jobs[unit]` rather than `jobs[3]`).
type PathElem struct {
	key     string
	index   int
	name    string
	isIndex bool
}

// Key is a map key path element.
func Key(k string) PathElem { return PathElem{key: k} }

// Index is a list index path element.
func Index(i int) PathElem { return PathElem{index: i, isIndex: true} }

// Named is a list index path element whose element has a name.
func Named(i int, name string) PathElem { return PathElem{index: i, name: name, isIndex: true} }

// Path locates a node in a config, from the document's root.
type Path []PathElem

// Child returns a new path with elems appended; p itself is not modified.
func (p Path) Child(elems ...PathElem) Path {
	out := make(Path, 0, len(p)+len(elems))
	return append(append(out, p...), elems...)
}

// maxPathName is the longest name a path shows: a longer one is shown by its index.
const maxPathName = 256

// String renders the path as users read it: `jobs[unit].plan[2].task`.
func (p Path) String() string {
	var b strings.Builder
	for _, e := range p {
		switch {
		case e.isIndex && e.name != "" && len(e.name) <= maxPathName:
			b.WriteString("[" + e.name + "]")
		case e.isIndex:
			b.WriteString("[" + strconv.Itoa(e.index) + "]")
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(e.key)
		}
	}
	return b.String()
}

// pointer renders the path as a key into the position index: `/jobs/3/plan/2/task`.
func (p Path) pointer() string {
	var b strings.Builder
	for _, e := range p {
		b.WriteByte('/')
		if e.isIndex {
			b.WriteString(strconv.Itoa(e.index))
		} else {
			b.WriteString(e.key)
		}
	}
	return b.String()
}

// Pos is a position in a YAML document, 1-based.
type Pos struct {
	Line, Col int
}

// Severity tells errors from warnings.
type Severity int

const (
	// SeverityError makes a config invalid.
	SeverityError Severity = iota
	// SeverityWarning is reported but does not stop anything.
	SeverityWarning
)

// Diagnostic is one problem found in a config, with where it is.
type Diagnostic struct {
	Severity Severity
	File     string
	Pos      Pos
	Path     Path
	Message  string
	// Rule is the format of the rule that gave the diagnostic (Validate's, and a task
	// config's; empty for the loader's problems): a rule's identity, by which the judge
	// checks, against Concourse's own validator, that every rule is Concourse's.
	Rule string
}

// Error renders the diagnostic as `file:line:col: path: message`.
func (d Diagnostic) Error() string {
	var b strings.Builder
	if d.File != "" {
		b.WriteString(d.File)
		if d.Pos.Line > 0 {
			fmt.Fprintf(&b, ":%d:%d", d.Pos.Line, d.Pos.Col)
		}
		b.WriteString(": ")
	}
	if len(d.Path) > 0 {
		b.WriteString(d.Path.String())
		b.WriteString(": ")
	}
	b.WriteString(d.Message)
	return b.String()
}

// Diagnostics are every problem found in a config, errors and warnings.
type Diagnostics []Diagnostic

// Errors returns the diagnostics that are errors.
func (ds Diagnostics) Errors() Diagnostics { return ds.filter(SeverityError) }

// Warnings returns the diagnostics that are warnings.
func (ds Diagnostics) Warnings() Diagnostics { return ds.filter(SeverityWarning) }

func (ds Diagnostics) filter(s Severity) Diagnostics {
	var out Diagnostics
	for _, d := range ds {
		if d.Severity == s {
			out = append(out, d)
		}
	}
	return out
}

// Err returns the errors as one error (an *InvalidConfigError), or nil when there are none.
func (ds Diagnostics) Err() error {
	errs := ds.Errors()
	if len(errs) == 0 {
		return nil
	}
	return &InvalidConfigError{Diagnostics: errs}
}

// sort orders diagnostics by file and position, keeping the order of equal positions.
func (ds Diagnostics) sort() {
	sort.SliceStable(ds, func(i, j int) bool {
		a, b := ds[i], ds[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Pos.Line != b.Pos.Line {
			return a.Pos.Line < b.Pos.Line
		}
		return a.Pos.Col < b.Pos.Col
	})
}

// InvalidConfigError is a config with errors. Its message lists all of them, one per line.
type InvalidConfigError struct {
	Diagnostics Diagnostics
}

func (e *InvalidConfigError) Error() string {
	lines := make([]string, len(e.Diagnostics))
	for i, d := range e.Diagnostics {
		lines[i] = d.Error()
	}
	return strings.Join(lines, "\n")
}

// FieldError is a problem with a field, relative to the object that was validated.
type FieldError struct {
	Field   Path
	Message string
	// Rule is the message's format: the rule's identity (Diagnostic.Rule).
	Rule string
}

// fieldError is the FieldError of a rule, named by its format.
func fieldError(field Path, format string, args ...any) FieldError {
	return FieldError{Field: field, Message: fmt.Sprintf(format, args...), Rule: format}
}

// unknownFieldError is a key that a strict decoder does not know.
type unknownFieldError struct {
	key   string
	known map[string]bool
}

func (e *unknownFieldError) Error() string {
	return fmt.Sprintf("unknown field %q%s", e.key, suggest(e.key, e.known))
}

// pathError carries the path at which decoding failed, so that a decode error deep inside a
// step can be reported at its position. Each level of decoding prepends its own element.
type pathError struct {
	path Path
	err  error
}

func (e *pathError) Error() string {
	if len(e.path) == 0 {
		return e.err.Error()
	}
	return e.path.String() + ": " + e.err.Error()
}

func (e *pathError) Unwrap() error { return e.err }

// atPath prepends elems to err's path.
func atPath(err error, elems ...PathElem) error {
	var pe *pathError
	if errors.As(err, &pe) {
		return &pathError{path: append(append(Path{}, elems...), pe.path...), err: pe.err}
	}
	return &pathError{path: append(Path{}, elems...), err: err}
}

func quotedList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
