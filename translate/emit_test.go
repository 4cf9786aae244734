package translate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// byV3 is what yaml.v3's encoder (indent 2) writes for v: the emitter's reference.
func byV3(t testing.TB, v any) string {
	t.Helper()
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// checkEmit asserts the emitter writes v, through JSON, as yaml.v3 writes it, or leaves
// it to yaml.v3; it says whether the emitter wrote it.
func checkEmit(t *testing.T, v any) bool {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var ref any
	if err := json.Unmarshal(raw, &ref); err != nil {
		t.Fatal(err)
	}
	dropEmpty(ref)
	want := byV3(t, ref)
	tree, err := parseJSON(raw)
	if err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	var e emitter
	err = e.document(tree)
	if errors.Is(err, errUnplaced) {
		return false
	}
	if err != nil {
		t.Fatalf("%#v: %v", v, err)
	}
	if got := string(e.buf); got != want {
		t.Fatalf("%#v:\nyaml.v3 writes\n%s\nthe emitter wrote\n%s", v, want, got)
	}
	return true
}

// TestParseJSON decodes strings as encoding/json does, escapes and surrogates included.
func TestParseJSON(t *testing.T) {
	for _, in := range []string{
		`"plain"`, `"a\"b\\c\/d\b\f\n\r\t"`, `"\u003c\u0026\u003e"`, `"\u00e9\u2028"`, `"\ud83d\ude00"`,
		`"\ud83d"`, `"\ud83dx"`, `"\ud83d\u0041"`, `"\ude00"`, `"é😀"`, `-1.5e3`, `0`, `true`, `null`,
		`[1,"a",{"b":[]}]`, ` { "k" : [ 1 , 2 ] } `,
	} {
		var want any
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			t.Fatal(err)
		}
		got, err := parseJSON([]byte(in))
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if g, w := byV3(t, toMaps(got)), byV3(t, want); g != w {
			t.Errorf("%s: parsed as %s, encoding/json reads %s", in, g, w)
		}
	}
	for _, bad := range []string{``, `{`, `{"a"}`, `{"a":1,}`, `[1 2]`, `"open`, `"\x"`, `"\u12"`, `tru`, `1 2`, `{"a":1]`} {
		if _, err := parseJSON([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// toMaps turns parseJSON's objects back into maps.
func toMaps(v any) any {
	switch x := v.(type) {
	case *object:
		m := map[string]any{}
		for _, mem := range x.members {
			m[mem.key] = toMaps(mem.val)
		}
		return m
	case []any:
		for i := range x {
			x[i] = toMaps(x[i])
		}
	}
	return v
}

// TestEmitterStrings puts strings that make yaml.v3 choose each of its styles in every
// position a string takes: a key, a mapping's value, a sequence's item, nested.
func TestEmitterStrings(t *testing.T) {
	strs := []string{
		"plain", "two words", "", " lead", "trail ", "a: b", "a:b", "a #b", "a#b", "#c", "-", "- x", "-x",
		"--- doc", "...", "?", "? x", ":", "{\"json\": 'q'}", "[x]", "x,y", "it's", "'", "\"",
		"true", "True", "no", "NO", "on", "y", "n", "~", "null", "nope", "yes-and", "off-by-one",
		"1", "1.5", "1.2.3", "0x1F", "1e3", "+1", "-1", ".5", ".inf", ".nan", "1:20", "12:30:00",
		"2001-12-14", "0755", "$(params.x)", "/a/b", "@x", "`x`", "%x", "&a", "*a", "!t", "|", ">",
		"a\nb", "a\nb\n", "a\nb\n\n", "\n", "\n\n", "\na", " a\nb", "a \nb", "a\n b", "a\n\n b\n",
		"line with trailing \nspace", "tab\there", "tab\nin\tblock", "é", "multi\nlinë", "cr\r\nlf",
		"<a&b>", "\u2028", "emoji 😀", "0s", "1Gi", "--spec=$(params.spec)", "09", "0755", "1_000", "-.inf", "+.5", "1e", "0o17", "0b101",
		"--", "-- x", "2001-12-14t21:59:43.10-05:00", "2001-12-14 21:59:43", "1:2:3", "0xZZ", "123456789012345678901234",
		"x\n", strings.Repeat("k", maxSimpleKey), strings.Repeat("k", maxSimpleKey+1),
	}
	for _, s := range strs {
		checkEmit(t, map[string]any{"k": s})
		checkEmit(t, map[string]any{s: "v"})
		checkEmit(t, []any{s, "after"})
		checkEmit(t, map[string]any{"a": []any{map[string]any{"b": s, "c": []any{s}}}, "z": s})
		checkEmit(t, []any{[]any{s}, []any{[]any{s, s}}})
		checkEmit(t, s)
	}
}

// TestEmitterRandom compares the emitter with yaml.v3 on random trees of the values a
// decoded JSON object holds.
func TestEmitterRandom(t *testing.T) {
	alphabet := []string{"a", "b", "Z", "0", "1", " ", " ", "\n", ":", "#", "-", "'", "\"", "{", "}", "[", ",", ".", "~", "$", "(", ")", "/", "\t", "é", "y", "n", "o", "t", "s", "e", "x", "G", "_", "+", "9"}
	r := rand.New(rand.NewPCG(1, 2))
	str := func() string {
		var b strings.Builder
		for range r.IntN(8) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		return b.String()
	}
	var value func(depth int) any
	value = func(depth int) any {
		switch k := r.IntN(9); {
		case k < 2 && depth < 4:
			m := map[string]any{}
			for range r.IntN(4) {
				m[str()] = value(depth + 1)
			}
			return m
		case k < 4 && depth < 4:
			var s []any = []any{}
			for range r.IntN(4) {
				s = append(s, value(depth+1))
			}
			return s
		case k == 4:
			return []float64{0, 1, -1, 1.5, 1e21, 123456789, 1e-7}[r.IntN(7)]
		case k == 5:
			return []any{true, false, nil}[r.IntN(3)]
		default:
			return str()
		}
	}
	wrote := 0
	for range 20000 {
		if checkEmit(t, value(0)) {
			wrote++
		}
	}
	if wrote < 10000 {
		t.Errorf("the emitter wrote only %d of 20000 random trees itself", wrote)
	}
}

// TestObjectYAMLIsYAMLv3 checks ObjectYAML against yaml.v3 on an object with what Go's
// zero values add (left out) and on one the emitter leaves to yaml.v3.
func TestObjectYAMLIsYAMLv3(t *testing.T) {
	for _, obj := range []any{
		map[string]any{"metadata": map[string]any{"creationTimestamp": nil, "name": "x"}, "spec": map[string]any{"params": []any{map[string]any{"name": "spec", "value": `{"mode":"task","x":"it's"}`}}}, "status": map[string]any{}},
		map[string]any{"spec": map[string]any{"script": "tab\tin\nblock", "clé": "multi\nlinë"}},
	} {
		got, err := ObjectYAML(obj)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(obj)
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		dropEmpty(m)
		if want := byV3(t, m); string(got) != want {
			t.Fatalf("ObjectYAML wrote\n%s\nyaml.v3 writes\n%s", got, want)
		}
	}
}

// TestMarshalYAMLStream: a stream is its objects' documents, "---" between them,
// whether the emitter or yaml.v3 wrote each (the second below: the emitter gives it up
// half-way, at its multi-line key).
func TestMarshalYAMLStream(t *testing.T) {
	objects := []any{
		map[string]any{"kind": "Task", "spec": map[string]any{"steps": []any{"a", "b"}}},
		map[string]any{"a": "first", "z\nkey": map[string]any{"deep": true}},
		map[string]any{"kind": "Pipeline"},
	}
	var want []string
	for _, obj := range objects {
		doc, err := ObjectYAML(obj)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, string(doc))
	}
	got, err := MarshalYAML(objects)
	if err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(want, "---\n"); string(got) != w {
		t.Errorf("MarshalYAML wrote\n%s\nwant\n%s", got, w)
	}
	if !strings.Contains(want[1], "? |-\n") {
		t.Errorf("the second object was not left to yaml.v3:\n%s", want[1])
	}
	// An object that cannot be encoded, after one that can: an error, and no stream.
	if got, err := MarshalYAML(append(objects, map[string]any{"f": func() {}})); err == nil || got != nil {
		t.Errorf("MarshalYAML of an object that cannot be encoded: err %v, stream %q", err, got)
	}
}

// TestMarshalYAMLSizes: documents of every size, written one after another, make the
// same stream as each written alone.
func TestMarshalYAMLSizes(t *testing.T) {
	var objects []any
	var want []string
	for i, n := range []int{10, 50 << 10, 1200 << 10, 20, 900 << 10, 70 << 10, 30 << 10, 5} {
		for j := range 2 {
			obj := map[string]any{"kind": "Task", "name": fmt.Sprint(i, j), "script": strings.Repeat("echo "+fmt.Sprint(i)+"\n", n/8)}
			doc, err := ObjectYAML(obj)
			if err != nil {
				t.Fatal(err)
			}
			objects, want = append(objects, obj), append(want, string(doc))
		}
	}
	got, err := MarshalYAML(objects)
	if err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(want, "---\n"); string(got) != w {
		t.Errorf("MarshalYAML wrote %d bytes, the documents alone %d", len(got), len(w))
	}
}

// TestEmitWords: words (a letter, then letters, digits and "-_./"), as keys and values,
// are written as yaml.v3 writes them: plain, but for those YAML 1.1 reads as booleans
// or nulls.
func TestEmitWords(t *testing.T) {
	for _, w := range []string{"a", "yes", "Yes", "YES", "y", "Y", "on", "On", "off", "n", "N", "no", "No", "true", "True", "False",
		"null", "Null", "NULL", "nan", "NaN", "Infinity", "inf", "t", "f", "ok", "a.b", "a/b", "x-y_z", "e1", "E5", "x.", "b-",
		"Yes.no", "null_", "o", "O", "step-1", "tekton.dev/v1", "a-1.2_3/x"} {
		if !checkEmit(t, map[string]any{w: w, "list": []any{w}}) {
			t.Errorf("%q: left to yaml.v3", w)
		}
	}
}

// TestIsASCIIText holds isASCIIText, which looks at eight bytes at a time, to the byte by
// byte answer: every byte value at every place of strings around the eight-byte steps,
// among letters, line feeds or the ends of the printable range.
func TestIsASCIIText(t *testing.T) {
	for _, around := range []string{"a", " ", "~", "\n"} {
		for _, n := range []int{1, 7, 8, 9, 15, 16, 17, 24} {
			for at := range n {
				for c := range 256 {
					b := []byte(strings.Repeat(around, n))
					b[at] = byte(c)
					s := string(b)
					if got, want := isASCIIText(s), asciiBytes(s); got != want {
						t.Fatalf("isASCIIText(%q) = %v, want %v", s, got, want)
					}
				}
			}
		}
	}
}
