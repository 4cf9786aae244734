package runspec

import (
	"bytes"
	"cmp"
	"encoding"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// A spec's JSON is the bytes encoding/json writes for it (HTML left unescaped), written
// here as it writes them: each struct type by a plan made once (its fields in their
// declaration order, each with its writer and its test of omitempty or omitzero), maps
// with their keys sorted as strings, generic values by a type switch. encoding/json finds
// each field's encoder through an interface, sorts each map's keys as reflect.Values and
// walks generic values by reflection: the translator encodes the spec of every step it
// compiles, and that was the largest cost of `convert` after the YAML writer. A struct no
// plan describes (an embedded field, a tag's name that is not a plain word or that two
// fields share, another option) and a value of a type the writer does not know (a
// json.Number, a float JSON cannot hold, a type with its own MarshalJSON) are encoded by
// encoding/json itself. TestAppendJSON, TestWriterOf and FuzzAppendJSON hold the two
// equal, and the translator's corpus test does for every spec the corpus makes.

// jsonWriter appends JSON to buf.
type jsonWriter struct {
	buf []byte
	// keys holds the sorted keys of the maps being written, the outermost's first.
	keys []string
	// err is encoding/json's error for a value it was asked to encode, if any.
	err error
}

// null writes null, what encoding/json writes for a nil map, slice, pointer or interface.
func (w *jsonWriter) null() { w.buf = append(w.buf, "null"...) }

// comma writes the comma that comes before item i of a list or an object, but the first.
func (w *jsonWriter) comma(i int) {
	if i > 0 {
		w.buf = append(w.buf, ',')
	}
}

// jsonWriters keep their buffer of keys from one spec to the next.
var jsonWriters = sync.Pool{New: func() any { return new(jsonWriter) }}

// writeSpec writes a spec, given addressable, as encoding/json writes a *Spec.
var writeSpec = sync.OnceValue(func() func(*jsonWriter, reflect.Value) { return writerOf(reflect.TypeFor[Spec]()) })

// str writes s as encoding/json writes a string: '"' and '\\' escaped with a backslash,
// the control characters as \b, \f, \n, \r, \t or \u00XX, each byte of an invalid UTF-8
// sequence as \ufffd, and U+2028 and U+2029 as \u2028 and \u2029.
func (w *jsonWriter) str(s string) {
	const hex = "0123456789abcdef"
	b := append(w.buf, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= ' ' && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			if esc := shortEscapes[c]; esc != 0 {
				b = append(b, '\\', esc)
			} else {
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(append(b, s[start:i]...), `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(append(b, s[start:i]...), '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	w.buf = append(append(b, s[start:]...), '"')
}

// shortEscapes are the characters encoding/json escapes with a backslash and a letter
// (or themselves).
var shortEscapes = [utf8.RuneSelf]byte{'"': '"', '\\': '\\', '\b': 'b', '\f': 'f', '\n': 'n', '\r': 'r', '\t': 't'}

// value writes a generic value: what a JSON or YAML decoder makes (maps, slices, strings,
// booleans, nil, float64s) by hand, anything else by encoding/json.
func (w *jsonWriter) value(v any) {
	switch x := v.(type) {
	case nil:
		w.null()
	case string:
		w.str(x)
	case bool:
		w.buf = strconv.AppendBool(w.buf, x)
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			w.viaJSON(x) // which refuses it
			return
		}
		w.float(x)
	case map[string]any:
		writeMap(w, x, (*jsonWriter).value)
	case []any:
		if x == nil {
			w.null()
			return
		}
		w.buf = append(w.buf, '[')
		for i, item := range x {
			w.comma(i)
			w.value(item)
		}
		w.buf = append(w.buf, ']')
	default:
		w.viaJSON(v)
	}
}

// float writes a finite float64 as encoding/json does: the shortest decimal that reads
// back as f, in exponent form below 1e-6 and from 1e21, its exponent with no leading
// zero.
func (w *jsonWriter) float(f float64) {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	start := len(w.buf)
	w.buf = strconv.AppendFloat(w.buf, f, format, -1, 64)
	if format == 'e' {
		// e-07 is e-7.
		if n := len(w.buf); n-start >= 4 && w.buf[n-4] == 'e' && w.buf[n-3] == '-' && w.buf[n-2] == '0' {
			w.buf[n-2] = w.buf[n-1]
			w.buf = w.buf[:n-1]
		}
	}
}

// viaJSON writes v as encoding/json writes it as a value of an `any`: by itself, HTML
// left unescaped.
func (w *jsonWriter) viaJSON(v any) {
	buf := bytes.NewBuffer(w.buf)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		w.err = cmp.Or(w.err, err)
		return
	}
	w.buf = bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// raw writes a json.RawMessage as encoding/json does: compacted, null when nil.
func (w *jsonWriter) raw(m json.RawMessage) {
	if m == nil {
		w.null()
		return
	}
	buf := bytes.NewBuffer(w.buf)
	if err := json.Compact(buf, m); err != nil {
		// Marshal's error, naming the type whose MarshalJSON wrote what is not JSON.
		w.viaJSON(m)
		return
	}
	w.buf = buf.Bytes()
}

// writeMap writes a map, its keys sorted, each value by value; nil is null.
func writeMap[V any](w *jsonWriter, m map[string]V, value func(*jsonWriter, V)) {
	if m == nil {
		w.null()
		return
	}
	// The keys go on w.keys, above those of the maps m is in: a map in m puts its own
	// above them, and takes them off again, before the next of m's.
	start := len(w.keys)
	for k := range m {
		w.keys = append(w.keys, k)
	}
	keys := w.keys[start:]
	slices.Sort(keys)
	w.buf = append(w.buf, '{')
	for i, k := range keys {
		w.comma(i)
		w.str(k)
		w.buf = append(w.buf, ':')
		value(w, m[k])
	}
	w.buf = append(w.buf, '}')
	clear(keys)
	w.keys = w.keys[:start]
}

// writerOf is how the values of type t are written, as encoding/json writes them: v is
// addressable where encoding/json's would be (a field reached through a pointer). It
// writes the kinds of values a spec holds itself, and asks encoding/json for the others.
func writerOf(t reflect.Type) func(w *jsonWriter, v reflect.Value) {
	switch {
	case t == rawMessageType:
		return func(w *jsonWriter, v reflect.Value) { w.raw(v.Bytes()) }
	case t.Implements(jsonMarshaler), t.Implements(textMarshaler),
		reflect.PointerTo(t).Implements(jsonMarshaler), reflect.PointerTo(t).Implements(textMarshaler):
		return func(w *jsonWriter, v reflect.Value) {
			if v.CanAddr() {
				v = v.Addr() // its pointer's methods apply, as they do in encoding/json
			}
			w.viaJSON(v.Interface())
		}
	}
	switch t.Kind() {
	case reflect.String:
		return func(w *jsonWriter, v reflect.Value) { w.str(v.String()) }
	case reflect.Bool:
		return func(w *jsonWriter, v reflect.Value) { w.buf = strconv.AppendBool(w.buf, v.Bool()) }
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return func(w *jsonWriter, v reflect.Value) { w.buf = strconv.AppendInt(w.buf, v.Int(), 10) }
	case reflect.Interface:
		return func(w *jsonWriter, v reflect.Value) { w.value(v.Interface()) }
	case reflect.Pointer:
		elem := writerOf(t.Elem())
		return orNull(func(w *jsonWriter, v reflect.Value) { elem(w, v.Elem()) })
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			break // bytes, in base64
		}
		item := writerOf(t.Elem())
		return orNull(func(w *jsonWriter, v reflect.Value) {
			w.buf = append(w.buf, '[')
			for i := range v.Len() {
				w.comma(i)
				item(w, v.Index(i))
			}
			w.buf = append(w.buf, ']')
		})
	case reflect.Map:
		return func(w *jsonWriter, v reflect.Value) {
			switch m := v.Interface().(type) {
			case map[string]any:
				writeMap(w, m, (*jsonWriter).value)
			case map[string]string:
				writeMap(w, m, (*jsonWriter).str)
			case map[string]int:
				writeMap(w, m, func(w *jsonWriter, n int) { w.buf = strconv.AppendInt(w.buf, int64(n), 10) })
			default:
				w.viaJSON(m)
			}
		}
	case reflect.Struct:
		// The plan is made when the first value is written: a struct may hold its own
		// type (a Node its steps).
		plan := sync.OnceValue(func() *structPlan { return planOf(t) })
		return func(w *jsonWriter, v reflect.Value) { w.writeStruct(v, plan()) }
	}
	// Numbers not ints, byte slices, arrays, channels (which encoding/json refuses).
	return func(w *jsonWriter, v reflect.Value) { w.viaJSON(v.Interface()) }
}

// orNull writes a nil pointer or slice as null, others by write.
func orNull(write func(*jsonWriter, reflect.Value)) func(*jsonWriter, reflect.Value) {
	return func(w *jsonWriter, v reflect.Value) {
		if v.IsNil() {
			w.null()
			return
		}
		write(w, v)
	}
}

var (
	jsonMarshaler  = reflect.TypeFor[json.Marshaler]()
	textMarshaler  = reflect.TypeFor[encoding.TextMarshaler]()
	rawMessageType = reflect.TypeFor[json.RawMessage]()
	isZeroer       = reflect.TypeFor[interface{ IsZero() bool }]()
)

// structPlan is how a struct type is written: its fields, or, where viaJSON, by
// encoding/json.
type structPlan struct {
	fields  []fieldPlan
	viaJSON bool
}

// fieldPlan is how a struct's field is written.
type fieldPlan struct {
	index int
	// key is the member's name, quoted, and its colon.
	key string
	// omitted, when set, says the field's value is left out (omitempty, omitzero).
	omitted func(reflect.Value) bool
	write   func(*jsonWriter, reflect.Value)
}

// writeStruct writes a struct of plan p.
func (w *jsonWriter) writeStruct(v reflect.Value, p *structPlan) {
	if p.viaJSON {
		if v.CanAddr() {
			v = v.Addr()
		}
		w.viaJSON(v.Interface())
		return
	}
	w.buf = append(w.buf, '{')
	n := 0
	for i := range p.fields {
		f := &p.fields[i]
		fv := v.Field(f.index)
		if f.omitted != nil && f.omitted(fv) {
			continue
		}
		w.comma(n)
		n++
		w.buf = append(w.buf, f.key...)
		f.write(w, fv)
	}
	w.buf = append(w.buf, '}')
}

// planOf makes t's plan.
func planOf(t reflect.Type) *structPlan {
	p := &structPlan{}
	names := map[string]bool{}
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if sf.Anonymous {
			return &structPlan{viaJSON: true}
		}
		if !sf.IsExported() || tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = sf.Name
		}
		if !plainWord(name) || names[name] {
			return &structPlan{viaJSON: true}
		}
		names[name] = true
		f := fieldPlan{index: i, key: `"` + name + `":`, write: writerOf(sf.Type)}
		for opt := range strings.SplitSeq(opts, ",") {
			var omitted func(reflect.Value) bool
			switch opt {
			case "":
				continue
			case "omitempty":
				omitted = emptyTest(sf.Type)
			case "omitzero":
				if !sf.Type.Implements(isZeroer) && !reflect.PointerTo(sf.Type).Implements(isZeroer) {
					omitted = reflect.Value.IsZero
				}
			}
			if omitted == nil || f.omitted != nil {
				// Another option (string), a type whose values omitempty never leaves
				// out, an IsZero method to call, both options.
				return &structPlan{viaJSON: true}
			}
			f.omitted = omitted
		}
		p.fields = append(p.fields, f)
	}
	return p
}

// plainWord says name is of ASCII letters, digits, '_' and '-': a name encoding/json takes
// from a tag as it is.
func plainWord(name string) bool {
	for _, c := range []byte(name) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return name != ""
}

// emptyTest is encoding/json's omitempty test for values of type t, or nil for a type
// whose values it never leaves out (which a plan leaves to encoding/json).
func emptyTest(t reflect.Type) func(reflect.Value) bool {
	switch t.Kind() {
	case reflect.String, reflect.Slice, reflect.Map, reflect.Array:
		return func(v reflect.Value) bool { return v.Len() == 0 }
	case reflect.Bool:
		return func(v reflect.Value) bool { return !v.Bool() }
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return func(v reflect.Value) bool { return v.Int() == 0 }
	case reflect.Pointer, reflect.Interface:
		return reflect.Value.IsNil
	}
	return nil
}
