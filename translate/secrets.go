package translate

import (
	"bytes"
	"encoding"
	"encoding/json"
	"maps"
	"path"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/concourse-tekton/concourse-tekton/concourse/vars"
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// secretMount puts a Secret where the runner looks for a credential: the runner reads
// ((name)) from <creds>/<pipeline>.<name>/ or <creds>/<name>/ (Concourse's Kubernetes
// credential manager's names), and ((source:name)) under <creds>/<source>/. Kubernetes
// names cannot hold '_' or capitals, so the Secret's own name is the lowercased name
// with '-' for anything else: ((repo_private_key)) of pipeline booklit is read from the
// Secret booklit.repo-private-key, or else repo-private-key, key `value` (or, for a var
// with fields, one key per field).
type secretMount struct {
	secret string
	path   string
	// keys are the only keys mounted, sorted; none: the whole Secret (a var without a
	// field: its `value` key, or else the map of every key).
	keys []string
}

// Credential is one ((var)) a build reads from Kubernetes Secrets: the Secrets it is looked
// up in, in order (the first that exists is used), and the key it needs there, if any. A
// supplied credential (Options.SuppliedCredentials) is in the build's own Secret.
type Credential struct {
	// Var is the reference as written between the parentheses.
	Var string `json:"var"`
	// Secrets are the candidate Secrets' names, the pipeline's own first.
	Secrets []string `json:"secrets"`
	// Key is the key the var needs in the Secret found: its first field. Empty: any
	// key will do (a `value` key is the string, otherwise the map of keys).
	Key string `json:"key,omitempty"`
	// Supplied says the var's value is supplied by the build's starter: the key Key of
	// the build's Secret (Result.CredentialSecret) holds the value of the whole reference
	// as JSON.
	Supplied bool `json:"supplied,omitempty"`
}

// refsOf lists the references to credentials in a step's spec: its ((vars)) but the local
// ones, from each string of the spec's JSON, in no particular order.
// memo, when not nil, keeps each string's references: a build's steps repeat the same
// sources and params (a check, its get, a put and its get).
func refsOf(spec runspec.Spec, memo map[string][]vars.Reference) []vars.Reference {
	var refs []vars.Reference
	jsonStringsWith(reflect.ValueOf(&spec).Elem(), "((", func(s string) {
		found, ok := memo[s]
		if !ok {
			for _, n := range vars.Names(s) {
				if ref, err := vars.ParseReference(n); err == nil && ref.Source != "." {
					found = append(found, ref)
				}
			}
			if memo != nil {
				memo[s] = found
			}
		}
		refs = append(refs, found...)
	})
	return refs
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
	// scanTypes caches how jsonStringsWith walks each type (*scanType).
	scanTypes sync.Map
)

// How a type encodes itself, if it does: a method of its own, or of its pointer.
const (
	encodesNot = iota
	encodesJSON
	encodesText
)

// scanType is how jsonStringsWith walks values of one type, as encoding/json would
// encode them.
type scanType struct {
	// encodes and byAddress: the value's own encoding (MarshalJSON or MarshalText),
	// byAddress when that is its pointer's method, called when the value can be addressed.
	encodes   int
	byAddress bool
	// stringless: no value of the type holds a string (numbers, booleans, bytes).
	stringless bool
	// fields are a struct's fields encoding/json writes: exported or embedded, not "-".
	fields []scanField
}

type scanField struct {
	index int
	// quoted: a string field with the string option, written as its JSON in a string.
	quoted bool
}

func scanTypeOf(t reflect.Type) *scanType {
	if st, ok := scanTypes.Load(t); ok {
		return st.(*scanType)
	}
	st := &scanType{}
	switch {
	case t.Implements(jsonMarshaler):
		st.encodes = encodesJSON
	case t.Implements(textMarshaler):
		st.encodes = encodesText
	case t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(jsonMarshaler):
		st.encodes, st.byAddress = encodesJSON, true
	case t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(textMarshaler):
		st.encodes, st.byAddress = encodesText, true
	}
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		st.stringless = st.encodes == encodesNot && !st.byAddress
	case reflect.Slice, reflect.Array:
		// []byte is base64: no parentheses.
		st.stringless = st.encodes == encodesNot && t.Elem().Kind() == reflect.Uint8 && scanTypeOf(t.Elem()).stringless
	case reflect.Struct:
		for i := range t.NumField() {
			field := t.Field(i)
			tag := field.Tag.Get("json")
			if (!field.IsExported() && !field.Anonymous) || tag == "-" {
				continue
			}
			quoted := field.Type.Kind() == reflect.String && slices.Contains(strings.Split(tag, ",")[1:], "string")
			st.fields = append(st.fields, scanField{index: i, quoted: quoted})
		}
	}
	actual, _ := scanTypes.LoadOrStore(t, st)
	return actual.(*scanType)
}

