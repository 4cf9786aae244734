package vars_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/concourse-tekton/concourse-tekton/concourse/vars"
)

func TestParseReference(t *testing.T) {
	tests := []struct {
		in      string
		want    vars.Reference
		wantErr string
	}{
		{in: "foo", want: vars.Reference{Path: "foo"}},
		{in: "foo.bar.baz", want: vars.Reference{Path: "foo", Fields: []string{"bar", "baz"}}},
		{in: "vault:foo.bar", want: vars.Reference{Source: "vault", Path: "foo", Fields: []string{"bar"}}},
		{in: ".:local", want: vars.Reference{Source: ".", Path: "local"}},
		{in: `"a.b".c`, want: vars.Reference{Path: "a.b", Fields: []string{"c"}}},
		{in: `src:"x:y"`, want: vars.Reference{Source: "src", Path: "x:y"}},
		{in: "/concourse/main/foo", want: vars.Reference{Path: "/concourse/main/foo"}},
		{in: "foo..bar", wantErr: "invalid var 'foo..bar': empty field"},
		{in: `"foo`, wantErr: `invalid var '"foo': contains unclosed quotes`},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := vars.ParseReference(tc.in)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestInterpolate(t *testing.T) {
	static := vars.StaticVariables{
		"s":   "str",
		"n":   42,
		"jn":  json.Number("1.5"),
		"f":   1.5,
		"m":   map[string]any{"k": "v", "deep": map[string]any{"x": 1}},
		"key": "renamed",
	}
	in := map[string]any{
		"whole-map":    "((m))",
		"whole-number": "((n))",
		"field":        "((m.deep.x))",
		"spliced":      "a-((s))-((n))-((jn))",
		"left":         "((missing))-((vault:secret))",
		"((key))":      []any{"((s))", 1, true, nil},
	}
	got, err := vars.Interpolate(in, static, false)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"whole-map":    map[string]any{"k": "v", "deep": map[string]any{"x": 1}},
		"whole-number": 42,
		"field":        1,
		"spliced":      "a-str-42-1.5",
		"left":         "((missing))-((vault:secret))",
		"renamed":      []any{"str", 1, true, nil},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if in["whole-map"] != "((m))" {
		t.Errorf("the input was modified")
	}

	_, err = vars.Interpolate(in, static, true)
	if err == nil || err.Error() != "undefined vars: missing, vault:secret" {
		t.Errorf("strict: err = %v", err)
	}
	_, err = vars.Interpolate("x-((f))", static, false)
	if err == nil || err.Error() != "cannot interpolate non-primitive value (float64) for var: f" {
		t.Errorf("float splice: err = %v", err)
	}
	_, err = vars.Interpolate("((m.nope))", static, false)
	if err == nil || err.Error() != "missing field 'nope' in var: m.nope" {
		t.Errorf("missing field: err = %v", err)
	}
	_, err = vars.Interpolate("((s.x))", static, false)
	if err == nil || err.Error() != "cannot access field 'x' of non-map value from var: s.x" {
		t.Errorf("field of a string: err = %v", err)
	}
}

func TestMulti(t *testing.T) {
	m := vars.Multi{vars.StaticVariables{"a": "first"}, vars.StaticVariables{"a": "second", "b": "second"}}
	for name, want := range map[string]string{"a": "first", "b": "second"} {
		v, found, err := m.Get(vars.Reference{Path: name})
		if err != nil || !found || v != want {
			t.Errorf("%s = %v %v %v, want %s", name, v, found, err, want)
		}
	}
	if _, found, _ := m.Get(vars.Reference{Path: "c"}); found {
		t.Errorf("c found")
	}
}
