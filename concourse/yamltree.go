package concourse

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// node is a YAML value after anchors, aliases and merge keys are resolved, with scalars
// typed the way Concourse's YAML library (go-yaml v2, YAML 1.1) types them, and the
// position of everything kept for error messages.
type node struct {
	kind   nodeKind
	pos    Pos
	scalar any // nil, bool, int64, uint64, float64 or string
	// raw is the text of a plain scalar that was typed as a boolean or a number. A field
	// of type string takes the text instead, as Concourse's YAML decoding does.
	raw     string
	entries []entry
	items   []*node
}

type entry struct {
	key    string
	keyPos Pos
	value  *node
}

type nodeKind uint8

const (
	scalarNode nodeKind = iota
	mapNode
	listNode
)

// jsonKind is the kind of the node's JSON form, in encoding/json's words: number, bool,
// string, array, object or null.
func (n *node) jsonKind() string {
	switch n.kind {
	case mapNode:
		return "object"
	case listNode:
		return "array"
	}
	switch n.scalar.(type) {
	case nil:
		return "null"
	case bool:
		return "bool"
	case string:
		return "string"
	}
	return "number"
}

// get returns the value of key in a map node, or nil.
func (n *node) get(key string) *node {
	if n == nil || n.kind != mapNode {
		return nil
	}
	for i := range n.entries {
		if n.entries[i].key == key {
			return n.entries[i].value
		}
	}
	return nil
}

// The loader's limits. A config that goes over one fails at once, at the position where it
// did, instead of taking minutes and gigabytes further on: an alias repeats its anchor's
// whole value each time it is used, so that a 1 MB file can stand for gigabytes, and a step
// costs time to decode in proportion to how deep it is nested.
//
// They are far above real pipelines: the largest of the 146 in the corpus is 178 KB and
// holds 7,500 values and 122 KB of text once its aliases are expanded; the deepest nests
// 13 levels.
const (
	// maxFileBytes bounds the file, before it is parsed. The YAML library's own tree of a
	// file of tiny values (`[0,0,0,...]`) takes 150 times the file's size before the limits
	// below can be checked: at this size, 2 seconds and 600 MB.
	maxFileBytes = 4 << 20
	// maxExpandedBytes bounds the text of every key and scalar once aliases are expanded,
	// which the decoding then copies around. The text of a file without aliases is smaller
	// than the file, so that only aliases take a document over it.
	maxExpandedBytes = 4 << 20
	// maxNodes bounds the values once aliases are expanded ("billion laughs" with small
	// values). A real pipeline has one value in about 24 bytes.
	maxNodes = 500_000
	// maxDepth bounds how deep maps and lists nest: the document's map is level 1, a step of
	// a job's plan is at level 5, and each do or in_parallel around it adds 2. Steps are
	// decoded level by level, so that at worst, 4 MB of text under 29 nested steps, the
	// decoding takes 3 seconds and 250 MB.
	maxDepth = 64
)

type treeBuilder struct {
	file  string
	diags Diagnostics
	// nodes, bytes and depth are measured against the limits, aliases expanded: the values
	// and the text of keys and scalars built so far, and how deep the value being built is.
	nodes, bytes, depth int
	// expanding guards against an alias that refers to itself.
	expanding map[*yaml.Node]bool
	// outerAlias is the outermost alias being expanded. A limit crossed inside it is
	// reported there, where the document uses it, rather than inside its anchor.
	outerAlias *yaml.Node
	// facts are what the strings built so far hold.
	facts treeFacts
	// lastKeyWins reads a key given twice as its last value (parseTaskTree).
	lastKeyWins bool
	// over is set once a limit is crossed; the rest of the document is then skipped.
	over     bool
	reported map[reportKey]bool
}

type reportKey struct {
	pos Pos
	msg string
}

var bom = []byte("\xef\xbb\xbf")

