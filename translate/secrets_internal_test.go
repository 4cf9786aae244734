package translate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/planner"
	"github.com/concourse-tekton/concourse-tekton/concourse/vars"
	"github.com/concourse-tekton/concourse-tekton/internal/testcorpus"
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// TestStringsWith scans JSON for the strings that hold "((": values and keys, escaped
// or not, at any depth, and nothing else; it agrees with decoding the document.
func TestStringsWith(t *testing.T) {
	docs := []any{
		map[string]any{"a": "((x))", "((k))": 1, "b": []any{"no", "y ((z)) \"q\"\n", map[string]any{"c": "((w))<&>"}}, "n": 12.5, "t": true, "nil": nil},
		"((top))",
		[]any{`\((a))`, `a\"((b))`, "(( unclosed", "((é))"},
		map[string]any{},
	}
	for _, doc := range docs {
		buf, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		stringsWith(buf, "((", func(s string) { got = append(got, s) })
		var decoded any
		if err := json.Unmarshal(buf, &decoded); err != nil {
			t.Fatal(err)
		}
		var want []string
		walkStrings(decoded, func(s string) {
			if len(s) > 1 && containsParens(s) {
				want = append(want, s)
			}
		})
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: strings %q, want %q", buf, got, want)
		}
	}
	// Not JSON: an unterminated string ends the scan.
	stringsWith([]byte(`{"a":"((x`), "((", func(s string) { t.Errorf("called with %q", s) })
}

func containsParens(s string) bool {
	for i := 0; i+1 < len(s); i++ {
		if s[i] == '(' && s[i+1] == '(' {
			return true
		}
	}
	return false
}

// refsOfJSON is refsOf by the spec's JSON encoding: what jsonStringsWith stands for.
func refsOfJSON(v any) []string {
	buf, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	var out []string
	stringsWith(buf, "((", func(s string) { out = append(out, s) })
	slices.Sort(out)
	return out
}

func jsonStrings(v any) []string {
	var out []string
	jsonStringsWith(reflect.ValueOf(&v).Elem(), "((", func(s string) { out = append(out, s) })
	slices.Sort(out)
	return out
}

type textKey string

func (k textKey) MarshalText() ([]byte, error) { return []byte("text-" + string(k)), nil }

type selfEncoded struct{ secret string }

func (s selfEncoded) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]string{"made": "((made-" + s.secret + "))"})
}

type addrEncoded struct{ n int }

func (a *addrEncoded) MarshalJSON() ([]byte, error) { return []byte(`"((by-address))"`), nil }

type asText struct{}

func (asText) MarshalText() ([]byte, error) { return []byte("((text))"), nil }

type Embedded struct{ Inner string }

type embeddedHidden struct{ Shown string }

type sample struct {
	Embedded
	embeddedHidden
	Plain      string             `json:"plain"`
	Skipped    string             `json:"-"`
	hidden     string             //nolint:unused // encoding/json skips it, and so must the scan
	Quoted     string             `json:"quoted,string"`
	Raw        json.RawMessage    `json:"raw"`
	Self       selfEncoded        `json:"self"`
	SelfPtr    *selfEncoded       `json:"self_ptr"`
	Addr       addrEncoded        `json:"addr"`
	Text       asText             `json:"text"`
	Bytes      []byte             `json:"bytes"`
	Keys       map[string]any     `json:"keys"`
	TextKeys   map[textKey]string `json:"text_keys"`
	IntKeys    map[int]string     `json:"int_keys"`
	Any        any                `json:"any"`
	Nil        *Embedded          `json:"nil"`
	NilAny     any                `json:"nil_any"`
	Array      [2]string          `json:"array"`
	Pointers   []*string          `json:"pointers"`
	Marshalers []json.Marshaler   `json:"marshalers"`
}

