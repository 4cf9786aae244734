package runspec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

// byEncodingJSON is what AppendJSON is to write for a spec, and writerOf for any value:
// encoding/json's encoding of it, HTML left unescaped, without the encoder's line break.
func byEncodingJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// sameAsEncodingJSON fails t where AppendJSON writes other bytes than encoding/json, or
// where one of them refuses the spec and the other does not.
func sameAsEncodingJSON(t *testing.T, s *Spec) {
	t.Helper()
	want, wantErr := byEncodingJSON(s)
	got, err := s.AppendJSON([]byte("prefix"))
	switch {
	case (err != nil) != (wantErr != nil):
		t.Errorf("AppendJSON: error %v, encoding/json's %v", err, wantErr)
	case err != nil:
		if string(got) != "prefix" {
			t.Errorf("AppendJSON's error %v left %q in the buffer", err, got)
		}
	case string(got) != "prefix"+string(want):
		t.Errorf("AppendJSON wrote\n%s\nencoding/json\n%s", got, "prefix"+string(want))
	}
}

// awkward is a string of what JSON escapes, or encoding/json does: quotes, backslashes,
// control characters, HTML's characters, invalid UTF-8, U+2028 and U+2029.
const awkward = "a \"b\" \\c\n\t\r\b\f\x00\x1f\x7f <&> é \u2028\u2029 \xff\xc3 $(x) ((var))"

// filled is a value of t with every field set, recursively (depth levels of a type that
// holds itself, as Node does), each string holding awkward, each map two keys and each
// slice two items, each `any` a generic value of every kind.
func filled(t reflect.Type, depth int) reflect.Value {
	v := reflect.New(t).Elem()
	switch t.Kind() {
	case reflect.String:
		v.SetString(awkward + t.Name())
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(-1234567890123)
	case reflect.Pointer:
		if depth > 0 {
			v.Set(filled(t.Elem(), depth-1).Addr())
		}
	case reflect.Struct:
		for i := range t.NumField() {
			v.Field(i).Set(filled(t.Field(i).Type, depth))
		}
	case reflect.Slice:
		if t == reflect.TypeFor[json.RawMessage]() {
			v.SetBytes([]byte(` { "b" : [ 1 , 2.50 ] , "a" : "<&>\u2028" } `))
			break
		}
		if depth > 0 {
			v.Set(reflect.Append(v, filled(t.Elem(), depth-1), filled(t.Elem(), depth-1)))
		}
	case reflect.Map:
		v.Set(reflect.MakeMap(t))
		for _, k := range []string{"zeta", awkward, "alpha", ""} {
			v.SetMapIndex(reflect.ValueOf(k), filled(t.Elem(), depth))
		}
	case reflect.Interface:
		v.Set(reflect.ValueOf(generic()))
	default:
		panic("filled: no value of kind " + t.Kind().String())
	}
	return v
}

// generic is a value of every kind a JSON or YAML decoder makes, and of a few it does not.
func generic() map[string]any {
	return map[string]any{
		"string": awkward, "true": true, "false": false, "null": nil,
		"floats":  []any{0.0, -0.0, 1.0, -2.5, 1e20, 1e21, 123456789e15, 1e-6, 9.99e-7, 1e-7, -3e-10, math.MaxFloat64, math.SmallestNonzeroFloat64},
		"nested":  map[string]any{"b": []any{map[string]any{}, []any{}}, "a": map[string]any(nil), "c": []any(nil), "B": 1.5, "a b": "x"},
		"numbers": []any{json.Number("12"), json.Number("-1.5e10"), json.Number("")},
		"others":  []any{3, int64(-4), uint8(5), float32(0.1), []string{"x"}, map[string]int{"b": 1, "a": 2}, json.RawMessage(`[ 1 ]`), struct{ A string }{"<&>"}},
		"":        "empty key",
	}
}

