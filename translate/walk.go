package translate

import (
	"encoding"
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// writeObject appends to e's buffer the document of obj that the emitter writes for
// parseJSON(json.Marshal(obj)), without the JSON or the tree: it walks obj as
// encoding/json does (its field names, omitempty and omitzero, embedded structs,
// marshalers), keys sorted, an empty `status` and a null `creationTimestamp` left out.
// What it does not walk itself (a value with its own MarshalJSON or MarshalText, a
// struct whose fields encoding/json would have to arbitrate, a byte slice, a float, a map
// not keyed by strings, ...) it hands to encoding/json and parseJSON, that value alone,
// and writes that value's tree, so the document is always theirs. It returns
// errUnplaced where the emitter would.
func writeObject(e *emitter, obj any) error {
	w := walkers.Get().(*walker)
	defer walkers.Put(w)
	w.e = e
	defer func() { w.e = nil }()
	if _, err := w.write(reflect.ValueOf(obj), nil, atRoot, 0); err != nil {
		return err
	}
	e.buf = append(e.buf, '\n')
	return nil
}

// walkers keep their buffers from one object to the next.
var walkers = sync.Pool{New: func() any { return new(walker) }}

// walker writes Go values through an emitter.
type walker struct {
	e *emitter
	// free are members done with, for the next mapping: a mapping's members, passed to
	// the function that writes them, would each be allocated anew.
	free []*members
	// keys is stringMap's buffer.
	keys []string
}

// place is where a value is written: as a document, after a mapping's "key:" (the key
// at column indent), or after a sequence's "-" (the dash at column indent).
type place int

const (
	atRoot place = iota
	afterKey
	afterDash
)

// wrote is what a value was written as, for the members a mapping leaves out.
type wrote int

const (
	wroteOther wrote = iota
	wroteNull
	wroteEmptyObject
)

// dropped says a member is one of what Go's zero values add and nobody wrote: an empty
// status or a null creation timestamp (left out by the walker, and by parseJSON).
func dropped(key string, w wrote) bool {
	return key == "status" && w == wroteEmptyObject || key == "creationTimestamp" && w == wroteNull
}

// write writes v at its place; v is addressable where encoding/json's would be. ti, when
// not nil, is the typeInfo of v's type past its pointers, which the type of the field or
// the slice that holds v says.
func (w *walker) write(v reflect.Value, ti *typeInfo, at place, indent int) (wrote, error) {
	if !v.IsValid() {
		w.leaf(at)
		w.e.buf = append(w.e.buf, "null"...)
		return wroteNull, nil
	}
	t := v.Type()
	if k := t.Kind(); k == reflect.Pointer || k == reflect.Interface {
		// encoding/json writes null for nil, else the value's encoding (its own
		// methods apply through the pointer or the interface as to the value).
		if v.IsNil() {
			return w.write(reflect.Value{}, nil, at, indent)
		}
		if k == reflect.Interface {
			ti = nil // the value's type is its own
		}
		return w.write(v.Elem(), ti, at, indent)
	}
	if ti == nil && mayEncode(t) {
		ti = typeInfoOf(t)
	}
	if ti != nil && ti.encodes && (!ti.byAddress || v.CanAddr()) {
		return w.marshaled(v, at, indent) // by its own MarshalJSON or MarshalText
	}
	switch t.Kind() {
	case reflect.Bool:
		w.leaf(at)
		w.e.buf = strconv.AppendBool(w.e.buf, v.Bool())
		return wroteOther, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		w.leaf(at)
		w.e.buf = appendFloat(w.e.buf, float64(v.Int()))
		return wroteOther, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		w.leaf(at)
		w.e.buf = appendFloat(w.e.buf, float64(v.Uint()))
		return wroteOther, nil
	case reflect.String:
		if t == numberType {
			return w.viaJSON(v, at, indent)
		}
		return w.str(v.String(), at, indent)
	case reflect.Struct:
		fields := ti.fields // a struct's type may encode: ti is set
		if fields == nil {
			return w.viaJSON(v, at, indent)
		}
		return w.object(at, indent, func(m *members) error {
		fields:
			for i := range fields.list {
				f := &fields.list[i]
				fv := v
				for _, x := range f.index {
					if fv.Kind() == reflect.Pointer {
						if fv.IsNil() {
							continue fields
						}
						fv = fv.Elem()
					}
					fv = fv.Field(x)
				}
				if f.omitEmpty && isEmptyValue(fv) || f.omitZero && f.isZero(fv) {
					continue
				}
				if err := m.addField(f, fv); err != nil {
					return err
				}
			}
			return nil
		})
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return w.viaJSON(v, at, indent)
		}
		if v.IsNil() {
			return w.write(reflect.Value{}, nil, at, indent)
		}
		if t == stringMapType {
			return w.stringMap(v.Interface().(map[string]string), at, indent)
		}
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return keyCompare(validUTF8(a.String()), validUTF8(b.String())) })
		return w.object(at, indent, func(m *members) error {
			for _, k := range keys {
				if err := m.add(validUTF8(k.String()), v.MapIndex(k)); err != nil {
					return err
				}
			}
			return nil
		})
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return w.viaJSON(v, at, indent)
		}
		if v.IsNil() {
			return w.write(reflect.Value{}, nil, at, indent)
		}
		fallthrough
	case reflect.Array:
		n := v.Len()
		if n == 0 {
			w.leaf(at)
			w.e.buf = append(w.e.buf, "[]"...)
			return wroteOther, nil
		}
		var items *typeInfo
		if ti != nil {
			items = ti.items.typeInfo()
		}
		inline := w.open(at)
		for i := range n {
			if i > 0 || !inline {
				w.e.indent(w.nested(at, indent))
			}
			w.e.buf = append(w.e.buf, '-')
			if _, err := w.write(v.Index(i), items, afterDash, w.nested(at, indent)); err != nil {
				return wroteOther, err
			}
		}
		return wroteOther, nil
	}
	// Floats (formatted as encoding/json formats them), and what it refuses.
	return w.viaJSON(v, at, indent)
}

