package runner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/concourse-tekton/concourse-tekton/concourse/vars"
	"github.com/concourse-tekton/concourse-tekton/runner/redact"
	"github.com/concourse-tekton/concourse-tekton/runner/state"
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// buildVars are a step's run-time vars: local vars ((.:name)) from the state directory,
// and credentials from the Kubernetes Secrets mounted under creds, looked up the way
// Concourse's kubernetes credential manager looks them up: Secret <pipeline>.<name>, then
// <name>; a Secret with a `value` key is that string, otherwise the map of its keys.
// ((source:name)) looks in the var source's directory creds/<source>/ the same way. With
// supplied credentials (runspec.Spec.SuppliedCredentials), a credential is instead the file
// of its whole reference in creds, as resolved before the build started, or, for a task
// whose config is a file, in taskVars, as resolved once its resolve step listed them. Every credential
// the step resolves, and every local var marked so in the step's scopes (read or not), is
// added to the secrets to redact.
type buildVars struct {
	state state.Dir
	scope []string
	creds string
	// taskVars is where a task whose config is a file read at run time finds the values
	// of the vars its resolve step listed (supplied credentials; runspec.Paths.TaskVars).
	taskVars string
	supplied bool
	pipeline string
	sources  []string
	across   map[string]any
	secrets  *redact.Secrets
}

var _ vars.Variables = (*buildVars)(nil)

// Get implements vars.Variables.
func (b *buildVars) Get(ref vars.Reference) (any, bool, error) {
	var value any
	secret := true
	switch {
	case ref.Source == ".":
		v, found, err := b.local(ref.Path)
		if err != nil || !found {
			return nil, found, err
		}
		value, secret = v.Value, v.Redact
	case b.supplied:
		// The value of the whole reference, fields walked already.
		v, found, err := readSupplied(b.creds, ref)
		if err == nil && !found && b.taskVars != "" {
			v, found, err = readTaskVar(b.taskVars, ref)
		}
		if err != nil || !found {
			return nil, found, err
		}
		b.secrets.Add(v)
		return v, true, nil
	case ref.Source == "":
		v, found, err := b.credential(b.creds, ref.Path)
		if err != nil || !found {
			return nil, found, err
		}
		value = v
	case slices.Contains(b.sources, ref.Source):
		v, found, err := b.credential(filepath.Join(b.creds, ref.Source), ref.Path)
		if err != nil || !found {
			return nil, found, err
		}
		value = v
	default:
		return nil, false, fmt.Errorf("unknown var source '%s' in ((%s))", ref.Source, ref)
	}
	value, err := vars.Traverse(value, ref.String(), ref.Fields)
	if err != nil {
		return nil, false, err
	}
	if secret {
		b.secrets.Add(value)
	}
	return value, true, nil
}

// taskVarsDir is where the step finds the vars its task file needs: only a task whose
// config is a file read at run time, with supplied credentials, has them.
func taskVarsDir(spec runspec.Spec, paths runspec.Paths) string {
	if !spec.SuppliedCredentials || spec.Mode != runspec.ModeTask || spec.Task == nil || spec.Task.File == "" {
		return ""
	}
	return paths.TaskVars
}

// startersVars lists the vars of an UndefinedVarsError that the build's starter supplies
// (sorted, as the error lists them): all of them but local vars, which no one but the
// build has. ok is false when a local var is among them: that stays an error.
func startersVars(err error) (refs []string, ok bool) {
	var undefined vars.UndefinedVarsError
	if !errors.As(err, &undefined) {
		return nil, false
	}
	for _, name := range undefined.Vars {
		if strings.HasPrefix(name, ".:") {
			return nil, false
		}
		refs = append(refs, name)
	}
	return refs, true
}

// trackLocalVars adds to the secrets every redacted local var the step can see, whether
// it reads them or not: Concourse tracks a load_var value from the moment it is set, for
// every later step of the build in its scope.
func (b *buildVars) trackLocalVars() error {
	vs, err := b.state.ScopeVars(b.scope)
	if err != nil {
		return fmt.Errorf("reading the local vars to redact: %w", err)
	}
	for _, v := range vs {
		if v.Redact {
			b.secrets.Add(v.Value)
		}
	}
	return nil
}

// local looks a local var up: the substep's own scope, then its across values, then the
// scopes around it.
func (b *buildVars) local(name string) (state.Var, bool, error) {
	if len(b.scope) > 0 && b.across != nil {
		v, found, err := b.state.LookupVarIn(b.scope[len(b.scope)-1], name)
		if err != nil || found {
			return v, found, err
		}
	}
	if v, ok := b.across[name]; ok {
		return state.Var{Value: v}, true, nil
	}
	return b.state.LookupVar(b.scope, name)
}

func (b *buildVars) credential(dir, name string) (any, bool, error) {
	var candidates []string
	if b.pipeline != "" {
		candidates = append(candidates, b.pipeline+"."+name)
	}
	candidates = append(candidates, name)
	for _, secret := range candidates {
		if strings.ContainsAny(secret, "/\x00") || secret == "." || secret == ".." {
			continue
		}
		v, found, err := readSecret(filepath.Join(dir, secret))
		if err != nil || found {
			return v, found, err
		}
	}
	return nil, false, nil
}

// readSecret reads a mounted Secret: a directory with a file per key. Names starting with
// ".." are the kubelet's own (the atomic-update symlinks of a secret volume). An empty
// directory is no Secret.
func readSecret(dir string) (any, bool, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("reading credential %s: %w", filepath.Base(dir), err)
	}
	values := map[string]any{}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "..") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			if errors.Is(err, syscall.EISDIR) {
				continue
			}
			return nil, false, fmt.Errorf("reading credential %s: %w", filepath.Base(dir), err)
		}
		values[e.Name()] = string(data)
	}
	if len(values) == 0 {
		// An optional Secret volume whose Secret does not exist is an empty directory:
		// that is no credential, and the lookup goes on.
		return nil, false, nil
	}
	if v, ok := values["value"]; ok {
		return v, true, nil
	}
	return values, true, nil
}

// readTaskVar reads a var of a task file from the task's vars Secret, whose starter may
// have said instead why it could not look them up.
func readTaskVar(dir string, ref vars.Reference) (any, bool, error) {
	msg, err := os.ReadFile(filepath.Join(dir, runspec.TaskVarsErrorKey))
	if err == nil {
		return nil, false, errors.New(string(msg))
	}
	return readSupplied(dir, ref)
}

// readSupplied reads a supplied credential: the file runspec.CredentialKey names, holding
// its value as JSON (numbers kept as they were written). No file: the var is undefined.
func readSupplied(dir string, ref vars.Reference) (any, bool, error) {
	data, err := os.ReadFile(filepath.Join(dir, runspec.CredentialKey(ref.String())))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("reading credential ((%s)): %w", ref, err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false, fmt.Errorf("reading credential ((%s)): not JSON", ref)
	}
	return v, true, nil
}
