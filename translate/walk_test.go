package translate

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Types with encoding/json's corner cases, for TestWalkIsJSON.
type (
	inner struct {
		A string `json:"a"`
		B int    `json:"b,omitempty"`
	}
	deeper struct {
		A string `json:"a"` // hidden by inner's A in outer
		D bool   `json:"d"`
	}
	outer struct {
		inner   `json:",inline"` // unexported embedded struct: encoding/json arbitrates
		*deeper `json:",inline"`
	}
	embeds struct {
		Inner
		*Deeper
		Own string `json:"own,omitempty"`
	}
	Inner struct {
		A string `json:"a"`
		C string `json:"status,omitempty"`
	}
	Deeper struct {
		E []string          `json:"e"`
		F map[string]string `json:"f,omitempty"`
	}
	Inner2 struct {
		A string `json:"a"`
	}
	zeroes struct {
		T     metav1.Time      `json:"t,omitzero"`
		P     *metav1.Time     `json:"p,omitzero"`
		D     time.Duration    `json:"d,omitzero"`
		Z     zeroByMethod     `json:"z,omitzero"`
		ZP    zeroByPtrMethod  `json:"zp,omitzero"`
		I     any              `json:"i,omitempty"`
		S     []string         `json:"s,omitempty"`
		M     map[string]int   `json:"m,omitempty"`
		F     float64          `json:"f,omitempty"`
		Neg   float64          `json:"neg,omitempty"`
		U     uint8            `json:"u,omitempty"`
		Skip  string           `json:"-"`
		Dash  string           `json:"-,"`
		Raw   json.RawMessage  `json:"raw"`
		Bytes []byte           `json:"bytes"`
		F32   float32          `json:"f32"`
		Num   json.Number      `json:"num"`
		IntK  map[int]string   `json:"intk"`
		Arr   [2]*inner        `json:"arr"`
		Txt   textual          `json:"txt"`
		TxtM  map[textual]bool `json:"txtm"`
		hide  string
	}
	odd struct {
		Q   string `json:"q,string"`
		Bad string `json:"a\"b"`
	}
	zeroByMethod    struct{ N int }
	zeroByPtrMethod struct{ N int }
	textual         string
	addrMarshaler   struct{ N int }
	withAddr        struct {
		V  addrMarshaler            `json:"v"`
		M  map[string]addrMarshaler `json:"m"`
		S  []addrMarshaler          `json:"s"`
		IF any                      `json:"if"`
	}
)

func (z zeroByMethod) IsZero() bool     { return z.N == 7 }
func (z *zeroByPtrMethod) IsZero() bool { return z.N == 7 }

func (t textual) MarshalText() ([]byte, error) { return []byte("text:" + string(t)), nil }

func (a *addrMarshaler) MarshalJSON() ([]byte, error) { return []byte(`"by pointer"`), nil }