// leaf starts a scalar or an empty collection at its place.
func (w *walker) leaf(at place) {
	if at != atRoot {
		w.e.buf = append(w.e.buf, ' ')
	}
}

// open starts a non-empty collection at its place, and says whether its first member
// or item follows on the current line (after a sequence's "- ").
func (w *walker) open(at place) bool {
	if at == afterDash {
		w.e.buf = append(w.e.buf, ' ')
		return true
	}
	return false
}

// nested is the column of the members or items of a collection at its place.
func (w *walker) nested(at place, indent int) int {
	if at == atRoot {
		return 0
	}
	return indent + 2
}

func (w *walker) str(s string, at place, indent int) (wrote, error) {
	w.leaf(at)
	// Most strings are printable ASCII, and so valid UTF-8: one scan says both.
	if ascii := isASCIIText(s); ascii {
		return wroteOther, w.e.text(s, true, indent)
	}
	return wroteOther, w.e.text(validUTF8(s), false, indent)
}

// members writes the members of one mapping.
type members struct {
	w      *walker
	indent int  // their column
	inline bool // the first follows on the current line
	n      int  // written so far
}

// add writes the member key: v, or nothing where dropped leaves it out.
func (m *members) add(key string, v reflect.Value) error {
	mark := m.start()
	if err := m.w.e.key(key); err != nil {
		return err
	}
	return m.value(mark, key, v, nil)
}

// addString writes the member key: s.
func (m *members) addString(key, s string) error {
	m.start()
	if err := m.w.e.key(key); err != nil {
		return err
	}
	m.w.e.buf = append(m.w.e.buf, ':')
	m.n++
	_, err := m.w.str(s, afterKey, m.indent)
	return err
}

// stringMap writes a map of strings (labels, annotations, node selectors) as write writes
// any map, without reflection: a value of one taken from a map is a copy on the heap.
func (w *walker) stringMap(x map[string]string, at place, indent int) (wrote, error) {
	keys, valid := w.keys[:0], true
	for k := range x {
		keys = append(keys, k)
		valid = valid && utf8.ValidString(k)
	}
	if valid {
		// The keys are as encoding/json writes them: no need to make them so in each
		// comparison.
		slices.SortFunc(keys, keyCompare)
	} else {
		slices.SortFunc(keys, func(a, b string) int { return keyCompare(validUTF8(a), validUTF8(b)) })
	}
	// The values are strings: nothing written below takes the buffer.
	w.keys = keys
	return w.object(at, indent, func(m *members) error {
		for _, k := range keys {
			if err := m.addString(validUTF8(k), x[k]); err != nil {
				return err
			}
		}
		return nil
	})
}

