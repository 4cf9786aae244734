package judge

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strconv"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
)

// Mutation is a file changed in one place, the way a user's edit goes wrong.
type Mutation struct {
	// Kind is what was done, Where the path of the node it was done to
	// (jobs[3].plan[1].get).
	Kind, Where string
	Data        []byte
}

func (m Mutation) String() string { return m.Kind + " " + m.Where }

// The kinds of mutation: a key removed, renamed or duplicated, a value of another type, a
// step nested in the one before it, a field moved a level up or down.
const (
	kindRemove    = "remove"
	kindRename    = "rename"
	kindDuplicate = "duplicate"
	kindRetype    = "retype"
	kindNest      = "nest"
	kindUp        = "up"
	kindDown      = "down"
)

var kinds = []string{kindRemove, kindRename, kindDuplicate, kindRetype, kindNest, kindUp, kindDown}

// site is a node of the document, as the indices into Content from the document node:
// the index of a map's key for a map entry, of the item for a list item.
type site []int

// Mutate returns up to n mutations of a YAML file, each a different text, the same ones
// for the same file and name: the kinds are taken in turn, and the places drawn from a
// generator seeded by the name. A file that YAML cannot read has none.
func Mutate(name string, data []byte, n int) []Mutation {
	var doc yamlv3.Node
	if err := yamlv3.Unmarshal(data, &doc); err != nil || len(doc.Content) == 0 {
		return nil
	}
	sites := map[string][]site{}
	collect(doc.Content[0], site{0}, false, sites)
	h := fnv.New64a()
	h.Write([]byte(name))
	rng := rand.New(rand.NewPCG(h.Sum64(), 47))
	seen := map[string]bool{string(data): true}
	var out []Mutation
	for i := 0; len(out) < n && i < 4*n; i++ {
		kind := kinds[i%len(kinds)]
		candidates := sites[kind]
		if len(candidates) == 0 {
			continue
		}
		at := candidates[rng.IntN(len(candidates))]
		var fresh yamlv3.Node
		if err := yamlv3.Unmarshal(data, &fresh); err != nil {
			return out
		}
		where := describe(&fresh, at)
		if !apply(&fresh, kind, at, rng) {
			continue
		}
		var buf bytes.Buffer
		enc := yamlv3.NewEncoder(&buf)
		enc.SetIndent(2)
		if err := enc.Encode(&fresh); err != nil || enc.Close() != nil {
			continue
		}
		if seen[buf.String()] {
			continue
		}
		seen[buf.String()] = true
		out = append(out, Mutation{Kind: kind, Where: where, Data: buf.Bytes()})
	}
	return out
}

// collect records, for each kind, the sites it can be applied to, in document order.
// inMap says whether n is the value of a map's entry, into which n's entries can move up.
func collect(n *yamlv3.Node, at site, inMap bool, sites map[string][]site) {
	child := func(i int) site { return append(append(site{}, at...), i) }
	switch n.Kind {
	case yamlv3.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			s := child(i)
			sites[kindRemove] = append(sites[kindRemove], s)
			sites[kindRename] = append(sites[kindRename], s)
			sites[kindDuplicate] = append(sites[kindDuplicate], s)
			sites[kindRetype] = append(sites[kindRetype], s)
			if inMap {
				sites[kindUp] = append(sites[kindUp], s)
			}
			for j := 1; j < len(n.Content); j += 2 {
				if j != i+1 && n.Content[j].Kind == yamlv3.MappingNode {
					sites[kindDown] = append(sites[kindDown], s)
					break
				}
			}
			collect(n.Content[i+1], s, true, sites)
		}
	case yamlv3.SequenceNode:
		for i, item := range n.Content {
			s := child(i)
			sites[kindRemove] = append(sites[kindRemove], s)
			sites[kindDuplicate] = append(sites[kindDuplicate], s)
			sites[kindRetype] = append(sites[kindRetype], s)
			if i > 0 && item.Kind == yamlv3.MappingNode && n.Content[i-1].Kind == yamlv3.MappingNode {
				sites[kindNest] = append(sites[kindNest], s)
			}
			collect(item, s, false, sites)
		}
	}
}

// resolve returns the container of a site and the site's index in it, with the
// container's own container and index (nil at the top).
func resolve(doc *yamlv3.Node, at site) (parent *yamlv3.Node, i int, grand *yamlv3.Node, gi int) {
	n := doc
	for k, idx := range at {
		if k == len(at)-1 {
			return n, idx, grand, gi
		}
		grand, gi = n, idx
		if n.Kind == yamlv3.MappingNode {
			n = n.Content[idx+1]
		} else {
			n = n.Content[idx]
		}
	}
	return nil, 0, nil, 0
}

// describe renders a site as a path: jobs[3].plan[1].get.
func describe(doc *yamlv3.Node, at site) string {
	var b strings.Builder
	n := doc
	for k, idx := range at {
		if k == 0 {
			n = n.Content[idx]
			continue
		}
		if n.Kind == yamlv3.MappingNode {
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(n.Content[idx].Value)
			n = n.Content[idx+1]
		} else {
			fmt.Fprintf(&b, "[%d]", idx)
			n = n.Content[idx]
		}
	}
	return b.String()
}