// TestWalkIsJSON: the walk writes the YAML of the value's JSON, for every rule of
// encoding/json the objects may meet, at every place a value can stand (the document,
// a mapping's value, a sequence's item), and refuses what encoding/json refuses.
func TestWalkIsJSON(t *testing.T) {
	seven := metav1.NewTime(time.Unix(7, 0).UTC())
	values := []any{
		nil, true, 3, -2.5, "plain", "bad \xff\xfe utf-8", []any{1, "x", nil},
		map[string]any{"status": map[string]any{}, "creationTimestamp": nil, "kept": map[string]any{"status": 1}},
		map[string]string{"b\xff": "v", "a": "w"},
		&outer{inner: inner{A: "in"}, deeper: &deeper{A: "deep", D: true}},
		&outer{},
		&embeds{Inner: Inner{A: "a"}, Deeper: &Deeper{E: []string{}}},
		&embeds{Own: "own"},
		embeds{Inner: Inner{A: "unaddressable", C: "set"}},
		clash(),
		&zeroes{},
		&zeroes{T: seven, P: &metav1.Time{}, D: time.Second, Z: zeroByMethod{7}, ZP: zeroByPtrMethod{7},
			I: 0, S: []string{}, M: map[string]int{}, F: 0.5, U: 1, Skip: "x", Dash: "y",
			Raw: json.RawMessage(`{"z": 1, "a": [true]}`), Bytes: []byte("bytes"), F32: 0.1, Num: "12.50",
			IntK: map[int]string{2: "b", 10: "a"}, Arr: [2]*inner{{A: "x"}}, Txt: "t", TxtM: map[textual]bool{"k": true}, hide: "h"},
		zeroes{Z: zeroByMethod{1}, ZP: zeroByPtrMethod{1}},
		&odd{Q: "quoted", Bad: "named by its field"},
		&withAddr{V: addrMarshaler{1}, M: map[string]addrMarshaler{"k": {2}}, S: []addrMarshaler{{3}}, IF: addrMarshaler{4}},
		withAddr{V: addrMarshaler{1}},
		&corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")}},
		&corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromString("http")}}},
		&v1.PipelineRun{
			TypeMeta:   metav1.TypeMeta{APIVersion: "tekton.dev/v1", Kind: "PipelineRun"},
			ObjectMeta: metav1.ObjectMeta{Name: "run", Labels: map[string]string{"a": "b"}},
			Spec: v1.PipelineRunSpec{
				Params: v1.Params{{Name: "s", Value: *v1.NewStructuredValues("one")}, {Name: "a", Value: *v1.NewStructuredValues("x", "y")},
					{Name: "o", Value: *v1.NewObject(map[string]string{"k": "v\xff", "b": "c"})}, {Name: "e", Value: v1.ParamValue{Type: v1.ParamTypeArray}}},
				Timeouts: &v1.TimeoutFields{Pipeline: &metav1.Duration{Duration: time.Hour}},
			},
		},
	}
	for _, v := range values {
		for _, placed := range []any{v, map[string]any{"k": v, "status": v, "creationTimestamp": v}, map[string]any{"list": []any{v, []any{v}, map[string]any{"k": v}}}, &embeds{Inner: Inner{A: "a"}, Deeper: &Deeper{E: []string{}, F: map[string]string{}}}} {
			if err := ObjectYAMLIsJSONs(placed); err != nil {
				t.Errorf("%#v: %v", placed, err)
			}
		}
	}
	// What encoding/json refuses, the walk refuses.
	for _, v := range []any{map[string]any{"f": func() {}}, &zeroes{F: math.NaN()}, &v1.Param{Value: v1.ParamValue{Type: "bogus"}}} {
		_, want := json.Marshal(v)
		if _, err := ObjectYAML(v); err == nil || want == nil {
			t.Errorf("%#v: ObjectYAML says %v, encoding/json %v; want both to refuse it", v, err, want)
		}
	}
}

// TestStructFields: the fields the walk lists itself, and the types it leaves to
// encoding/json.
func TestStructFields(t *testing.T) {
	names := func(v any) string {
		f := structFields(reflectType(v))
		if f == nil {
			return "<encoding/json>"
		}
		var out []string
		for _, x := range f.list {
			out = append(out, x.name)
		}
		return strings.Join(out, " ")
	}
	for _, c := range []struct {
		v    any
		want string
	}{
		{embeds{}, "a e f own status"},
		{outer{}, "<encoding/json>"}, // an unexported embedded struct
		{clash(), "<encoding/json>"}, // two a at one depth
		{zeroes{}, "- arr bytes d f f32 i intk m neg num p raw s t txt txtm u z zp"},
		{odd{}, "<encoding/json>"}, // the string option and a name it refuses
		{Inner{}, "a status"},
	} {
		if got := names(c.v); got != c.want {
			t.Errorf("%T: fields %q, want %q", c.v, got, c.want)
		}
	}
}

// TestObjectYAMLErrors: an object that cannot be encoded says its type.
func TestObjectYAMLErrors(t *testing.T) {
	_, err := ObjectYAML(map[string]any{"f": func() {}})
	var unsupported *json.UnsupportedTypeError
	if !errors.As(err, &unsupported) || !strings.Contains(err.Error(), "encoding map[string]interface {}") {
		t.Errorf("ObjectYAML of a func: %v", err)
	}
}

func reflectType(v any) reflect.Type {
	t := reflect.TypeOf(v)
	if t.Kind() == reflect.Pointer {
		return t.Elem()
	}
	return t
}

// clash is a struct embedding two that have a field a each, which encoding/json
// leaves out (made at run time: vet refuses such a type in the source).
func clash() any {
	t := reflect.StructOf([]reflect.StructField{
		{Name: "Inner", Type: reflect.TypeFor[Inner](), Anonymous: true},
		{Name: "Inner2", Type: reflect.TypeFor[Inner2](), Anonymous: true},
		{Name: "Own", Type: reflect.TypeFor[string](), Tag: `json:"own"`},
	})
	v := reflect.New(t)
	v.Elem().Field(0).Set(reflect.ValueOf(Inner{A: "1", C: "c"}))
	v.Elem().Field(1).Set(reflect.ValueOf(Inner2{A: "2"}))
	v.Elem().Field(2).SetString("own")
	return v.Interface()
}