// addField writes a struct's field, its key as the emitter wrote it before.
func (m *members) addField(f *field, v reflect.Value) error {
	if f.keyYAML == "" {
		return m.add(f.name, v)
	}
	mark := m.start()
	m.w.e.buf = append(m.w.e.buf, f.keyYAML...)
	return m.value(mark, f.name, v, f.typ.typeInfo())
}

// start starts a member's line, and returns where the member starts in the buffer.
func (m *members) start() int {
	e := m.w.e
	mark := len(e.buf)
	if m.n > 0 || !m.inline {
		e.indent(m.indent)
	}
	return mark
}

// value writes a member's ": value" after its key, or takes the member back to mark
// where dropped leaves it out; ti is as write's.
func (m *members) value(mark int, key string, v reflect.Value, ti *typeInfo) error {
	e := m.w.e
	e.buf = append(e.buf, ':')
	wrote, err := m.w.write(v, ti, afterKey, m.indent)
	if err != nil {
		return err
	}
	if dropped(key, wrote) {
		e.buf = e.buf[:mark]
		return nil
	}
	m.n++
	return nil
}

// object writes a mapping at its place, its members by each, or "{}" when it writes none.
func (w *walker) object(at place, indent int, each func(*members) error) (wrote, error) {
	mark := len(w.e.buf)
	var m *members
	if n := len(w.free); n > 0 {
		m, w.free = w.free[n-1], w.free[:n-1]
	} else {
		m = new(members)
	}
	*m = members{w: w, indent: w.nested(at, indent), inline: w.open(at)}
	err := each(m)
	written := m.n
	w.free = append(w.free, m)
	if err != nil {
		return wroteOther, err
	}
	if written > 0 {
		return wroteOther, nil
	}
	w.e.buf = w.e.buf[:mark]
	w.leaf(at)
	w.e.buf = append(w.e.buf, "{}"...)
	return wroteEmptyObject, nil
}

// marshaled writes a value encoding/json encodes by its own methods: the tree of their
// JSON, or, for the types every object holds, what that JSON says.
func (w *walker) marshaled(v reflect.Value, at place, indent int) (wrote, error) {
	var x any
	switch t := v.Type(); {
	case v.CanAddr() && (t == paramValueType || t == durationType):
		// By its address: boxing the value would copy it to the heap.
		x = v.Addr().Interface()
	default:
		x = v.Interface()
	}
	switch x := x.(type) {
	case *v1.ParamValue:
		return w.paramValue(v, x, at, indent)
	case v1.ParamValue:
		return w.paramValue(v, &x, at, indent)
	case *metav1.Duration:
		return w.str(x.Duration.String(), at, indent)
	case metav1.Duration:
		return w.str(x.Duration.String(), at, indent)
	}
	return w.viaJSON(v, at, indent)
}

// paramValue writes a param's value v (x) as its MarshalJSON does: the value its type
// says.
func (w *walker) paramValue(v reflect.Value, x *v1.ParamValue, at place, indent int) (wrote, error) {
	switch x.Type {
	case v1.ParamTypeString:
		return w.str(x.StringVal, at, indent)
	case v1.ParamTypeArray:
		return w.write(reflect.ValueOf(x.ArrayVal), nil, at, indent)
	case v1.ParamTypeObject:
		return w.write(reflect.ValueOf(x.ObjectVal), nil, at, indent)
	}
	return w.viaJSON(v, at, indent)
}

// viaJSON writes the tree of v as encoding/json writes it and parseJSON reads it.
func (w *walker) viaJSON(v reflect.Value, at place, indent int) (wrote, error) {
	tree, err := viaJSON(v)
	if err != nil {
		return wroteOther, err
	}
	switch at {
	case afterKey:
		err = w.e.value(tree, indent)
	case afterDash:
		err = w.e.item(tree, indent)
	default:
		err = w.e.root(tree)
	}
	return wroteOf(tree), err
}

