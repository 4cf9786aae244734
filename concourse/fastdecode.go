package concourse

import (
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// The direct decoder. decodeValue reads a value through its JSON form (appendJSON, then
// encoding/json and the config's UnmarshalJSON methods), which is what defines a config's
// meaning here and words every error. That costs a second decode of the whole document.
// decodeDirect gives the same Go value straight from the tree, for the values it can
// decode exactly as the JSON path does; for anything else (whatever would fail, be read
// as text, or keep raw JSON: unknown keys of a step or a task config) it gives up, and
// decodeValue takes the JSON path as before. So every error, and every odd case, is still
// the JSON path's; the differential tests (fastdecode_test.go) hold the two to the same
// result on the corpus and under fuzzing.

// decodeDirect decodes n into out, a non-nil pointer to a zero value, and reports whether
// it did. When it did not, out holds a partial value, which the caller discards.
func decodeDirect(n *node, out any) bool {
	return directValue(n, reflect.ValueOf(out).Elem())
}

var (
	unmarshalerType       = reflect.TypeFor[json.Unmarshaler]()
	stepType              = reflect.TypeFor[Step]()
	jobConfigType         = reflect.TypeFor[JobConfig]()
	doStepType            = reflect.TypeFor[DoStep]()
	inParallelConfigType  = reflect.TypeFor[InParallelConfig]()
	taskConfigType        = reflect.TypeFor[TaskConfig]()
	taskEnvType           = reflect.TypeFor[TaskEnv]()
	tagsType              = reflect.TypeFor[Tags]()
	emptyInterfaceTypeKey = reflect.TypeFor[any]()
)

// directValue decodes n into v as encoding/json would decode n's JSON form into it.
func directValue(n *node, v reflect.Value) bool {
	t := v.Type()
	if t.Kind() == reflect.Pointer {
		if n.isNull() {
			v.SetZero()
			return true
		}
		if v.IsNil() {
			v.Set(reflect.New(t.Elem()))
		}
		return directValue(n, v.Elem())
	}
	switch t {
	case stepType:
		return directStep(n, v.Addr().Interface().(*Step))
	case jobConfigType, doStepType, taskConfigType:
		// Their UnmarshalJSON decode their fields as a struct would, steps and hooks one by
		// one (a job, a do) or with the unknown keys kept apart (a task config, strict: a
		// key that is not a field gives up, as the raw JSON it would keep is the JSON
		// path's to make).
		return directStruct(n, v, t == taskConfigType)
	case inParallelConfigType:
		return directInParallel(n, v.Addr().Interface().(*InParallelConfig))
	case taskEnvType:
		return directTaskEnv(n, v.Addr().Interface().(*TaskEnv))
	case tagsType:
		return directTags(n, v.Addr().Interface().(*Tags))
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		// The small values with a decoder of their own (a version, inputs, a duration, a
		// limit): their own method, on their JSON form, as the JSON path calls it (with
		// "null" too, for a value that is not a pointer).
		buf, err := n.appendJSON(nil)
		if err != nil {
			return false
		}
		return v.Addr().Interface().(json.Unmarshaler).UnmarshalJSON(buf) == nil
	}
	switch t.Kind() {
	case reflect.String:
		if s, ok := n.scalar.(string); ok {
			if !utf8.ValidString(s) {
				return false
			}
			v.SetString(s)
			return true
		}
		return n.isNull() // null leaves a string as it is; anything else is the JSON path's
	case reflect.Bool:
		if b, ok := n.scalar.(bool); ok {
			v.SetBool(b)
			return true
		}
		return n.isNull()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if i, ok := n.scalar.(int64); ok && !v.OverflowInt(i) {
			v.SetInt(i)
			return true
		}
		return n.isNull()
	case reflect.Interface:
		if t != emptyInterfaceTypeKey {
			return false
		}
		x, ok := anyValue(n)
		if !ok {
			return false
		}
		if x == nil {
			v.SetZero()
		} else {
			v.Set(reflect.ValueOf(x))
		}
		return true
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return false
		}
		switch {
		case n.isNull():
			v.SetZero()
			return true
		case n.kind != mapNode:
			return false
		case t.Elem() == emptyInterfaceTypeKey:
			// Source, Params: the map as encoding/json makes it for an `any`.
			m, ok := anyValue(n)
			if ok {
				v.Set(reflect.ValueOf(m).Convert(t))
			}
			return ok
		}
		m := reflect.MakeMapWithSize(t, len(n.entries))
		for _, e := range n.entries {
			if !utf8.ValidString(e.key) {
				return false
			}
			elem := reflect.New(t.Elem()).Elem()
			if !directValue(e.value, elem) {
				return false
			}
			m.SetMapIndex(reflect.ValueOf(e.key).Convert(t.Key()), elem)
		}
		v.Set(m)
		return true
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return false // base64 in JSON
		}
		switch {
		case n.isNull():
			v.SetZero()
			return true
		case n.kind != listNode:
			return false
		}
		s := reflect.MakeSlice(t, len(n.items), len(n.items))
		for i, item := range n.items {
			if !directValue(item, s.Index(i)) {
				return false
			}
		}
		v.Set(s)
		return true
	case reflect.Struct:
		return directStruct(n, v, false)
	}
	return false
}