// parseTree parses one YAML document into a node tree. Problems that make the document
// unusable are returned as diagnostics (duplicate keys among them, as fly reports them).
func parseTree(file string, data []byte) (*node, Diagnostics) {
	n, _, diags := parseTreeFacts(file, data)
	return n, diags
}

// treeFacts say what a tree's strings hold, for the walks that look for it to skip a
// tree without any.
type treeFacts struct {
	// templates: a string value holds "{{" (checkOldTemplates); vars: a string value or
	// a key holds "((" (interpolate).
	templates, vars bool
}

// parseTaskTree is parseTree for a task file, which Concourse reads with go-yaml v2's
// lenient decoding (atc.NewTaskConfig): a key given twice in a map is no error, its last
// value wins.
func parseTaskTree(file string, data []byte) (*node, Diagnostics) {
	n, _, diags := parseTreeWith(file, data, true)
	return n, diags
}

// parseTreeFacts is parseTree, with what the tree's strings hold.
func parseTreeFacts(file string, data []byte) (*node, treeFacts, Diagnostics) {
	return parseTreeWith(file, data, false)
}

// parseTreeWith is parseTreeFacts, where lastKeyWins says whether a key given twice is
// read as its last value, not refused.
func parseTreeWith(file string, data []byte, lastKeyWins bool) (*node, treeFacts, Diagnostics) {
	size := len(data)
	data = bytes.TrimPrefix(data, bom)
	if size > maxFileBytes {
		return nil, treeFacts{}, Diagnostics{{File: file, Pos: posAt(data, maxFileBytes-(size-len(data))),
			Message: fmt.Sprintf("the file is %s, over the loader's limit of %s for a file (reached here)", byteSize(size), byteSize(maxFileBytes))}}
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if err.Error() == "EOF" {
			return &node{kind: scalarNode, pos: Pos{Line: 1, Col: 1}}, treeFacts{}, nil
		}
		return nil, treeFacts{}, Diagnostics{yamlErrorDiagnostic(file, data, err)}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, treeFacts{}, Diagnostics{{File: file, Pos: Pos{Line: extra.Line, Col: extra.Column},
			Message: "more than one YAML document: a pipeline is a single document (remove the '---' separator)"}}
	}
	b := &treeBuilder{file: file, expanding: map[*yaml.Node]bool{}, lastKeyWins: lastKeyWins}
	root := &doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return &node{kind: scalarNode, pos: Pos{Line: 1, Col: 1}}, treeFacts{}, nil
		}
		root = root.Content[0]
	}
	n := b.build(root)
	if len(b.diags.Errors()) > 0 {
		return nil, treeFacts{}, b.diags
	}
	return n, b.facts, b.diags
}

// posAt is the position of the byte at offset in data; columns count characters, as the
// YAML parser's do.
func posAt(data []byte, offset int) Pos {
	offset = min(offset, len(data))
	start := bytes.LastIndexByte(data[:offset], '\n') + 1
	return Pos{Line: bytes.Count(data[:start], []byte("\n")) + 1, Col: utf8.RuneCount(data[start:offset]) + 1}
}