// wroteOf is what the emitter writes a tree of parseJSON's as, for dropped.
func wroteOf(tree any) wrote {
	switch x := tree.(type) {
	case nil:
		return wroteNull
	case *object:
		if len(x.members) == 0 {
			return wroteEmptyObject
		}
	}
	return wroteOther
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
	// typeInfos caches what write needs to know of each type (*typeInfo).
	typeInfos sync.Map
)

// typeInfo is what write needs to know of a type, found once (typeInfoOf).
type typeInfo struct {
	// encodes says values of the type encode themselves, as encoding/json asks them to:
	// by a MarshalJSON or a MarshalText method of the type, or of its pointer
	// (byAddress), which applies to the values that can be addressed.
	encodes, byAddress bool
	// fields are a struct's (structFields).
	fields *fieldList
	// items are the type of a slice's or an array's items.
	items *staticType
}

// typeInfoOf is t's typeInfo.
func typeInfoOf(t reflect.Type) *typeInfo {
	if ti, ok := typeInfos.Load(t); ok {
		return ti.(*typeInfo)
	}
	ti := &typeInfo{}
	switch {
	case t.Implements(jsonMarshaler), t.Implements(textMarshaler):
		ti.encodes = true
	case t.Kind() != reflect.Pointer && (reflect.PointerTo(t).Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(textMarshaler)):
		ti.encodes, ti.byAddress = true, true
	}
	switch t.Kind() {
	case reflect.Struct:
		ti.fields = structFields(t)
	case reflect.Slice, reflect.Array:
		ti.items = newStaticType(t.Elem())
	}
	actual, _ := typeInfos.LoadOrStore(t, ti)
	return actual.(*typeInfo)
}

// staticType is the type of a struct's field or of a slice's items, past its pointers: the
// type of each value write writes there, whose typeInfo it then need not look up for
// each. Its typeInfo is found when the first value is written (the types a struct holds
// may hold it). It is nil where an interface is reached, each value having a type of its
// own, and past a few pointers (a pointer type may point to itself).
type staticType struct {
	t    reflect.Type
	info atomic.Pointer[typeInfo]
}

func newStaticType(t reflect.Type) *staticType {
	for range 4 {
		if t.Kind() != reflect.Pointer {
			break
		}
		t = t.Elem()
	}
	if t.Kind() == reflect.Pointer || t.Kind() == reflect.Interface {
		return nil
	}
	return &staticType{t: t}
}

// typeInfo is the type's typeInfo, or nil where s is.
func (s *staticType) typeInfo() *typeInfo {
	if s == nil {
		return nil
	}
	ti := s.info.Load()
	if ti == nil {
		ti = typeInfoOf(s.t)
		s.info.Store(ti)
	}
	return ti
}

var (
	paramValueType = reflect.TypeFor[v1.ParamValue]()
	durationType   = reflect.TypeFor[metav1.Duration]()
)

// mayEncode says values of t may have a MarshalJSON or MarshalText method (typeInfoOf
// tells): not those of the predeclared types and the unnamed slices, maps and arrays,
// which have no methods, nor do their pointers.
func mayEncode(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Struct, reflect.Pointer, reflect.Interface:
		return true
	}
	return t.PkgPath() != ""
}

var (
	isZeroerType  = reflect.TypeFor[interface{ IsZero() bool }]()
	numberType    = reflect.TypeFor[json.Number]()
	stringMapType = reflect.TypeFor[map[string]string]()
)

// viaJSON is the tree of v as encoding/json writes it and parseJSON reads it.
func viaJSON(v reflect.Value) (any, error) {
	if v.CanAddr() {
		// Behind a pointer, as encoding/json reached it: its pointer methods apply.
		v = v.Addr()
	}
	raw, err := json.Marshal(v.Interface())
	if err != nil {
		return nil, err
	}
	return parseJSON(raw)
}

// validUTF8 is s as encoding/json writes it: each byte of an invalid sequence becomes
// U+FFFD.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// sortMembers puts an object's members in the order the emitter writes them.
func sortMembers(members []member) {
	slices.SortFunc(members, func(a, b member) int { return keyCompare(a.key, b.key) })
}

// keyCompare orders keys as keyLess does.
func keyCompare(a, b string) int {
	switch {
	case keyLess(a, b):
		return -1
	case keyLess(b, a):
		return 1
	}
	return 0
}

// fieldList is a struct type's JSON fields, in the emitter's order of their names.
type fieldList struct {
	list []field
}