// isNull reports whether n is a null scalar.
func (n *node) isNull() bool { return n.kind == scalarNode && n.scalar == nil }

// anyValue is what encoding/json decodes n's JSON form into an `any` as: maps, lists,
// strings, booleans, nil, and every number a float64.
func anyValue(n *node) (any, bool) { return jsonValue(n, false) }

// jsonValue is anyValue, or with numbers, what a json.Decoder that uses numbers decodes
// it into: every number a json.Number of its JSON text.
func jsonValue(n *node, numbers bool) (any, bool) {
	switch n.kind {
	case mapNode:
		m := make(map[string]any, len(n.entries))
		for _, e := range n.entries {
			x, ok := jsonValue(e.value, numbers)
			if !ok || !utf8.ValidString(e.key) {
				return nil, false
			}
			m[e.key] = x
		}
		return m, true
	case listNode:
		l := make([]any, len(n.items))
		for i, item := range n.items {
			x, ok := jsonValue(item, numbers)
			if !ok {
				return nil, false
			}
			l[i] = x
		}
		return l, true
	}
	switch x := n.scalar.(type) {
	case nil, bool:
		return x, true
	case string:
		return x, utf8.ValidString(x)
	}
	if numbers {
		s, ok := scalarText(n)
		return json.Number(s), ok
	}
	switch x := n.scalar.(type) {
	case int64:
		// Both round to the nearest float64, as parsing the decimal text does.
		return float64(x), true
	case uint64:
		return float64(x), true
	case float64:
		// appendJSONFloat writes the shortest text that reads back as x.
		return x, !math.IsInf(x, 0) && !math.IsNaN(x)
	}
	return nil, false
}

// structFields are a struct type's fields by their JSON name, for the types whose fields
// the direct decoder knows how to find: no embedded field, no `,string` option.
type structFields struct {
	byName map[string]int
	names  []string
	ok     bool
}

var structFieldCache sync.Map // reflect.Type -> *structFields

func fieldsFor(t reflect.Type) *structFields {
	if f, ok := structFieldCache.Load(t); ok {
		return f.(*structFields)
	}
	f := &structFields{byName: map[string]int{}, ok: true}
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		if sf.Anonymous {
			f.ok = false
			break
		}
		if !sf.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if strings.Contains(opts, "string") {
			f.ok = false
			break
		}
		if name == "" {
			name = sf.Name
		}
		if _, dup := f.byName[name]; dup {
			f.ok = false
			break
		}
		f.byName[name] = i
		f.names = append(f.names, name)
	}
	actual, _ := structFieldCache.LoadOrStore(t, f)
	return actual.(*structFields)
}

// field is the index of the field key names exactly. When there is none, ignored reports
// whether encoding/json would ignore the key too: it matches a field's name without
// regard to case, and a key that does so (or is not plain ASCII) is left to it.
func (f *structFields) field(key string) (index int, ignored bool) {
	if i, ok := f.byName[key]; ok {
		return i, false
	}
	for i := 0; i < len(key); i++ {
		if key[i] >= utf8.RuneSelf {
			return -1, false
		}
	}
	for _, name := range f.names {
		if strings.EqualFold(key, name) {
			return -1, false
		}
	}
	return -1, true
}

// directStruct decodes a map node into the struct v. A key that is no field is ignored,
// as encoding/json ignores it, unless strict (then the decoder gives up).
func directStruct(n *node, v reflect.Value, strict bool) bool {
	if n.isNull() {
		return true
	}
	if n.kind != mapNode {
		return false
	}
	f := fieldsFor(v.Type())
	if !f.ok {
		return false
	}
	var seen uint64 // a key given twice (interpolation can make one) is the JSON path's
	for _, e := range n.entries {
		i, ignored := f.field(e.key)
		if i < 0 {
			if ignored && !strict {
				continue
			}
			return false
		}
		if i >= 64 || seen&(1<<i) != 0 {
			return false
		}
		seen |= 1 << i
		if !directValue(e.value, v.Field(i)) {
			return false
		}
	}
	return true
}