// jsonStringsWith calls f with each string that holds sub among those encoding/json would
// write of v, object keys included, without encoding v: it walks v as the encoder does
// (exported and embedded fields but those tagged "-", map keys and values, elements),
// and encodes only the values that encode themselves (json.Marshaler, whose output it
// scans with stringsWith, and encoding.TextMarshaler). sub must be of bytes that
// encoding/json never escapes, as "((" is.
func jsonStringsWith(v reflect.Value, sub string, f func(string)) {
	if !v.IsValid() {
		return
	}
	st := scanTypeOf(v.Type())
	if st.stringless {
		return
	}
	if st.encodes != encodesNot && (!st.byAddress || v.CanAddr()) {
		if st.byAddress {
			v = v.Addr()
		}
		if k := v.Kind(); (k == reflect.Pointer || k == reflect.Interface) && v.IsNil() {
			return // null
		}
		if !v.CanInterface() {
			return // behind an unexported field: encoding/json does not reach it either
		}
		if st.encodes == encodesJSON {
			if buf, err := v.Interface().(json.Marshaler).MarshalJSON(); err == nil && bytes.Contains(buf, []byte(sub)) {
				stringsWith(buf, sub, f)
			}
		} else if text, err := v.Interface().(encoding.TextMarshaler).MarshalText(); err == nil && bytes.Contains(text, []byte(sub)) {
			f(string(text))
		}
		return
	}
	switch v.Kind() {
	case reflect.String:
		if s := v.String(); strings.Contains(s, sub) {
			f(s)
		}
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return
		}
		if v.Kind() == reflect.Interface && v.CanInterface() && plainStringsWith(v.Interface(), sub, f) {
			return
		}
		jsonStringsWith(v.Elem(), sub, f)
	case reflect.Struct:
		for _, field := range st.fields {
			fv := v.Field(field.index)
			if !field.quoted {
				jsonStringsWith(fv, sub, f)
			} else if s := fv.String(); strings.Contains(s, sub) {
				quoted, _ := json.Marshal(s)
				f(string(quoted))
			}
		}
	case reflect.Map:
		if v.Type() == mapOfAny && v.CanInterface() {
			plainStringsWith(v.Interface(), sub, f)
			return
		}
		for it := v.MapRange(); it.Next(); {
			if k := it.Key(); k.Kind() == reflect.String {
				// Keys of a string type are written as they are, whatever their methods.
				if strings.Contains(k.String(), sub) {
					f(k.String())
				}
			} else {
				jsonStringsWith(k, sub, f)
			}
			jsonStringsWith(it.Value(), sub, f)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			jsonStringsWith(v.Index(i), sub, f)
		}
	}
}

// mapOfAny is the type of decoded JSON objects, which most of a spec's generic values are.
var mapOfAny = reflect.TypeFor[map[string]any]()

// plainStringsWith is jsonStringsWith for a value of decoded JSON (nil, bool, float64,
// string, []any, map[string]any, nested), walked without reflection; it tells whether v
// was one (false: walk it with reflection).
func plainStringsWith(v any, sub string, f func(string)) bool {
	switch x := v.(type) {
	case nil, bool, float64:
	case string:
		if strings.Contains(x, sub) {
			f(x)
		}
	case map[string]any:
		for k, e := range x {
			if strings.Contains(k, sub) {
				f(k)
			}
			if !plainStringsWith(e, sub, f) {
				jsonStringsWith(reflect.ValueOf(&e).Elem(), sub, f)
			}
		}
	case []any:
		for _, e := range x {
			if !plainStringsWith(e, sub, f) {
				jsonStringsWith(reflect.ValueOf(&e).Elem(), sub, f)
			}
		}
	default:
		return false
	}
	return true
}