type field struct {
	name string
	// typ is the field's type (for write).
	typ *staticType
	// keyYAML is the name as the emitter writes a key, "" where it does not.
	keyYAML   string
	index     []int
	omitEmpty bool
	omitZero  bool
	isZero    func(reflect.Value) bool
}

var fieldCache sync.Map // reflect.Type -> *fieldList, nil where encoding/json is asked

// structFields is t's fields as encoding/json names them, or nil where they are not all
// plain: a name two fields would take at the same depth, an option such as `string`, an
// unexported embedded field.
func structFields(t reflect.Type) *fieldList {
	if f, ok := fieldCache.Load(t); ok {
		return f.(*fieldList)
	}
	f := typeFields(t)
	fieldCache.Store(t, f)
	return f
}

func typeFields(t reflect.Type) *fieldList {
	type level struct {
		typ   reflect.Type
		index []int
	}
	var out []field
	depthOf := map[string]int{}
	current := []level{{typ: t}}
	visited := map[reflect.Type]bool{}
	for depth := 0; len(current) > 0; depth++ {
		var next []level
		for _, l := range current {
			if visited[l.typ] {
				return nil
			}
			visited[l.typ] = true
			for i := range l.typ.NumField() {
				sf := l.typ.Field(i)
				if sf.Anonymous && !sf.IsExported() {
					return nil
				}
				if !sf.IsExported() {
					continue
				}
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, opts, _ := strings.Cut(tag, ",")
				if !validTagName(name) {
					return nil
				}
				index := append(slices.Clip(l.index), i)
				ft := sf.Type
				if ft.Name() == "" && ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if name == "" && sf.Anonymous && ft.Kind() == reflect.Struct {
					next = append(next, level{ft, index})
					continue
				}
				if name == "" {
					name = sf.Name
				}
				if d, ok := depthOf[name]; ok {
					if d == depth {
						return nil // encoding/json arbitrates between them
					}
					continue // a shallower field of that name hides it
				}
				depthOf[name] = depth
				f := field{name: name, index: index, typ: newStaticType(sf.Type)}
				if e := (emitter{}); e.key(name) == nil {
					f.keyYAML = string(e.buf)
				}
				for opt := range strings.SplitSeq(opts, ",") {
					switch opt {
					case "":
					case "omitempty":
						f.omitEmpty = true
					case "omitzero":
						f.omitZero, f.isZero = true, zeroTest(sf.Type)
					case "inline":
						// Kubernetes' marker, which encoding/json ignores.
					default:
						return nil
					}
				}
				out = append(out, f)
			}
		}
		current = next
	}
	slices.SortFunc(out, func(a, b field) int { return keyCompare(a.name, b.name) })
	return &fieldList{list: out}
}

// validTagName is encoding/json's test of a name a tag gives; an empty one names nothing.
func validTagName(s string) bool {
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}

// zeroTest is how encoding/json tells an omitzero field of type t is zero: its IsZero
// method where it has one, else reflect's.
func zeroTest(t reflect.Type) func(reflect.Value) bool {
	type isZeroer = interface{ IsZero() bool }
	switch {
	case t.Kind() == reflect.Interface && t.Implements(isZeroerType):
		return func(v reflect.Value) bool {
			return v.IsNil() || v.Elem().Kind() == reflect.Pointer && v.Elem().IsNil() || v.Interface().(isZeroer).IsZero()
		}
	case t.Kind() == reflect.Pointer && t.Implements(isZeroerType):
		return func(v reflect.Value) bool { return v.IsNil() || v.Interface().(isZeroer).IsZero() }
	case t.Implements(isZeroerType):
		return func(v reflect.Value) bool { return v.Interface().(isZeroer).IsZero() }
	case reflect.PointerTo(t).Implements(isZeroerType):
		return func(v reflect.Value) bool {
			if !v.CanAddr() {
				c := reflect.New(v.Type()).Elem()
				c.Set(v)
				v = c
			}
			return v.Addr().Interface().(isZeroer).IsZero()
		}
	}
	return reflect.Value.IsZero
}

// isEmptyValue is encoding/json's omitempty test.
func isEmptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool:
		return !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return v.Float() == 0
	case reflect.Interface, reflect.Pointer:
		return v.IsNil()
	}
	return false
}