// directStep decodes a step as Step.UnmarshalJSON does: its keys in stepPrecedence, each
// modifier wrapping the step decoded after it, up to the first core step. A step the JSON
// path would reject, or one with keys left over (kept as raw JSON), is left to the JSON
// path. So is a key given twice (interpolation can make one): every key is either a field
// of a step type decoded here, which directStruct takes once, or left over.
func directStep(n *node, step *Step) bool {
	if n.kind != mapNode || len(n.entries) == 0 {
		return false
	}
	*step = Step{}
	// rest is the step's map with the keys of the modifiers decoded so far taken out, as
	// the JSON path re-encodes it for the next.
	rest := n
	if agg := n.get("aggregate"); agg != nil {
		if n.get("in_parallel") != nil {
			return false // the aggregate is an unknown key then
		}
		// The in_parallel it became, as the JSON path renames it.
		renamed := make([]entry, len(n.entries))
		for i, e := range n.entries {
			if e.key == "aggregate" {
				e.key = "in_parallel"
			}
			renamed[i] = e
		}
		rest = &node{kind: mapNode, pos: n.pos, entries: renamed}
		step.Aggregate = true
	}
	var prev StepWrapper
	for _, d := range stepPrecedence {
		if rest.get(d.key) == nil {
			continue
		}
		cur := d.new()
		if !directStruct(rest, reflect.ValueOf(cur).Elem(), false) {
			return false
		}
		if step.Config == nil {
			step.Config = cur
		}
		if prev != nil {
			prev.Wrap(cur)
		}
		fields := stepFields()[reflect.TypeOf(cur)]
		kept := make([]entry, 0, len(rest.entries))
		for _, e := range rest.entries {
			if !fields[e.key] {
				kept = append(kept, e)
			}
		}
		rest = &node{kind: mapNode, pos: n.pos, entries: kept}
		w, isWrapper := cur.(StepWrapper)
		if !isWrapper {
			return len(rest.entries) == 0
		}
		prev = w
	}
	return false // no core step: the JSON path words the error
}

// directInParallel decodes in_parallel's list of steps, or its map, as
// InParallelConfig.UnmarshalJSON does.
func directInParallel(n *node, c *InParallelConfig) bool {
	switch n.kind {
	case listNode:
		steps := make([]Step, len(n.items))
		for i, item := range n.items {
			if !directStep(item, &steps[i]) {
				return false
			}
		}
		*c = InParallelConfig{Steps: steps}
		return true
	case mapNode:
		var m struct {
			Steps    []Step `json:"steps"`
			Limit    int    `json:"limit"`
			FailFast bool   `json:"fail_fast"`
		}
		if !directStruct(n, reflect.ValueOf(&m).Elem(), false) {
			return false
		}
		*c = InParallelConfig{Steps: m.Steps, Limit: m.Limit, FailFast: m.FailFast}
		return true
	}
	if n.isNull() {
		// null decodes as an empty list.
		*c = InParallelConfig{Steps: []Step{}}
		return true
	}
	return false
}

// scalarText is what coerceString makes of a scalar's JSON form: a string as it is, a
// number's JSON text, true or false, "" for null.
func scalarText(n *node) (string, bool) {
	if n.kind != scalarNode {
		return "", false
	}
	switch x := n.scalar.(type) {
	case nil:
		return "", true
	case string:
		return x, utf8.ValidString(x)
	case bool:
		return strconv.FormatBool(x), true
	case int64:
		return strconv.FormatInt(x, 10), true
	case uint64:
		return strconv.FormatUint(x, 10), true
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return "", false
		}
		return string(appendJSONFloat(nil, x)), true
	}
	return "", false
}

// directTaskEnv decodes a task's params as TaskEnv.UnmarshalJSON does: a scalar as its
// text, a map or a list as JSON.
func directTaskEnv(n *node, e *TaskEnv) bool {
	switch {
	case n.isNull():
		*e = TaskEnv{}
		return true
	case n.kind != mapNode:
		return false
	}
	out := make(TaskEnv, len(n.entries))
	for _, en := range n.entries {
		if !utf8.ValidString(en.key) {
			return false
		}
		if en.value.kind == scalarNode {
			s, ok := scalarText(en.value)
			if !ok {
				return false
			}
			out[en.key] = s
			continue
		}
		// coerceString encodes what encoding/json decodes the value into (its numbers
		// as json.Number): the same value, made here from the tree.
		x, ok := jsonValue(en.value, true)
		if !ok {
			return false
		}
		b, err := json.Marshal(x)
		if err != nil {
			return false
		}
		out[en.key] = string(b)
	}
	*e = out
	return true
}

// directTags decodes worker tags as Tags.UnmarshalJSON does: empty ones dropped, nil when
// none is left.
func directTags(n *node, t *Tags) bool {
	switch {
	case n.isNull():
		*t = nil
		return true
	case n.kind != listNode:
		return false
	}
	var out Tags
	for _, item := range n.items {
		s, ok := item.scalar.(string)
		if item.kind != scalarNode || !ok || !utf8.ValidString(s) {
			if item.isNull() {
				continue // null in a []string is "" to encoding/json, and dropped
			}
			return false
		}
		if s != "" {
			out = append(out, s)
		}
	}
	*t = out
	return true
}
