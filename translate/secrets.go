package translate

import (
	"bytes"
	"encoding/json"
	"maps"
	"path"
	"slices"
	"sort"
	"strings"

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
// up in, in order (the first that exists and is not empty is used: the Secret volume of a
// missing or empty Secret is an empty directory), and the key it needs there, if any. A
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

// refsIn lists the references to credentials in a step's encoded spec: its ((vars)) but
// the local ones, from each string of the JSON, in no particular order. memo, when not
// nil, keeps each string's references: the steps of a pipeline's jobs repeat the same
// sources and params (a get of a resource, a put to it and the put's get).
func refsIn(encoded []byte, memo *processMemo[string, []vars.Reference]) []vars.Reference {
	if !bytes.Contains(encoded, []byte("((")) {
		return nil
	}
	var refs []vars.Reference
	stringsWith(encoded, "((", func(s string) {
		found, ok := memo.get(s)
		if !ok {
			found = refsOf(s)
			if len(s) <= maxRefMemoString {
				memo.put(s, slices.Clip(found))
			}
		}
		refs = append(refs, found...)
	})
	return refs
}

// refsOf lists the references to credentials in one string: its ((vars)) but the local
// ones.
func refsOf(s string) []vars.Reference {
	var refs []vars.Reference
	for _, n := range vars.Names(s) {
		if ref, err := vars.ParseReference(n); err == nil && ref.Source != "." {
			refs = append(refs, ref)
		}
	}
	return refs
}

// stringRefs are the references of the strings refsIn scanned in this process, none
// longer than maxRefMemoString bytes (a script with a ((var)) is seldom repeated).
var stringRefs = &processMemo[string, []vars.Reference]{max: 8192}

const maxRefMemoString = 1024

// stringsWith calls f with each string of the JSON document doc, object keys included,
// that holds sub, unescaped: a scan of doc's strings, with no value built for the rest.
// sub must be of bytes that encoding/json never escapes, as "((" is. It looks for the
// quotes that begin and end strings with bytes.IndexByte (a spec is long, and its
// strings hold few escapes): a quote ends a string unless an odd number of backslashes
// comes before it.
func stringsWith(doc []byte, sub string, f func(string)) {
	for {
		start := bytes.IndexByte(doc, '"')
		if start < 0 {
			return
		}
		end := start + 1
		for {
			i := bytes.IndexByte(doc[end:], '"')
			if i < 0 {
				return // unterminated: not JSON
			}
			end += i
			backslashes := 0
			for doc[end-1-backslashes] == '\\' {
				backslashes++
			}
			if backslashes%2 == 0 {
				break
			}
			end++
		}
		if lit := doc[start : end+1]; bytes.Contains(lit, []byte(sub)) {
			if bytes.IndexByte(lit, '\\') < 0 {
				f(string(lit[1 : len(lit)-1]))
			} else if s := ""; json.Unmarshal(lit, &s) == nil {
				f(s)
			}
		}
		doc = doc[end+1:]
	}
}

// suppliedKeys lists the keys of the build's Secret a step's ((vars)) read, sorted, when
// the build's credentials are supplied (Options.SuppliedCredentials): every var with or
// without a var source, each reference with its fields its own key.
func (c *compiler) suppliedKeys(refs []vars.Reference) []string {
	keys := map[string]bool{}
	for _, ref := range refs {
		cred := Credential{Var: ref.String(), Secrets: []string{c.runName()}, Supplied: true}
		cred.Key = runspec.CredentialKey(cred.Var)
		c.creds[cred.Var] = cred
		keys[cred.Key] = true
	}
	return slices.Sorted(maps.Keys(keys))
}

// secretsOf lists the Secrets a step's ((vars)) may come from. The build's steps that
// read the same references (the same resource's source) share one list.
func (c *compiler) secretsOf(refs []vars.Reference) []secretMount {
	if len(refs) == 0 {
		return nil
	}
	key := make([]byte, 0, 64)
	for _, ref := range refs {
		key = append(append(append(append(key, ref.Source...), 1), ref.Path...), 1)
		for _, f := range ref.Fields {
			key = append(append(key, f...), 2)
		}
		key = append(key, 0)
	}
	if out, ok := c.secretsFor[string(key)]; ok {
		return out
	}
	out := c.secretMounts(refs)
	c.secretsFor[string(key)] = out
	return out
}

// secretMounts is secretsOf, made: it records the build's credentials the references
// read and the Secrets they may come from.
func (c *compiler) secretMounts(refs []vars.Reference) []secretMount {
	// The keys each mount needs; a nil set is the whole Secret.
	mounts := map[string]*secretMount{}
	keys := map[string]map[string]bool{}
	add := func(dir, name string, fields []string) string {
		key := dir + "\x00" + name
		at, ok := secretMountsOf.get(key)
		if !ok {
			at.path = path.Join(runspec.DefaultCreds, dir, name)
			at.secret = secretName(strings.ReplaceAll(path.Join(dir, name), "/", "."))
			secretMountsOf.put(key, at)
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
	for _, ref := range refs {
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

// secretMountsOf are the mounts of the Secrets of the credentials the process's builds
// read, by directory and name (secretMounts): each of a pipeline's jobs reads the same
// few, whose paths and Secret names were made again in every build.
var secretMountsOf = &processMemo[string, secretMount]{max: 8192}

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
