package concourse

import (
	"fmt"
	"strings"

	"github.com/concourse-tekton/concourse-tekton/concourse/vars"
)

// ParseVarsFile parses a vars file (`fly -l`): a YAML map of var names to values.
func ParseVarsFile(file string, data []byte) (vars.StaticVariables, error) {
	tree, diags := parseTree(file, data)
	if tree == nil {
		return nil, diags.Err()
	}
	if err := diags.Err(); err != nil {
		return nil, err
	}
	switch {
	case tree.kind == scalarNode && tree.scalar == nil:
		return vars.StaticVariables{}, nil
	case tree.kind != mapNode:
		return nil, Diagnostics{{File: file, Pos: tree.pos, Message: "a vars file must be a map of var names to values"}}.Err()
	}
	return vars.StaticVariables(tree.toValue().(map[string]any)), nil
}

// ParseYAMLValue parses the value of a `-y name=value` flag.
func ParseYAMLValue(s string) (any, error) {
	tree, diags := parseTree("", []byte(s))
	if tree == nil {
		return nil, diags.Err()
	}
	if err := diags.Err(); err != nil {
		return nil, err
	}
	return tree.toValue(), nil
}

// VarFlags are the static vars of a command line, kept in fly's precedence: `-v` and `-y`
// flags first (a later flag wins), then `-l` files (a later file wins).
type VarFlags struct {
	flags vars.StaticVariables
	files []vars.StaticVariables
}

// AddVar adds `-v name=value`; name may be a path such as `creds.user`.
func (f *VarFlags) AddVar(pair string) error {
	name, value, ok := strings.Cut(pair, "=")
	if !ok {
		return fmt.Errorf("invalid var %q: use name=value", pair)
	}
	return f.set(name, value)
}

// AddYAMLVar adds `-y name=yaml`, whose value is parsed as YAML.
func (f *VarFlags) AddYAMLVar(pair string) error {
	name, raw, ok := strings.Cut(pair, "=")
	if !ok {
		return fmt.Errorf("invalid var %q: use name=value", pair)
	}
	value, err := ParseYAMLValue(raw)
	if err != nil {
		return fmt.Errorf("invalid YAML value for var %q: %w", name, err)
	}
	return f.set(name, value)
}

// AddFile adds a `-l` vars file's content.
func (f *VarFlags) AddFile(file string, data []byte) error {
	v, err := ParseVarsFile(file, data)
	if err != nil {
		return err
	}
	f.files = append(f.files, v)
	return nil
}

func (f *VarFlags) set(name string, value any) error {
	ref, err := vars.ParseReference(name)
	if err != nil {
		return err
	}
	if ref.Source != "" {
		return fmt.Errorf("invalid var name %q: a static var cannot name a var source", name)
	}
	if f.flags == nil {
		f.flags = vars.StaticVariables{}
	}
	if len(ref.Fields) == 0 {
		f.flags[ref.Path] = value
		return nil
	}
	m, _ := f.flags[ref.Path].(map[string]any)
	if m == nil {
		m = map[string]any{}
		f.flags[ref.Path] = m
	}
	for _, field := range ref.Fields[:len(ref.Fields)-1] {
		next, _ := m[field].(map[string]any)
		if next == nil {
			next = map[string]any{}
			m[field] = next
		}
		m = next
	}
	m[ref.Fields[len(ref.Fields)-1]] = value
	return nil
}

// Variables returns the vars in lookup order.
func (f *VarFlags) Variables() vars.Variables {
	multi := vars.Multi{}
	if f.flags != nil {
		multi = append(multi, f.flags)
	}
	for i := len(f.files) - 1; i >= 0; i-- {
		multi = append(multi, f.files[i])
	}
	return multi
}
