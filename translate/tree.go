package translate

import (
	"encoding"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// treeOf is parseJSON(json.Marshal(v)) without the JSON: the tree the emitter writes,
// built by walking v as encoding/json does (its field names, omitempty and omitzero,
// embedded structs, marshalers), keys sorted, an empty `status` and a null
// `creationTimestamp` left out. What it does not walk itself (a value with its own
// MarshalJSON or MarshalText, a struct whose fields encoding/json would have to
// arbitrate, a byte slice, a float32, a map not keyed by strings, ...) it hands to
// encoding/json and parseJSON, that value alone, so the tree is always theirs.
func treeOf(v any) (any, error) {
	var b treeBuilder
	return b.value(reflect.ValueOf(v))
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
	// encodingTypes caches how each type encodes itself (*encoding).
	encodingTypes sync.Map
)

// encodingOf says whether values of t encode themselves, as encoding/json asks them to:
// by a MarshalJSON or a MarshalText method of t, or of *t (byAddress), which applies to
// the values that can be addressed.
func encodingOf(t reflect.Type) *selfEncoding {
	if e, ok := encodingTypes.Load(t); ok {
		return e.(*selfEncoding)
	}
	e := &selfEncoding{}
	switch {
	case t.Implements(jsonMarshaler), t.Implements(textMarshaler):
		e.encodes = true
	case t.Kind() != reflect.Pointer && (reflect.PointerTo(t).Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(textMarshaler)):
		e.encodes, e.byAddress = true, true
	}
	actual, _ := encodingTypes.LoadOrStore(t, e)
	return actual.(*selfEncoding)
}

type selfEncoding struct {
	encodes, byAddress bool
}

// treeBuilder builds trees: stack holds the members of the objects being built, each
// object's above its parent's, so that each is allocated once, at its size.
type treeBuilder struct {
	stack []member
}

var (
	isZeroerType = reflect.TypeFor[interface{ IsZero() bool }]()
	numberType   = reflect.TypeFor[json.Number]()
)

// value is treeOf of one value; v is addressable where encoding/json's would be.
func (b *treeBuilder) value(v reflect.Value) (any, error) {
	if !v.IsValid() {
		return nil, nil
	}
	t := v.Type()
	if k := t.Kind(); k == reflect.Pointer || k == reflect.Interface {
		// encoding/json writes null for nil, else the value's encoding (its own
		// methods apply through the pointer or the interface as to the value).
		if v.IsNil() {
			return nil, nil
		}
		return b.value(v.Elem())
	}
	if e := encodingOf(t); e.encodes && (!e.byAddress || v.CanAddr()) {
		return b.marshaled(v) // by its own MarshalJSON or MarshalText, as encoding/json
	}
	switch t.Kind() {
	case reflect.Bool:
		return v.Bool(), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(v.Int()), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return float64(v.Uint()), nil
	case reflect.String:
		if t == numberType {
			return viaJSON(v)
		}
		return validUTF8(v.String()), nil
	case reflect.Struct:
		return b.structValue(v)
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return viaJSON(v)
		}
		if v.IsNil() {
			return nil, nil
		}
		base := len(b.stack)
		for it := v.MapRange(); it.Next(); {
			val, err := b.value(it.Value())
			if err != nil {
				return nil, err
			}
			if key := validUTF8(it.Key().String()); !zeroAdded(key, val) {
				b.stack = append(b.stack, member{key, val})
			}
		}
		o := b.object(base)
		sortMembers(o.members)
		return o, nil
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return viaJSON(v)
		}
		if v.IsNil() {
			return nil, nil
		}
		fallthrough
	case reflect.Array:
		a := make([]any, v.Len())
		for i := range a {
			e, err := b.value(v.Index(i))
			if err != nil {
				return nil, err
			}
			a[i] = e
		}
		return a, nil
	}
	// Floats (formatted as encoding/json formats them), and what it refuses.
	return viaJSON(v)
}

// marshaled is the tree of a value encoding/json encodes by its own methods: the
// tree of their JSON, or, for the types every object holds, what that JSON says.
func (b *treeBuilder) marshaled(v reflect.Value) (any, error) {
	switch x := v.Interface().(type) {
	case v1.ParamValue:
		// Its MarshalJSON: the value its type says.
		switch x.Type {
		case v1.ParamTypeString:
			return validUTF8(x.StringVal), nil
		case v1.ParamTypeArray:
			return b.value(reflect.ValueOf(x.ArrayVal))
		case v1.ParamTypeObject:
			return b.value(reflect.ValueOf(x.ObjectVal))
		}
	case metav1.Duration:
		return x.Duration.String(), nil
	}
	return viaJSON(v)
}

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

// object is the object of the members on the stack from base, which it takes off: none
// (nil) where there are none, as parseJSON makes it.
func (b *treeBuilder) object(base int) *object {
	o := &object{}
	if len(b.stack) > base {
		o.members = slices.Clone(b.stack[base:])
		b.stack = b.stack[:base]
	}
	return o
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

func (b *treeBuilder) structValue(v reflect.Value) (any, error) {
	fields := structFields(v.Type())
	if fields == nil {
		return viaJSON(v)
	}
	base := len(b.stack)
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
		val, err := b.value(fv)
		if err != nil {
			return nil, err
		}
		if !zeroAdded(f.name, val) {
			b.stack = append(b.stack, member{f.name, val})
		}
	}
	return b.object(base), nil
}

// fieldList is a struct type's JSON fields, in the emitter's order of their names.
type fieldList struct {
	list []field
}

type field struct {
	name      string
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
				f := field{name: name, index: index}
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