// byteSize renders a size the way the limits are written: 8 MiB, 50.3 MiB, 900 KiB.
func byteSize(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// errorf reports a problem once: an anchor's value is built again for each of its aliases.
func (b *treeBuilder) errorf(pos Pos, format string, args ...any) {
	key := reportKey{pos, fmt.Sprintf(format, args...)}
	if b.reported[key] {
		return
	}
	if b.reported == nil {
		b.reported = map[reportKey]bool{}
	}
	b.reported[key] = true
	b.diags = append(b.diags, Diagnostic{File: b.file, Pos: pos, Message: key.msg})
}

func posOf(y *yaml.Node) Pos { return Pos{Line: y.Line, Col: y.Column} }

// overLimit reports the first limit the document goes over, at y or at the alias that
// brought y in, and stops the build.
func (b *treeBuilder) overLimit(y *yaml.Node, format string, args ...any) {
	if b.over {
		return
	}
	limit := fmt.Sprintf(format, args...)
	if a := b.outerAlias; a != nil {
		b.errorf(posOf(a), "expanding alias *%s here takes the document over the loader's limit of %s once aliases are expanded (an alias repeats its anchor's whole value each time it is used)", a.Value, limit)
	} else {
		b.errorf(posOf(y), "the document goes over the loader's limit of %s here", limit)
	}
	b.over = true
}

// addBytes counts n bytes of text at y against maxExpandedBytes, and reports whether the
// build may go on.
func (b *treeBuilder) addBytes(y *yaml.Node, n int) bool {
	if b.over {
		return false
	}
	if b.bytes += n; b.bytes > maxExpandedBytes {
		b.overLimit(y, "%s of text", byteSize(maxExpandedBytes))
	}
	return !b.over
}

func (b *treeBuilder) build(y *yaml.Node) *node {
	if b.over {
		return &node{kind: scalarNode, pos: posOf(y)}
	}
	if b.nodes++; b.nodes > maxNodes {
		b.overLimit(y, "%d values", maxNodes)
		return &node{kind: scalarNode, pos: posOf(y)}
	}
	switch y.Kind {
	case yaml.AliasNode:
		return b.buildAlias(y)
	case yaml.MappingNode, yaml.SequenceNode:
		if b.depth >= maxDepth {
			b.overLimit(y, "%d levels of nested maps and lists", maxDepth)
			return &node{kind: scalarNode, pos: posOf(y)}
		}
		b.depth++
		n := b.buildCollection(y)
		b.depth--
		return n
	case yaml.ScalarNode:
		if !b.addBytes(y, len(y.Value)) {
			return &node{kind: scalarNode, pos: posOf(y)}
		}
		v, err := resolveScalar(y)
		if err != nil {
			b.errorf(posOf(y), "%v", err)
		}
		n := &node{kind: scalarNode, pos: posOf(y), scalar: v}
		switch v := v.(type) {
		case bool, int64, uint64, float64:
			n.raw = y.Value
		case string:
			b.facts.templates = b.facts.templates || strings.Contains(v, "{{")
			b.facts.vars = b.facts.vars || strings.Contains(v, "((")
		}
		return n
	case yaml.DocumentNode:
		if len(y.Content) == 0 {
			return &node{kind: scalarNode, pos: posOf(y)}
		}
		return b.build(y.Content[0])
	}
	return &node{kind: scalarNode, pos: posOf(y)}
}

// buildAlias builds a copy of the value an alias refers to.
func (b *treeBuilder) buildAlias(y *yaml.Node) *node {
	if y.Alias == nil || b.expanding[y.Alias] {
		b.errorf(posOf(y), "alias *%s refers to itself", y.Value)
		return &node{kind: scalarNode, pos: posOf(y)}
	}
	if b.outerAlias == nil {
		b.outerAlias = y
		defer func() { b.outerAlias = nil }()
	}
	b.expanding[y.Alias] = true
	n := b.build(y.Alias)
	delete(b.expanding, y.Alias)
	return n
}

// buildCollection builds a map or a list.
func (b *treeBuilder) buildCollection(y *yaml.Node) *node {
	if y.Kind == yaml.SequenceNode {
		n := &node{kind: listNode, pos: posOf(y), items: make([]*node, 0, len(y.Content))}
		for _, c := range y.Content {
			n.items = append(n.items, b.build(c))
		}
		return n
	}
	if name, ok := oldStyleParam(y); ok {
		b.errorf(posOf(y), "old-style template {{%s}} is no longer supported: use ((%s)) and pass the value with -v, -y or -l", name, name)
		return &node{kind: scalarNode, pos: posOf(y)}
	}
	return b.buildMap(y)
}

func (b *treeBuilder) buildMap(y *yaml.Node) *node {
	n := &node{kind: mapNode, pos: posOf(y), entries: make([]entry, 0, len(y.Content)/2)}
	seen := make(map[string]int, len(y.Content)/2)
	var merged []entry
	for i := 0; i+1 < len(y.Content); i += 2 {
		k, v := y.Content[i], y.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
			if line, dup := seen["<<"]; dup {
				b.errorf(posOf(k), "duplicate key \"<<\": already defined at line %d (use one merge key with a list of aliases)", line)
				continue
			}
			seen["<<"] = k.Line
			merged = append(merged, b.mergeEntries(v)...)
			continue
		}
		key, ok := b.keyString(k)
		if !ok || !b.addBytes(k, len(key)) {
			continue
		}
		if line, dup := seen[key]; dup {
			if b.lastKeyWins {
				i := slices.IndexFunc(n.entries, func(e entry) bool { return e.key == key })
				n.entries[i] = entry{key: key, keyPos: posOf(k), value: b.build(v)}
				continue
			}
			b.errorf(posOf(k), "duplicate key %q: already defined at line %d", key, line)
			continue
		}
		seen[key] = k.Line
		b.facts.vars = b.facts.vars || strings.Contains(key, "((")
		n.entries = append(n.entries, entry{key: key, keyPos: posOf(k), value: b.build(v)})
	}
	// Keys written in the map win over merged ones; among merged maps the first wins.
	for _, e := range merged {
		if _, exists := seen[e.key]; exists {
			continue
		}
		seen[e.key] = e.keyPos.Line
		n.entries = append(n.entries, e)
	}
	return n
}