// TestJSONStringsWith: the strings the scan finds are those of the value's JSON that
// hold "((", whatever the value's types do to their encoding.
func TestJSONStringsWith(t *testing.T) {
	p := "((pointed))"
	v := sample{
		Embedded:       Embedded{Inner: "((inner))"},
		embeddedHidden: embeddedHidden{Shown: "((shown))"},
		Plain:          "a ((plain)) b",
		Skipped:        "((skipped))",
		hidden:         "((hidden))",
		Quoted:         "((quoted))",
		Raw:            json.RawMessage(`{"((raw-key))":["((raw))"]}`),
		Self:           selfEncoded{secret: "x"},
		SelfPtr:        &selfEncoded{secret: "y"},
		Text:           asText{},
		Bytes:          []byte("((bytes))"),
		Keys: map[string]any{"((key))": "((value))", "n": 1, "deep": []any{map[string]any{"k": "((deep))"}},
			// Typed values inside decoded JSON: walked as encoding/json writes them.
			"typed": []any{selfEncoded{secret: "w"}, &Embedded{Inner: "((typed))"}, json.Number("3"), true, nil}},
		TextKeys:   map[textKey]string{"((tk))": "v"},
		IntKeys:    map[int]string{1: "((int-key-value))"},
		Any:        map[string]any{"in": "((any))"},
		Array:      [2]string{"((first))", "second"},
		Pointers:   []*string{&p, nil},
		Marshalers: []json.Marshaler{selfEncoded{secret: "z"}, nil},
	}
	for _, value := range []any{v, &v, sample{}, []any{v}, map[string]sample{"((outer))": v}} {
		want, got := refsOfJSON(value), jsonStrings(value)
		if !slices.Equal(got, want) {
			t.Errorf("%T: strings %q, want those of its JSON, %q", value, got, want)
		}
	}
	// A method of the pointer is called on what can be addressed, as encoding/json does.
	if got := jsonStrings(&v); !slices.Contains(got, "((by-address))") || !slices.Contains(got, "((made-y))") || slices.Contains(got, "((hidden))") {
		t.Errorf("the scan of &%+v found %q", v, got)
	}
	if got := jsonStrings(v); slices.Contains(got, "((by-address))") {
		t.Errorf("the scan of %+v found %q", v, got)
	}
}

// TestRefsOfCorpus: over every step of every corpus job, refsOf finds the references
// that the spec's JSON holds.
func TestRefsOfCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("the corpus sweep")
	}
	var steps, withRefs int
	for _, file := range testcorpus.Pipelines(t) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		p, diags := concourse.ParsePipeline(filepath.Base(file), data, nil)
		if p == nil || len(diags.Errors()) > 0 {
			continue
		}
		for i := range p.Config.Jobs {
			plan, err := planner.Plan(&p.Config, &p.Config.Jobs[i], planner.Options{})
			if err != nil {
				continue
			}
			r, err := Translate(plan, Options{Pipeline: "corpus", Job: p.Config.Jobs[i].Name})
			if err != nil {
				continue
			}
			for _, pt := range slices.Concat(r.Pipeline.Spec.Tasks, r.Pipeline.Spec.Finally) {
				for _, param := range pt.Params {
					if param.Name != runspec.ParamSpec {
						continue
					}
					var spec runspec.Spec
					if err := json.Unmarshal([]byte(param.Value.StringVal), &spec); err != nil {
						t.Fatalf("%s: %s: %v", filepath.Base(file), pt.Name, err)
					}
					steps++
					var got []string
					for _, ref := range refsOf(spec, nil) {
						got = append(got, ref.String())
					}
					var want []string
					buf, _ := json.Marshal(spec)
					stringsWith(buf, "((", func(s string) {
						for _, n := range vars.Names(s) {
							if ref, err := vars.ParseReference(n); err == nil && ref.Source != "." {
								want = append(want, ref.String())
							}
						}
					})
					slices.Sort(got)
					slices.Sort(want)
					if !slices.Equal(got, want) {
						t.Errorf("%s: %s: references %q, want %q", filepath.Base(file), pt.Name, got, want)
					}
					if len(want) > 0 {
						withRefs++
					}
				}
			}
		}
	}
	if steps < 1000 || withRefs < 500 {
		t.Errorf("%d steps, %d with references: the corpus was not swept", steps, withRefs)
	}
	t.Logf("%d steps, %d with references", steps, withRefs)
}
