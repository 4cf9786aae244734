package varuse

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/concourse-tekton/concourse-tekton/concourse/vars"
)

func TestLooksLikeCredential(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"password", true},
		{"git_password", true},
		{"DB_PASSWD", true},
		{"gpg-passphrase", true},
		{"docker_pass", true},
		{"pwd", true},
		{"client_secret", true},
		{"secrets", true},
		{"githubToken", true},
		{"access_token", true},
		{"api_key", true},
		{"APIKey", true},
		{"API_KEYS", true},
		{"privateKey", true},
		{"ssh-private", true},
		{"credentials", true},
		{"creds.user", true},
		{"tls.cert", true},
		{"ca_certificate", true},
		{"signing.pem", true},
		{"vault:token", true},
		{"uri", false},
		{"branch", false},
		{"repository", false},
		{"compass", false},
		{"passthrough", false},
		{"keyboard_layout", false},
		{"image_tag", false},
		{"address", false},
		{"user", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := LooksLikeCredential(tc.name); got != tc.want {
				t.Errorf("LooksLikeCredential(%q) = %v, want %v", tc.name, got, tc.want)
			}
		})
	}
}

func TestHeld(t *testing.T) {
	spec, _ := json.Marshal(map[string]any{"source": map[string]any{"uri": "https://example.com/r.git", "private_key": "-----BEGIN KEY-----\nabc<&>\n-----END KEY-----\n", "depth": 5}})
	doubly, _ := json.Marshal(map[string]any{"across": string(spec)})
	doc := func(param string) []byte {
		b, _ := json.Marshal(map[string]any{
			"metadata": map[string]any{"name": "app-unit", "annotations": map[string]any{"build": "1"}},
			"spec":     map[string]any{"params": []any{map[string]any{"name": "spec", "value": param}}, "enabled": true},
		})
		return b
	}
	key := Var{Name: "key", Value: "-----BEGIN KEY-----\nabc<&>\n-----END KEY-----\n"}
	tests := []struct {
		name string
		doc  []byte
		vars []Var
		want []string
	}{
		{"none", doc("{}"), nil, nil},
		{"spliced into a string", doc(string(spec)), []Var{{Name: "host", Value: "example.com"}}, []string{"host"}},
		{"in JSON, escaped", doc(string(spec)), []Var{key}, []string{"key"}},
		{"in JSON in JSON", doc(string(doubly)), []Var{key}, []string{"key"}},
		{"a map's leaves", doc(string(spec)), []Var{{Name: "creds", Value: map[string]any{"k": key.Value, "x": []any{"nope"}}}}, []string{"creds"}},
		{"a number, whole", doc(string(spec)), []Var{{Name: "depth", Value: int64(5)}}, []string{"depth"}},
		{"a number's text, whole", doc(string(spec)), []Var{{Name: "build", Value: json.Number("1")}}, []string{"build"}},
		{"a boolean", doc("{}"), []Var{{Name: "on", Value: true}}, []string{"on"}},
		{"a number within a string, as it is spliced", doc(`{"port":"x:8080"}`), []Var{{Name: "port", Value: int64(8080)}}, []string{"port"}},
		{"a short number within a string is not seen", doc(`{"port":"x:80"}`), []Var{{Name: "port", Value: int64(80)}}, nil},
		{"a credential's number within a string", doc(`{"uri":"https://ci:20240611@git"}`), []Var{{Name: "git_password", Value: int64(20240611)}}, []string{"git_password"}},
		{"a credential too short to be seen may be anywhere", doc("{}"), []Var{{Name: "git_password", Value: "pw1"}, {Name: "pin", Value: json.Number("12")}, {Name: "api_keys", Value: []any{"longer-key", "k"}}}, []string{"api_keys", "git_password"}},
		{"a credential's boolean is not spliced", doc("{}"), []Var{{Name: "secret", Value: false}}, nil},
		{"absent", doc(string(spec)), []Var{{Name: "token", Value: "s3cr3t"}}, nil},
		{"short, within a string", doc(string(spec)), []Var{{Name: "user", Value: "app"}}, nil},
		{"short, whole", doc(string(spec)), []Var{{Name: "user", Value: "spec"}, {Name: "u", Value: "1"}}, []string{"u", "user"}},
		{"empty", doc(string(spec)), []Var{{Name: "token", Value: ""}}, nil},
		{"sorted, only those held", doc(string(spec)), []Var{{Name: "a", Value: "app-unit"}, {Name: "b", Value: "zzz"}, {Name: "c", Value: "spec"}}, []string{"a", "c"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Held(tc.doc, tc.vars)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if _, err := Held([]byte("{"), []Var{key}); err == nil {
		t.Error("Held of bad JSON: no error")
	}
}

func TestRecorder(t *testing.T) {
	static := vars.Multi{vars.StaticVariables{"uri": "u", "creds": map[string]any{"user": "me", "password": "pw"}}}
	r := NewRecorder(static)
	for _, name := range []string{"uri", "creds.password", "missing", "vault:uri", "uri"} {
		ref, err := vars.ParseReference(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := r.Get(ref); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := r.Get(vars.Reference{Path: "creds", Fields: []string{"nope"}}); err == nil {
		t.Error("a missing field: no error")
	}
	want := []Var{{Name: "creds.password", Value: "pw"}, {Name: "uri", Value: "u"}}
	if diff := cmp.Diff(want, r.Used()); diff != "" {
		t.Errorf("used (-want +got):\n%s", diff)
	}
}