// oldStyleParam recognises `{{name}}`, Concourse's long-gone template syntax, which YAML
// reads as a flow map whose only key is a flow map: {{name: null}: null}.
func oldStyleParam(y *yaml.Node) (string, bool) {
	if y.Style&yaml.FlowStyle == 0 || len(y.Content) != 2 {
		return "", false
	}
	k, v := y.Content[0], y.Content[1]
	if k.Kind != yaml.MappingNode || k.Style&yaml.FlowStyle == 0 || len(k.Content) != 2 || v.Tag != "!!null" {
		return "", false
	}
	if k.Content[0].Kind != yaml.ScalarNode || k.Content[1].Tag != "!!null" {
		return "", false
	}
	return k.Content[0].Value, true
}

// mergeEntries returns the entries a merge key brings in: from one map, or from a list of
// maps where an earlier map wins over a later one.
func (b *treeBuilder) mergeEntries(v *yaml.Node) []entry {
	switch src := b.build(v); src.kind {
	case mapNode:
		return src.entries
	case listNode:
		var out []entry
		have := map[string]bool{}
		for _, item := range src.items {
			if item.kind != mapNode {
				b.errorf(item.pos, "a merge key (<<) takes a map or a list of maps")
				continue
			}
			for _, e := range item.entries {
				if !have[e.key] {
					have[e.key] = true
					out = append(out, e)
				}
			}
		}
		return out
	default:
		b.errorf(src.pos, "a merge key (<<) takes a map or a list of maps")
		return nil
	}
}

// keyString turns a key into the string JSON needs. Keys keep the text they were written
// with: go-yaml v2 would read a key `N` or `on` as a boolean and Concourse would see
// "false" or "true", which is never what the author meant.
func (b *treeBuilder) keyString(k *yaml.Node) (string, bool) {
	if k.Kind == yaml.AliasNode && k.Alias != nil {
		k = k.Alias
	}
	if k.Kind != yaml.ScalarNode {
		b.errorf(posOf(k), "a map key must be a scalar, not a %s", kindName(k.Kind))
		return "", false
	}
	if k.Style&yaml.TaggedStyle == 0 && yaml11Nulls[k.Value] && k.Style == 0 {
		return "null", true
	}
	return k.Value, true
}

func kindName(k yaml.Kind) string {
	switch k {
	case yaml.MappingNode:
		return "map"
	case yaml.SequenceNode:
		return "list"
	}
	return "value"
}