// TestAppendJSON holds AppendJSON's bytes to encoding/json's: for a spec of every field
// set (every kind of value a spec holds, where it holds it), for specs of no field set,
// and for the values encoding/json writes in its own way.
func TestAppendJSON(t *testing.T) {
	full := filled(reflect.TypeFor[Spec](), 4).Interface().(Spec)
	empty := Spec{
		Build: Build{InstanceVars: map[string]any{}},
		Paths: Paths{}, Context: []Layer{}, Scope: []string{}, AcrossVars: map[string]any{},
		ImagePlans: []json.RawMessage{},
		Task:       &Task{Vars: map[string]any{}, InputMapping: map[string]string{}, CacheRecords: &CacheRecords{IDs: map[string]int{}}},
		Get:        &Get{Source: map[string]any{}},
		Put:        &Put{InputNames: []string{}},
		Resolve:    &Resolve{},
		Join:       &Join{Tree: Node{Steps: []Node{}, Substeps: []json.RawMessage{}}},
		Across:     &Across{Vars: []AcrossVar{{}}},
		Verdict:    &Verdict{},
		PulledImage: &PulledImage{
			CheckPlan: json.RawMessage{},
		},
		MirroredImage: &MirroredImage{Fetches: []ImageFetch{{}}},
	}
	tests := []struct {
		name string
		spec Spec
	}{
		{"every field", full},
		{"no field", Spec{}},
		{"empty collections", empty},
		{"a nil map as the config", Spec{Task: &Task{Config: map[string]any(nil)}, Resolve: &Resolve{Config: []any(nil)}}},
		{"an across of no vars", Spec{Across: &Across{}}},
		{"one path", Spec{Paths: Paths{Work: "w"}}},
		{"a null raw message", Spec{ImagePlans: []json.RawMessage{nil}}},
		{"not infinity", Spec{Task: &Task{Config: math.Inf(1)}}},
		{"not NaN", Spec{Get: &Get{Source: map[string]any{"a": math.NaN()}}}},
		{"not a raw message of no JSON", Spec{ImagePlans: []json.RawMessage{[]byte("{")}}},
		{"not a number of no number", Spec{Task: &Task{Params: map[string]any{"n": json.Number("1x")}}}},
		{"not a channel", Spec{AcrossVars: map[string]any{"c": make(chan int)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sameAsEncodingJSON(t, &tt.spec)
		})
	}
	// Every struct a spec holds is written by its plan, none left to encoding/json.
	seen := map[reflect.Type]bool{}
	var planned func(reflect.Type)
	planned = func(typ reflect.Type) {
		switch typ.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Map:
			planned(typ.Elem())
		case reflect.Struct:
			if seen[typ] {
				return
			}
			seen[typ] = true
			if planOf(typ).viaJSON {
				t.Errorf("%v is left to encoding/json", typ)
			}
			for i := range typ.NumField() {
				planned(typ.Field(i).Type)
			}
		}
	}
	planned(reflect.TypeFor[Spec]())
	// The filled spec is full indeed: encoding/json leaves none of its fields out.
	enc, err := byEncodingJSON(&full)
	if err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{`"paths":`, `"supplied_credentials":true`, `"verdict":{"tree":{"id":`, `"fused":true`, `"substeps":[{"b":`} {
		if !bytes.Contains(enc, []byte(field)) {
			t.Errorf("the filled spec has no %s: %s", field, enc)
		}
	}
}

// byPointer encodes itself, by its pointer's method: when addressable.
type byPointer struct{ N int }

func (p *byPointer) MarshalJSON() ([]byte, error) { return []byte(` "by pointer" `), nil }

// others holds what a spec does not, which writerOf leaves to encoding/json, or writes as
// it writes a spec's.
type others struct {
	Bytes      []byte             `json:"bytes"`
	Array      [2]int             `json:"array"`
	Float      float32            `json:"float"`
	Uint       uint               `json:"uint"`
	Floats     map[string]float64 `json:"floats"`
	Named      Mode               `json:"named,omitempty"`
	Time       time.Time          `json:"time"`
	Zero       Paths              `json:"zero,omitzero"`
	Untagged   string
	Stringer   fmt.Stringer `json:"stringer"`
	Pointer    **int        `json:"pointer"`
	ByPointer  byPointer    `json:"by_pointer"`
	Skipped    string       `json:"-"`
	unexported string
}