// apply makes the mutation of kind at a site. It reports whether it could.
func apply(doc *yamlv3.Node, kind string, at site, rng *rand.Rand) bool {
	parent, i, grand, gi := resolve(doc, at)
	isMap := parent.Kind == yamlv3.MappingNode
	width := 1
	if isMap {
		width = 2
	}
	switch kind {
	case kindRemove:
		parent.Content = append(parent.Content[:i:i], parent.Content[i+width:]...)
	case kindDuplicate:
		dup := append([]*yamlv3.Node{}, parent.Content[i:i+width]...)
		parent.Content = append(parent.Content[:i+width:i+width], append(dup, parent.Content[i+width:]...)...)
	case kindRename:
		// A key as a user types it: a merge key misspelt is a plain key, not one tagged
		// !!merge.
		key := *parent.Content[i]
		key.Value, key.Tag = typo(key.Value, rng), "!!str"
		parent.Content[i] = &key
	case kindRetype:
		at := i
		if isMap {
			at++
		}
		parent.Content[at] = retype(parent.Content[at], rng)
	case kindNest:
		// The item becomes a hook, the body of a try or a do of the item before it.
		prev, item := parent.Content[i-1], parent.Content[i]
		keys := []string{"on_success", "on_failure", "ensure", "try", "do"}
		key := keys[rng.IntN(len(keys))]
		value := item
		if key == "do" {
			value = &yamlv3.Node{Kind: yamlv3.SequenceNode, Tag: "!!seq", Content: []*yamlv3.Node{item}}
		}
		prev.Content = append(append([]*yamlv3.Node{}, prev.Content...), scalar("!!str", key), value)
		parent.Content = append(parent.Content[:i:i], parent.Content[i+1:]...)
	case kindUp:
		if grand == nil || grand.Kind != yamlv3.MappingNode {
			return false
		}
		entry := parent.Content[i : i+2 : i+2]
		parent.Content = append(parent.Content[:i:i], parent.Content[i+2:]...)
		grand.Content = append(grand.Content[:gi+2:gi+2], append(entry, grand.Content[gi+2:]...)...)
	case kindDown:
		var targets []*yamlv3.Node
		for j := 1; j < len(parent.Content); j += 2 {
			if j != i+1 && parent.Content[j].Kind == yamlv3.MappingNode {
				targets = append(targets, parent.Content[j])
			}
		}
		if len(targets) == 0 {
			return false
		}
		target := targets[rng.IntN(len(targets))]
		target.Content = append(append([]*yamlv3.Node{}, target.Content...), parent.Content[i:i+2]...)
		parent.Content = append(parent.Content[:i:i], parent.Content[i+2:]...)
	default:
		return false
	}
	return true
}

// typo misspells a key: a letter dropped, doubled or two swapped.
func typo(s string, rng *rand.Rand) string {
	if len(s) < 2 {
		return s + "x"
	}
	k := rng.IntN(len(s) - 1)
	switch rng.IntN(3) {
	case 0:
		return s[:k] + s[k+1:]
	case 1:
		return s[:k+1] + s[k:]
	default:
		return s[:k] + string(s[k+1]) + string(s[k]) + s[k+2:]
	}
}

// retype replaces a value with one of another type: a scalar with a number, a boolean, a
// string, a list or a map; a list or a map with a scalar.
func retype(n *yamlv3.Node, rng *rand.Rand) *yamlv3.Node {
	switch n.Kind {
	case yamlv3.MappingNode, yamlv3.SequenceNode, yamlv3.AliasNode:
		choices := []*yamlv3.Node{scalar("!!str", "text"), scalar("!!int", "7"), scalar("!!bool", "true")}
		return choices[rng.IntN(len(choices))]
	}
	var choices []*yamlv3.Node
	switch n.Tag {
	case "!!int", "!!float":
		choices = append(choices, scalar("!!str", "text"), scalar("!!bool", "true"))
	case "!!bool":
		choices = append(choices, scalar("!!str", "text"), scalar("!!int", "7"))
	case "!!null":
		choices = append(choices, scalar("!!str", "text"), scalar("!!int", "7"))
	default:
		choices = append(choices, scalar("!!int", strconv.Itoa(rng.IntN(100))), scalar("!!bool", "false"))
	}
	choices = append(choices,
		&yamlv3.Node{Kind: yamlv3.SequenceNode, Tag: "!!seq", Content: []*yamlv3.Node{n}},
		&yamlv3.Node{Kind: yamlv3.MappingNode, Tag: "!!map", Content: []*yamlv3.Node{scalar("!!str", "value"), n}})
	return choices[rng.IntN(len(choices))]
}

func scalar(tag, value string) *yamlv3.Node {
	return &yamlv3.Node{Kind: yamlv3.ScalarNode, Tag: tag, Value: value}
}
