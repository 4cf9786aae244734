package varuse

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/concourse-tekton/concourse-tekton/concourse/vars"
)

// Var is a static var that was interpolated: its reference as written between the
// parentheses, and the value it gave.
type Var struct {
	Name  string
	Value any
}

// Recorder looks vars up in the static vars and notes each one they give: handed to the
// pipeline's parser, it learns which vars were interpolated into the config, and so may
// end up in what is written of it.
type Recorder struct {
	vars vars.Variables
	used map[string]any
}

var _ vars.Variables = (*Recorder)(nil)

// NewRecorder records the vars that v gives.
func NewRecorder(v vars.Variables) *Recorder {
	return &Recorder{vars: v, used: map[string]any{}}
}

// Get looks ref up and notes it when it is found.
func (r *Recorder) Get(ref vars.Reference) (any, bool, error) {
	v, found, err := r.vars.Get(ref)
	if found && err == nil {
		r.used[ref.String()] = v
	}
	return v, found, err
}

// Used lists the vars given so far, sorted by name.
func (r *Recorder) Used() []Var {
	out := make([]Var, 0, len(r.used))
	for name, v := range r.used {
		out = append(out, Var{Name: name, Value: v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// credentialStems end the words of a name that holds a credential (passwords, the
// db_password of a var file, a githubToken, an api_key, a privateKey, the creds of
// ((creds.user))); credentialWords are words that say so only whole.
//
// Concourse itself never guesses from a name: the ATC redacts the values it fetched from
// a credential manager, whatever their names, and a static var given to
// `fly set-pipeline` is stored in the pipeline's config, in the clear, with no warning.
// This heuristic is this tool's, and errs on the side of a warning.
var (
	credentialStems = []string{"password", "passwd", "passphrase", "secret", "token", "key", "private", "credential", "cred", "cert", "certificate"}
	credentialWords = map[string]bool{"pass": true, "pwd": true, "pem": true, "jwt": true}
)

// LooksLikeCredential reports whether a var's name says it holds a credential: whether
// one of its words (split at anything but a letter or a digit, and where camelCase turns
// upper case) is one of credentialWords or ends with one of credentialStems, a plural
// allowed: git_password, ((creds.user)), githubToken, API_KEYS, tls.cert, ssh-private.
func LooksLikeCredential(name string) bool {
	for _, word := range words(name) {
		for _, w := range []string{word, strings.TrimSuffix(word, "s")} {
			if credentialWords[w] {
				return true
			}
			for _, stem := range credentialStems {
				if strings.HasSuffix(w, stem) {
					return true
				}
			}
		}
	}
	return false
}

// words splits a name into lower-case words at non-alphanumerics and camelCase humps
// (githubToken: github, token; APIKey: api, key).
func words(name string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	rs := []rune(name)
	for i, r := range rs {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush()
			continue
		}
		if unicode.IsUpper(r) && i > 0 {
			prevLower := unicode.IsLower(rs[i-1]) || unicode.IsDigit(rs[i-1])
			nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
			if prevLower || (unicode.IsUpper(rs[i-1]) && nextLower) {
				flush()
			}
		}
		cur = append(cur, r)
	}
	flush()
	return out
}

// Held lists the names of the vars of vs whose values a JSON document holds, or may hold
// unseen, sorted.
//
// A var's value is held when one of its strings is within a string of the document (a
// key or a value, or a string of JSON within a string, as the runner's spec params are,
// read to any depth), one of its integers is within a string as its decimal text (as an
// integer is spliced into a string), or one of its numbers or booleans is a value of the
// document or the whole of one of its strings. A string, or an integer's text, shorter
// than minWithin is not looked for within strings: every name and word would hold "me"
// or "1". Such a value of a var that looks like a credential may be in any string of the
// document unseen: it is counted held, so that no file others may read has it. An empty
// string is never held.
func Held(doc []byte, vs []Var) ([]string, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("reading an object to find vars in it: %w", err)
	}
	var held []string
	for _, x := range vs {
		var n needles
		n.add(x.Value)
		if (n.unseen && LooksLikeCredential(x.Name)) || n.in(v, 0) {
			held = append(held, x.Name)
		}
	}
	sort.Strings(held)
	return held, nil
}

// needles are what is looked for of a var's value: strings within strings, scalars whole.
type needles struct {
	within []string
	whole  map[string]bool
	// unseen: a string or an integer too short to be looked for within strings, where
	// it may be spliced.
	unseen bool
}

func (n *needles) add(v any) {
	switch x := v.(type) {
	case string:
		n.addText(x)
	case map[string]any:
		for _, e := range x {
			n.add(e)
		}
	case []any:
		for _, e := range x {
			n.add(e)
		}
	case nil:
	default:
		if s, ok := scalarText(x); ok {
			n.addWhole(s)
		}
		if s, ok := spliced(x); ok {
			n.addText(s)
		}
	}
}

// addText looks for s within strings, or only whole when it is too short to.
func (n *needles) addText(s string) {
	switch {
	case len(s) >= minWithin:
		n.within = append(n.within, s)
	case s != "":
		n.addWhole(s)
		n.unseen = true
	}
}

func (n *needles) addWhole(s string) {
	if n.whole == nil {
		n.whole = map[string]bool{}
	}
	n.whole[s] = true
}

// minWithin is the length from which a string value is looked for within longer strings.
const minWithin = 4

// maxDepth bounds how deep JSON within strings is read.
const maxDepth = 8

func (n *needles) in(v any, depth int) bool {
	switch x := v.(type) {
	case string:
		return n.inString(x, depth)
	case map[string]any:
		for k, e := range x {
			if n.inString(k, maxDepth) || n.in(e, depth) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if n.in(e, depth) {
				return true
			}
		}
	case nil:
	default:
		s, ok := scalarText(x)
		return ok && n.whole[s]
	}
	return false
}

func (n *needles) inString(s string, depth int) bool {
	for _, w := range n.within {
		if strings.Contains(s, w) {
			return true
		}
	}
	if n.whole[s] {
		return true
	}
	if depth < maxDepth {
		if t := strings.TrimSpace(s); strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
			var inner any
			dec := json.NewDecoder(strings.NewReader(t))
			dec.UseNumber()
			if dec.Decode(&inner) == nil && n.in(inner, depth+1) {
				return true
			}
		}
	}
	return false
}

// spliced is the text an integer becomes when it is spliced into a string
// (vars.InterpolateString); only integers are.
func spliced(v any) (string, bool) {
	switch x := v.(type) {
	case json.Number:
		return x.String(), true
	case int64:
		return strconv.FormatInt(x, 10), true
	case uint64:
		return strconv.FormatUint(x, 10), true
	case int:
		return strconv.Itoa(x), true
	}
	return "", false
}

// scalarText is a number's or a boolean's text, the same however it was typed.
func scalarText(v any) (string, bool) {
	switch x := v.(type) {
	case bool:
		return strconv.FormatBool(x), true
	case json.Number:
		if f, err := x.Float64(); err == nil {
			return strconv.FormatFloat(f, 'g', -1, 64), true
		}
		return x.String(), true
	case int64:
		return strconv.FormatFloat(float64(x), 'g', -1, 64), true
	case uint64:
		return strconv.FormatFloat(float64(x), 'g', -1, 64), true
	case int:
		return strconv.FormatFloat(float64(x), 'g', -1, 64), true
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), true
	}
	return "", false
}