// TestWriterOf holds writerOf to encoding/json for the kinds of values a spec does not
// hold, and for the structs it leaves to encoding/json whole.
func TestWriterOf(t *testing.T) {
	if planOf(reflect.TypeFor[others]()).viaJSON {
		t.Fatal("others is left to encoding/json")
	}
	one := 1
	pointer := &one
	o := others{Bytes: []byte("<&>"), Array: [2]int{1, 2}, Float: 0.1, Uint: 7, Floats: map[string]float64{"b": 1e21, "a": 0.5},
		Named: ModeGet, Time: time.Unix(0, 0).UTC(), Untagged: "u", Stringer: time.Second, Pointer: &pointer, unexported: "x"}
	values := []any{
		o, &o, others{}, &others{},
		// Left to encoding/json: an embedded field, a name two fields take, a name to
		// escape or not a plain word, the string option, both omitempty and omitzero,
		// an IsZero method, an omitempty that never omits, one of a float.
		struct {
			Paths
			A int
		}{Paths{Volume: "v"}, 1},
		struct {
			A string
			B string `json:"A"`
		}{"a", "b"},
		struct {
			A string `json:"a.b"`
			B string `json:"\\"`
		}{"a", "b"},
		struct {
			A int `json:"a,string"`
		}{1},
		struct {
			A string `json:"a,omitempty,omitzero"`
		}{},
		struct {
			A time.Time `json:"a,omitzero"`
		}{},
		struct {
			A struct{ B int } `json:"a,omitempty"`
		}{},
		struct {
			A float64 `json:"a,omitempty"`
		}{},
	}
	for _, v := range values {
		want, err := byEncodingJSON(v)
		if err != nil {
			t.Fatal(err)
		}
		var w jsonWriter
		writerOf(reflect.TypeOf(v))(&w, reflect.ValueOf(v))
		if w.err != nil || string(w.buf) != string(want) {
			t.Errorf("%T: writerOf wrote (error %v)\n%s\nencoding/json\n%s", v, w.err, w.buf, want)
		}
	}
}

// FuzzAppendJSON holds AppendJSON's bytes to encoding/json's for the specs that JSON
// decodes into, its numbers as float64s and as json.Numbers, and with a string of any
// bytes in a field, a map's key and a generic value.
func FuzzAppendJSON(f *testing.F) {
	f.Add([]byte(`{"mode":"task","plan_id":"1","name":"t","build":{"name":"7","instance_vars":{"b":1}},"paths":{"work":"w"},`+
		`"context":[{"kind":"fail_fast","id":"2","child":{"id":"3","kind":"do","steps":[{"id":"4","kind":"leaf"}],"substeps":[ {"a" : 1} ]}}],`+
		`"across_vars":{"v":[1.5,"x",null,true,{}]},"across_slots":[{"plan":"5","index":1}],"image_plans":[{"id":"6"}],`+
		`"pulled_image":{"name":"i","get_id":"8","version":{"d":"sha"},"get_plan":{}},`+
		`"task":{"config":{"a":[1e-7,1e21,-0,0.1,{"b":null}]},"params":{"x":"<>"},"input_mapping":{"a":"b"},"cache_records":{"ids":{"c":1}}},`+
		`"get":{"type":"git","source":{"uri":"u"},"version":{"ref":"1"}},"across":{"vars":[{"name":"v","values":[1]}],"slots":2}}`), awkward)
	f.Add([]byte(`{"verdict":{"tree":{"id":"1","kind":"ensure","step":{"id":"2","kind":"leaf"},"hook":{"id":"3","kind":"leaf"}},"fused":true}}`), "\xed\xa0\x80")
	f.Fuzz(func(t *testing.T, data []byte, s string) {
		for _, numbers := range []bool{false, true} {
			var spec Spec
			dec := json.NewDecoder(bytes.NewReader(data))
			if numbers {
				dec.UseNumber()
			}
			if dec.Decode(&spec) != nil {
				return
			}
			sameAsEncodingJSON(t, &spec)
			spec.Name = s
			spec.Scope = append(spec.Scope, s)
			spec.AcrossVars = map[string]any{s: s, strings.ToUpper(s): []any{s}}
			sameAsEncodingJSON(t, &spec)
		}
	})
}