// stringsWith calls f with each string of the JSON document doc, object keys included,
// that holds sub, unescaped: a scan of doc's strings, with no value built for the rest.
// sub must be of bytes that encoding/json never escapes, as "((" is.
func stringsWith(doc []byte, sub string, f func(string)) {
	for i := 0; i < len(doc); i++ {
		if doc[i] != '"' {
			continue
		}
		end, escaped := i+1, false
		for end < len(doc) && doc[end] != '"' {
			if doc[end] == '\\' {
				end, escaped = end+1, true
			}
			end++
		}
		if end >= len(doc) {
			return // unterminated: not JSON
		}
		if lit := doc[i : end+1]; bytes.Contains(lit, []byte(sub)) {
			if !escaped {
				f(string(lit[1 : len(lit)-1]))
			} else if s := ""; json.Unmarshal(lit, &s) == nil {
				f(s)
			}
		}
		i = end
	}
}

// suppliedKeys lists the keys of the build's Secret a step's ((vars)) read, sorted, when
// the build's credentials are supplied (Options.SuppliedCredentials): every var with or
// without a var source, each reference with its fields its own key.
func (c *compiler) suppliedKeys(spec runspec.Spec) []string {
	keys := map[string]bool{}
	for _, ref := range refsOf(spec, c.refs) {
		cred := Credential{Var: ref.String(), Secrets: []string{c.runName()}, Supplied: true}
		cred.Key = runspec.CredentialKey(cred.Var)
		c.creds[cred.Var] = cred
		keys[cred.Key] = true
	}
	return slices.Sorted(maps.Keys(keys))
}

// secretsOf lists the Secrets a step's ((vars)) may come from.
func (c *compiler) secretsOf(spec runspec.Spec) []secretMount {
	// The keys each mount needs; a nil set is the whole Secret.
	mounts := map[string]*secretMount{}
	keys := map[string]map[string]bool{}
	add := func(dir, name string, fields []string) string {
		at, ok := c.mountsOf[dir+"\x00"+name]
		if !ok {
			at.path = path.Join(runspec.DefaultCreds, dir, name)
			at.secret = secretName(strings.ReplaceAll(path.Join(dir, name), "/", "."))
			c.mountsOf[dir+"\x00"+name] = at
		}
		p, secret := at.path, at.secret
		if secret == "" {
			return secret
		}
		m, seen := mounts[p]
		if !seen {
			m = &secretMount{secret: secret, path: p}
			mounts[p] = m
			keys[p] = map[string]bool{}
		}
		switch {
		case len(fields) == 0:
			keys[p] = nil
		case keys[p] != nil:
			keys[p][fields[0]] = true
		}
		return secret
	}
	for _, ref := range refsOf(spec, c.refs) {
		dir := ""
		if ref.Source != "" {
			if !slices.Contains(c.opts.VarSources, ref.Source) {
				continue
			}
			dir = ref.Source
		}
		var cred Credential
		cred.Var = ref.String()
		if c.opts.Pipeline != "" {
			cred.Secrets = append(cred.Secrets, add(dir, c.opts.Pipeline+"."+ref.Path, ref.Fields))
		}
		cred.Secrets = append(cred.Secrets, add(dir, ref.Path, ref.Fields))
		if len(ref.Fields) > 0 {
			cred.Key = ref.Fields[0]
		}
		c.creds[cred.Var] = cred
	}
	out := make([]secretMount, 0, len(mounts))
	for p, m := range mounts {
		if keys[p] != nil {
			m.keys = slices.Sorted(maps.Keys(keys[p]))
		}
		out = append(out, *m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	for _, m := range out {
		c.secrets[m.secret] = true
	}
	return out
}

func walkStrings(v any, f func(string)) {
	switch x := v.(type) {
	case string:
		f(x)
	case []any:
		for _, e := range x {
			walkStrings(e, f)
		}
	case map[string]any:
		for k, e := range x {
			f(k)
			walkStrings(e, f)
		}
	}
}

// secretName makes a Kubernetes Secret name (a DNS subdomain) of a credential's name.
func secretName(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '.', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	out := strings.Trim(b.String(), "-.")
	if len(out) > 253 {
		out = out[:253]
	}
	return out
}