// scalarString renders a scalar the way it appears as a JSON map key.
func scalarString(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case uint64:
		return strconv.FormatUint(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	return fmt.Sprint(v)
}

var (
	yaml11Bools = map[string]bool{
		"y": true, "Y": true, "yes": true, "Yes": true, "YES": true, "on": true, "On": true, "ON": true,
		"true": true, "True": true, "TRUE": true,
		"n": false, "N": false, "no": false, "No": false, "NO": false, "off": false, "Off": false, "OFF": false,
		"false": false, "False": false, "FALSE": false,
	}
	yaml11Nulls  = map[string]bool{"": true, "~": true, "null": true, "Null": true, "NULL": true}
	yaml11Floats = map[string]float64{
		".inf": math.Inf(1), ".Inf": math.Inf(1), ".INF": math.Inf(1),
		"+.inf": math.Inf(1), "+.Inf": math.Inf(1), "+.INF": math.Inf(1),
		"-.inf": math.Inf(-1), "-.Inf": math.Inf(-1), "-.INF": math.Inf(-1),
		".nan": math.NaN(), ".NaN": math.NaN(), ".NAN": math.NaN(),
	}
	yaml11Float = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`)
	})
)

// resolveScalar types a scalar with YAML 1.1 rules, as go-yaml v2 does: unquoted yes/no/on/off
// are booleans, 0x1F and 0o17 and 017 are integers, quoted scalars are strings.
func resolveScalar(y *yaml.Node) (any, error) {
	s := y.Value
	if y.Style&yaml.TaggedStyle != 0 {
		switch y.Tag {
		case "!!str", "!!binary":
			return s, nil
		case "!!null":
			return nil, nil
		case "!!bool", "!!int", "!!float", "!!timestamp":
		default:
			return s, nil
		}
	} else if y.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return s, nil
	}
	if yaml11Nulls[s] {
		return nil, nil
	}
	if b, ok := yaml11Bools[s]; ok {
		return b, nil
	}
	if f, ok := yaml11Floats[s]; ok {
		return f, nil
	}
	if s == "" {
		return s, nil
	}
	if c := s[0]; c == '-' || c == '+' || c == '.' || (c >= '0' && c <= '9') {
		plain := strings.ReplaceAll(s, "_", "")
		if i, err := strconv.ParseInt(plain, 0, 64); err == nil {
			return i, nil
		}
		if u, err := strconv.ParseUint(plain, 0, 64); err == nil {
			return u, nil
		}
		if yaml11Float().MatchString(plain) {
			if f, err := strconv.ParseFloat(plain, 64); err == nil {
				return f, nil
			}
		}
	}
	if y.Tag == "!!int" || y.Tag == "!!float" {
		return nil, fmt.Errorf("cannot read %q as a number", s)
	}
	return s, nil
}

// appendJSON writes the tree as JSON, the form the typed decoders read.
func (n *node) appendJSON(buf []byte) ([]byte, error) {
	switch n.kind {
	case mapNode:
		buf = append(buf, '{')
		for i, e := range n.entries {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendJSONString(buf, e.key)
			buf = append(buf, ':')
			var err error
			if buf, err = e.value.appendJSON(buf); err != nil {
				return nil, err
			}
		}
		return append(buf, '}'), nil
	case listNode:
		buf = append(buf, '[')
		for i, item := range n.items {
			if i > 0 {
				buf = append(buf, ',')
			}
			var err error
			if buf, err = item.appendJSON(buf); err != nil {
				return nil, err
			}
		}
		return append(buf, ']'), nil
	}
	switch x := n.scalar.(type) {
	case nil:
		return append(buf, "null"...), nil
	case bool:
		return strconv.AppendBool(buf, x), nil
	case int64:
		return strconv.AppendInt(buf, x, 10), nil
	case uint64:
		return strconv.AppendUint(buf, x, 10), nil
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return nil, &unrepresentableError{n: n}
		}
		return appendJSONFloat(buf, x), nil
	case string:
		return appendJSONString(buf, x), nil
	}
	return nil, &unrepresentableError{n: n}
}

// unrepresentableError is a scalar that JSON, and so Concourse, cannot take: .inf or .nan.
type unrepresentableError struct{ n *node }

func (e *unrepresentableError) Error() string {
	return fmt.Sprintf("%v cannot be represented in JSON: quote it to make it a string", e.n.scalar)
}

// pathTo finds the path of target under n, which is at path; nil when it is not there.
func (n *node) pathTo(target *node, path Path) Path {
	if n == target {
		return path
	}
	for _, e := range n.entries {
		if p := e.value.pathTo(target, path.Child(Key(e.key))); p != nil {
			return p
		}
	}
	for i, item := range n.items {
		if p := item.pathTo(target, path.Child(Index(i))); p != nil {
			return p
		}
	}
	return nil
}

// appendJSONFloat formats like encoding/json does.
func appendJSONFloat(buf []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	buf = strconv.AppendFloat(buf, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(buf)
		if n >= 4 && buf[n-4] == 'e' && buf[n-3] == '-' && buf[n-2] == '0' {
			buf[n-2] = buf[n-1]
			buf = buf[:n-1]
		}
	}
	return buf
}

const hexDigits = "0123456789abcdef"

func appendJSONString(buf []byte, s string) []byte {
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			buf = append(buf, s[start:i]...)
			switch c {
			case '"', '\\':
				buf = append(buf, '\\', c)
			case '\n':
				buf = append(buf, '\\', 'n')
			case '\r':
				buf = append(buf, '\\', 'r')
			case '\t':
				buf = append(buf, '\\', 't')
			default:
				buf = append(buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			buf = append(buf, s[start:i]...)
			buf = append(buf, `\ufffd`...)
			i += size
			start = i
			continue
		}
		i += size
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"')
}

// fromValue turns a generic value (a var's value) into a node at pos.
func fromValue(v any, pos Pos) *node {
	switch x := v.(type) {
	case map[string]any:
		n := &node{kind: mapNode, pos: pos}
		for _, k := range slices.Sorted(maps.Keys(x)) {
			n.entries = append(n.entries, entry{key: k, keyPos: pos, value: fromValue(x[k], pos)})
		}
		return n
	case []any:
		n := &node{kind: listNode, pos: pos}
		for _, item := range x {
			n.items = append(n.items, fromValue(item, pos))
		}
		return n
	case int:
		return &node{kind: scalarNode, pos: pos, scalar: int64(x)}
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return &node{kind: scalarNode, pos: pos, scalar: int64(x)}
		}
		return &node{kind: scalarNode, pos: pos, scalar: x}
	case nil, bool, int64, uint64, string:
		return &node{kind: scalarNode, pos: pos, scalar: x}
	}
	return &node{kind: scalarNode, pos: pos, scalar: fmt.Sprint(v)}
}

// toValue turns a node into a generic value (for vars files).
func (n *node) toValue() any {
	switch n.kind {
	case mapNode:
		m := make(map[string]any, len(n.entries))
		for _, e := range n.entries {
			m[e.key] = e.value.toValue()
		}
		return m
	case listNode:
		l := make([]any, len(n.items))
		for i, item := range n.items {
			l[i] = item.toValue()
		}
		return l
	}
	return n.scalar
}

// at finds the node a path points at, and the position to report: the value's, or the
// key's when the path ends at a key whose value is missing. It stops at the deepest node
// that exists.
func (n *node) at(p Path) Pos {
	cur := n
	pos := n.pos
	for _, e := range p {
		switch {
		case cur == nil:
			return pos
		case e.isIndex:
			if cur.kind != listNode || e.index < 0 || e.index >= len(cur.items) {
				return pos
			}
			cur = cur.items[e.index]
			pos = cur.pos
		default:
			if cur.kind != mapNode {
				return pos
			}
			var next *node
			for i := range cur.entries {
				if cur.entries[i].key == e.key {
					next = cur.entries[i].value
					pos = cur.entries[i].keyPos
					break
				}
			}
			if next == nil {
				return pos
			}
			cur = next
		}
	}
	return pos
}
