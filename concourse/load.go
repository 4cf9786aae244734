package concourse

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/concourse-tekton/concourse-tekton/concourse/vars"
)

// Pipeline is a parsed pipeline config together with where everything in it came from.
type Pipeline struct {
	// File is the name the pipeline was read from, used in diagnostics.
	File   string
	Config Config
	// taskFile is set when the document is a task file, which Concourse decodes as one
	// value with a decoder of its own (see readsText).
	taskFile bool
	// Unresolved are the ((vars)) that the static vars did not give. They stay in the config
	// for run time, as `fly set-pipeline` leaves them.
	Unresolved []VarUse

	tree *node
	// spliced are the values static vars were interpolated into, for the diagnostics
	// about them (hideVarValues).
	spliced map[*node][]splice
}

// VarUse is a ((var)) left in a config, and where.
type VarUse struct {
	Ref  vars.Reference
	Pos  Pos
	Path Path
}

// Pos returns the position of the node at path (or of its deepest existing ancestor).
func (p *Pipeline) Pos(path Path) Pos {
	if p == nil || p.tree == nil {
		return Pos{}
	}
	return p.tree.at(path)
}

// Diagnostic makes a positioned diagnostic for path.
func (p *Pipeline) Diagnostic(sev Severity, path Path, format string, args ...any) Diagnostic {
	return Diagnostic{Severity: sev, File: p.File, Pos: p.Pos(path), Path: path, Message: fmt.Sprintf(format, args...)}
}

// fieldDiagnostic is a task config's FieldError, under the config at base, as a
// diagnostic of its rule.
func (p *Pipeline) fieldDiagnostic(sev Severity, base Path, fe FieldError) Diagnostic {
	d := p.Diagnostic(sev, base.Child(fe.Field...), "%s", fe.Message)
	d.Rule = fe.Rule
	return d
}

// Document is the pipeline as read, once its static vars are interpolated and its unknown
// top-level keys dropped, as plain values (maps, lists, scalars) that encode as JSON:
// what Concourse's set_pipeline step unmarshals into its config. It is the pipeline only
// when ParsePipeline reported no error.
func (p *Pipeline) Document() any {
	if p == nil || p.tree == nil {
		return nil
	}
	return p.tree.toValue()
}

// oldStyleTemplate matches a {{param}} of fly's old templates. It, and the other regexps
// and field tables of this package, are made at their first use, not at init: every
// command of the binary would pay for them at start-up.
var oldStyleTemplate = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\{\{[-\w\pL]+\}\}`) })

// ParsePipeline parses a pipeline the way `fly set-pipeline` does: the YAML is read with its
// positions (a UTF-8 BOM is accepted, anchors and merge keys work, duplicate keys are an
// error), the static vars are interpolated (vars they do not give stay for run time), unknown
// top-level keys are dropped with a warning, unknown keys on resources, resource types,
// groups and jobs are errors. It then validates the config with Concourse's rules.
//
// A file over 4 MiB, one that aliases expand past 4 MiB of text or 500,000 values, or one
// that nests maps and lists more than 64 levels deep is refused at the place it went over
// the limit, before it can take much time or memory.
//
// The returned diagnostics hold every problem found, errors and warnings; the pipeline is nil
// when the YAML could not be read at all.
func ParsePipeline(file string, data []byte, static vars.Variables) (*Pipeline, Diagnostics) {
	p, diags, decoded := decodePipeline(file, data, static)
	if decoded {
		// Unknown keys do not stop validation: the rest of the config decoded, and
		// reporting every problem at once saves round trips.
		diags = append(diags, p.Validate()...)
	}
	if p != nil {
		p.hideVarValues(diags)
	}
	diags.sort()
	return p, diags
}

// decodePipeline reads the document into p.Config. decoded reports whether every value
// decoded (unknown keys aside), so that validation can run.
func decodePipeline(file string, data []byte, static vars.Variables) (p *Pipeline, diags Diagnostics, decoded bool) {
	tree, facts, diags := parseTreeFacts(file, data)
	if tree == nil {
		return nil, diags, false
	}
	p = &Pipeline{File: file, tree: tree}
	if tree.kind != mapNode {
		if tree.kind == scalarNode && tree.scalar == nil {
			return p, append(diags, p.Diagnostic(SeverityError, nil, "the pipeline is empty")), false
		}
		return p, append(diags, p.Diagnostic(SeverityError, nil, "a pipeline must be a map with jobs, resources and so on")), false
	}
	// The walks look at strings with "{{" and "((" alone: a tree without any is skipped.
	if facts.templates {
		diags = append(diags, p.checkOldTemplates(tree, nil)...)
		if len(diags.Errors()) > 0 {
			return p, diags, false
		}
	}
	if facts.vars {
		if static == nil {
			static = vars.StaticVariables{}
		}
		diags = append(diags, p.interpolate(tree, nil, static)...)
		if len(diags.Errors()) > 0 {
			return p, diags, false
		}
	}

	kept := tree.entries[:0:0]
	for _, e := range tree.entries {
		if !topLevelKeys()[e.key] {
			diags = append(diags, Diagnostic{Severity: SeverityWarning, File: file, Pos: e.keyPos, Path: Path{Key(e.key)},
				Message: fmt.Sprintf("unknown top-level key %q is ignored (Concourse drops it; it is fine for YAML anchors)", e.key)})
			continue
		}
		kept = append(kept, e)
	}
	tree.entries = kept
	unknown, failed := p.decode()
	return p, append(append(diags, unknown...), failed...), len(failed) == 0
}

// checkOldTemplates refuses Concourse's long-gone {{param}} syntax, which would otherwise
// pass through as a literal string and fail much later.
//
// It and interpolate visit every node: they extend path in place (a child's path shares
// its parent's array, siblings overwrite each other's last element) and copy it only into
// what they report (namedPath), so that a walk allocates per level, not per node.
func (p *Pipeline) checkOldTemplates(n *node, path Path) Diagnostics {
	var diags Diagnostics
	switch n.kind {
	case mapNode:
		for _, e := range n.entries {
			diags = append(diags, p.checkOldTemplates(e.value, append(path, Key(e.key)))...)
		}
	case listNode:
		for i, item := range n.items {
			diags = append(diags, p.checkOldTemplates(item, append(path, Index(i)))...)
		}
	default:
		if s, ok := n.scalar.(string); ok && strings.Contains(s, "{{") {
			if m := oldStyleTemplate().FindString(s); m != "" {
				name := strings.Trim(m, "{}")
				diags = append(diags, Diagnostic{File: p.File, Pos: n.pos, Path: p.namedPath(path),
					Message: fmt.Sprintf("old-style template %s is no longer supported: use ((%s)) and pass the value with -v, -y or -l", m, name)})
			}
		}
	}
	return diags
}

// interpolate applies the static vars to every string in the tree, map keys included.
// Whole-string vars keep their type.
func (p *Pipeline) interpolate(n *node, path Path, static vars.Variables) Diagnostics {
	var diags Diagnostics
	switch n.kind {
	case mapNode:
		for i := range n.entries {
			e := &n.entries[i]
			if strings.Contains(e.key, "((") {
				v, missing, err := vars.InterpolateString(e.key, static)
				if err != nil {
					diags = append(diags, Diagnostic{File: p.File, Pos: e.keyPos, Path: p.namedPath(path.Child(Key(e.key))), Message: err.Error()})
					continue
				}
				p.noteMissing(missing, e.keyPos, path.Child(Key(e.key)))
				p.noteSplice(e.value, e.key, v, static)
				e.key = scalarString(v)
			}
			diags = append(diags, p.interpolate(e.value, append(path, Key(e.key)), static)...)
		}
	case listNode:
		for i, item := range n.items {
			diags = append(diags, p.interpolate(item, append(path, Index(i)), static)...)
		}
	default:
		s, ok := n.scalar.(string)
		if !ok || !strings.Contains(s, "((") {
			return nil
		}
		v, missing, err := vars.InterpolateString(s, static)
		if err != nil {
			return Diagnostics{{File: p.File, Pos: n.pos, Path: p.namedPath(path), Message: err.Error()}}
		}
		p.noteMissing(missing, n.pos, path)
		p.noteSplice(n, s, v, static)
		if str, isString := v.(string); isString {
			n.scalar = str
		} else {
			*n = *fromValue(v, n.pos)
		}
	}
	return diags
}

func (p *Pipeline) noteMissing(missing []vars.Reference, pos Pos, path Path) {
	for _, ref := range missing {
		p.Unresolved = append(p.Unresolved, VarUse{Ref: ref, Pos: pos, Path: p.namedPath(path)})
	}
}

// decode fills p.Config from the tree, one element at a time, so that one bad resource or
// job does not hide the problems of the others. It returns the unknown keys and the values
// that failed to decode apart.
func (p *Pipeline) decode() (unknown, failed Diagnostics) {
	for _, e := range p.tree.entries {
		path := Path{Key(e.key)}
		var u, f Diagnostics
		switch e.key {
		case "groups":
			u, f = decodeList(p, e.value, path, groupFields(), &p.Config.Groups)
		case "var_sources":
			u, f = decodeList(p, e.value, path, varSourceFields(), &p.Config.VarSources)
		case "resources":
			u, f = decodeList(p, e.value, path, resourceFields(), &p.Config.Resources)
		case "resource_types":
			u, f = decodeList(p, e.value, path, resourceTypeFields(), &p.Config.ResourceTypes)
		case "prototypes":
			u, f = decodeList(p, e.value, path, resourceTypeFields(), &p.Config.Prototypes)
		case "jobs":
			u, f = decodeList(p, e.value, path, jobFields(), &p.Config.Jobs)
			for i, job := range listItems(e.value) {
				if r := job.get("build_log_retention"); r != nil {
					u = append(u, p.strictKeys(r, Path{Key("jobs"), Named(i, nameOf(job)), Key("build_log_retention")}, buildLogRetentionFields())...)
				}
			}
		case "display":
			u = p.strictKeys(e.value, path, displayFields())
			f = p.decodeValue(e.value, path, &p.Config.Display)
		case "user_data":
			p.Config.UserData = e.value.toValue()
		}
		unknown, failed = append(unknown, u...), append(failed, f...)
	}
	return unknown, failed
}

var (
	groupFields             = fieldsOf[GroupConfig]()
	varSourceFields         = fieldsOf[VarSourceConfig]()
	displayFields           = fieldsOf[DisplayConfig]()
	buildLogRetentionFields = fieldsOf[BuildLogRetention]()
)

func listItems(n *node) []*node {
	if n == nil || n.kind != listNode {
		return nil
	}
	return n.items
}

// nameOf is the `name` of a list element, for paths like jobs[unit].
func nameOf(n *node) string {
	if v := n.get("name"); v != nil {
		if s, ok := v.scalar.(string); ok {
			return s
		}
	}
	return ""
}

// decodeList decodes a list of T element by element, reporting keys not in known (Concourse
// decodes these strictly) apart from values that fail to decode.
func decodeList[T any](p *Pipeline, n *node, path Path, known map[string]bool, out *[]T) (unknown, failed Diagnostics) {
	if n.kind == scalarNode && n.scalar == nil {
		return nil, nil
	}
	if n.kind != listNode {
		return nil, Diagnostics{p.Diagnostic(SeverityError, path, "must be a list")}
	}
	items := make([]T, len(n.items))
	for i, item := range n.items {
		ipath := path.Child(Named(i, nameOf(item)))
		if item.kind != mapNode {
			failed = append(failed, p.Diagnostic(SeverityError, ipath, "must be a map"))
			continue
		}
		unknown = append(unknown, p.strictKeys(item, ipath, known)...)
		failed = append(failed, p.decodeValue(item, ipath, &items[i])...)
	}
	*out = items
	return unknown, failed
}

// strictKeys reports the keys of a map that are not in known.
func (p *Pipeline) strictKeys(n *node, path Path, known map[string]bool) Diagnostics {
	if n.kind != mapNode {
		return nil
	}
	var diags Diagnostics
	for _, e := range n.entries {
		if !known[e.key] {
			diags = append(diags, Diagnostic{File: p.File, Pos: e.keyPos, Path: path.Child(Key(e.key)),
				Message: fmt.Sprintf("unknown field %q%s", e.key, suggest(e.key, known))})
		}
	}
	return diags
}

// decodeValue decodes a node into out through its JSON form, reporting a decode error at
// the position of the field it concerns. A value the direct decoder reads exactly as the
// JSON form would be read (fastdecode.go) is read by it instead, without the JSON.
//
// A boolean or a number written where a string is wanted (a resource's `version: {v: 1}`,
// `serial_groups: [1]`) is read as the text it was written as, the way Concourse's YAML
// decoding does it, but not inside a step or a task file, which Concourse decodes strictly
// (readsText): `task: n` is a boolean there.
//
// The JSON decoder stops at the first error of a custom decoder (a job's plan, a step), and
// reports only the first of its type errors. So that a job's problems are all reported at
// once, each value that fails is taken out of the tree (see neutralize) and the node
// decoded again, until it decodes, or another error comes from what was taken out.
func (p *Pipeline) decodeValue(n *node, path Path, out any) Diagnostics {
	reflect.ValueOf(out).Elem().SetZero()
	if decodeDirect(n, out) {
		return nil
	}
	return p.decodeJSON(n, path, out)
}

// decodeJSON is decodeValue through the JSON form, whatever the value.
func (p *Pipeline) decodeJSON(n *node, path Path, out any) Diagnostics {
	var diags Diagnostics
	var taken []Path
	for attempt := 0; ; attempt++ {
		var d Diagnostic
		var at Path
		buf, err := n.appendJSON(nil)
		if ue := (*unrepresentableError)(nil); errors.As(err, &ue) {
			at = p.namedPath(n.pathTo(ue.n, path))
			d = p.Diagnostic(SeverityError, at, "%v", err)
		} else {
			// Each attempt decodes afresh: the JSON decoder merges into what is there.
			reflect.ValueOf(out).Elem().SetZero()
			err = json.Unmarshal(buf, out)
			if err == nil {
				return diags
			}
			if attempt < maxStringRetries && p.textForString(path, err) {
				continue
			}
			d, at = p.decodeError(path, err)
		}
		for _, t := range taken {
			if at.within(t) || t.within(at) {
				// An error at or around a value already taken out comes from taking it
				// out; the first error there is the one to fix.
				return diags
			}
		}
		if diags = append(diags, d); len(diags) == maxDecodeErrors {
			return append(diags, p.Diagnostic(SeverityError, path, "stopped after %d errors here: fix these first", maxDecodeErrors))
		}
		if len(at) <= len(path) || !p.neutralize(at) {
			return diags // the value as a whole failed: nothing else to learn from it
		}
		taken = append(taken, at)
	}
}

const (
	// maxStringRetries bounds the decode retries of decodeValue that read a scalar as text:
	// each retry re-reads the whole value, and no real config has more than a handful of
	// such scalars in one job.
	maxStringRetries = 64
	// maxDecodeErrors bounds the errors decodeValue reports for one value, and so the times
	// it decodes it again.
	maxDecodeErrors = 16
)

// within reports whether p is q or a path under q.
func (p Path) within(q Path) bool {
	if len(p) < len(q) {
		return false
	}
	for i, e := range q {
		if p[i].isIndex != e.isIndex || p[i].index != e.index || p[i].key != e.key {
			return false
		}
	}
	return true
}

// neutralize replaces the value at path with one that decodes without error: a step with
// an empty `do` for a step (which null is not), null for anything else. It reports whether
// there was a value to replace. The tree keeps the positions, so that later errors are
// still reported where they are; the config is not validated once a value failed.
func (p *Pipeline) neutralize(path Path) bool {
	n := p.nodeAt(path)
	if n == nil {
		return false
	}
	if isStepPath(path) {
		*n = node{kind: mapNode, pos: n.pos, entries: []entry{{key: "do", keyPos: n.pos, value: &node{kind: listNode, pos: n.pos}}}}
		return true
	}
	*n = node{kind: scalarNode, pos: n.pos}
	return true
}

// isStepPath reports whether path is a step's: an element of a plan, a do or an
// in_parallel, or the value of a hook or a try.
func isStepPath(path Path) bool {
	if len(path) < 3 || path[0].key != "jobs" {
		return false
	}
	last, parent := path[len(path)-1], path[len(path)-2]
	if !last.isIndex {
		return hookKeys[last.key] || last.key == "try"
	}
	switch parent.key {
	case "plan", "do", "in_parallel", "aggregate":
		return true
	case "steps":
		gp := path[len(path)-3]
		return gp.key == "in_parallel" || gp.key == "aggregate"
	}
	return false
}

// hookKeys are the keys of the hooks of a step or a job.
var hookKeys = map[string]bool{"on_success": true, "on_failure": true, "on_abort": true, "on_error": true, "ensure": true}

// textForString turns the scalar a type mismatch points at back into its text, when the
// field wants a string and the scalar was typed from plain text. It reports whether it did.
func (p *Pipeline) textForString(path Path, err error) bool {
	err = unwrapJSONError(err)
	var pe *pathError
	var tm *typeMismatch
	if !errors.As(err, &pe) || !errors.As(err, &tm) || tm.target.Kind() != reflect.String {
		return false
	}
	at := path.Child(pe.path...)
	if !p.readsText(at) {
		return false
	}
	n := p.nodeAt(at)
	if n == nil {
		return false
	}
	// encoding/json names the list or the map for a value of one: the first value of
	// the kind it names is the one.
	var values []*node
	switch n.kind {
	case scalarNode:
		values = []*node{n}
	case listNode:
		values = n.items
	case mapNode:
		for _, e := range n.entries {
			values = append(values, e.value)
		}
	}
	for _, v := range values {
		if v.kind == scalarNode && v.raw != "" && strings.HasPrefix(tm.value, v.jsonKind()) {
			v.scalar, v.raw = v.raw, ""
			return true
		}
	}
	return false
}

// readsText reports whether a number or a boolean at path, where a string is wanted, is
// read as its text. Concourse's YAML decoding (sigs.k8s.io/yaml) does so following the Go
// types of the config down to the first value whose type decodes itself: a step (a job's
// plan and hooks), a task config (a task file), worker tags. Such a decoder is handed JSON,
// where the number stays a number, and refuses it.
func (p *Pipeline) readsText(path Path) bool {
	if p.taskFile {
		return false
	}
	if len(path) < 3 || !path[1].isIndex {
		return true
	}
	switch path[0].key {
	case "jobs":
		return !hookKeys[path[2].key] && path[2].key != "plan"
	case "resources", "resource_types", "prototypes":
		return path[2].key != "tags"
	}
	return true
}

// decodeError makes the diagnostic for a decode error of the value at path, and returns
// the path of the value that failed.
func (p *Pipeline) decodeError(path Path, err error) (Diagnostic, Path) {
	err = unwrapJSONError(err)
	var pe *pathError
	if errors.As(err, &pe) {
		path, err = p.namedPath(path.Child(pe.path...)), pe.err
	}
	failed := path
	var se *stepError
	if errors.As(err, &se) && se.typo != "" {
		failed = path[:len(path)-1] // reported at the typo, a key of the step that failed
	}
	var ive *invalidValueError
	if errors.As(err, &ive) {
		if sub := p.findString(path, ive.value); sub != nil {
			path, failed = sub, sub
		}
	}
	var tm *typeMismatch
	if errors.As(err, &tm) {
		// encoding/json names a list for an item of the wrong type: the item is the place.
		if n := p.nodeAt(path); n != nil && n.kind == listNode && tm.target.Kind() != reflect.Slice {
			for i, item := range n.items {
				if strings.HasPrefix(tm.value, item.jsonKind()) {
					path = path.Child(Index(i))
					failed = path
					break
				}
			}
		}
		if n := p.nodeAt(path); n != nil && n.raw != "" && tm.target.Kind() == reflect.String {
			return p.Diagnostic(SeverityError, path, "%v: quote it (%q) to make it one", err, n.raw), failed
		}
	}
	if n := p.nodeAt(path); n != nil {
		if s, ok := n.scalar.(string); ok {
			if len(vars.Names(s)) > 0 {
				return p.Diagnostic(SeverityError, path, "%s is not given, and this field needs its value when the pipeline is set (it cannot wait for run time): pass it with -v, -y or -l", s), failed
			}
			var ufe *unknownFieldError
			if ive == nil && se == nil && !errors.As(err, &ufe) {
				return p.Diagnostic(SeverityError, path, "%v (got %q)", err, s), failed
			}
		}
	}
	return p.Diagnostic(SeverityError, path, "%v", err), failed
}

// findString finds the path of a string scalar with value s under path, depth first.
func (p *Pipeline) findString(path Path, s string) Path {
	var find func(n *node, at Path) Path
	find = func(n *node, at Path) Path {
		switch n.kind {
		case mapNode:
			for _, e := range n.entries {
				if r := find(e.value, at.Child(Key(e.key))); r != nil {
					return r
				}
			}
		case listNode:
			for i, item := range n.items {
				if r := find(item, at.Child(Index(i))); r != nil {
					return r
				}
			}
		default:
			if v, ok := n.scalar.(string); ok && v == s {
				return at
			}
		}
		return nil
	}
	if n := p.nodeAt(path); n != nil {
		return p.namedPath(find(n, path))
	}
	return nil
}

// namedPath fills in the names of named list elements (jobs[unit]) along a path.
func (p *Pipeline) namedPath(path Path) Path {
	out := make(Path, len(path))
	cur := p.tree
	for i, e := range path {
		out[i] = e
		if cur == nil {
			continue
		}
		if e.isIndex {
			if cur.kind == listNode && e.index >= 0 && e.index < len(cur.items) {
				cur = cur.items[e.index]
				if e.name == "" {
					if name := nameOf(cur); name != "" && i > 0 && !path[i-1].isIndex && namedLists[path[i-1].key] {
						out[i] = Named(e.index, name)
					}
				}
				continue
			}
			cur = nil
			continue
		}
		cur = cur.get(e.key)
	}
	return out
}

// namedLists are the lists whose elements are known by name in paths.
var namedLists = map[string]bool{"jobs": true, "resources": true, "resource_types": true, "prototypes": true, "groups": true, "var_sources": true}

// suggest offers the closest known key for a typo.
func suggest(key string, known map[string]bool) string {
	if best := closest(key, known); best != "" {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return ""
}

// closest is the known key nearest to key, if one is near enough to be a typo of it.
func closest(key string, known map[string]bool) string {
	best, bestDist := "", 3
	for _, k := range slices.Sorted(maps.Keys(known)) {
		if d := editDistance(key, k); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// ParseTaskConfig parses a task file (YAML or JSON) and validates it. Errors carry the
// position in the file. Task files are not interpolated here: Concourse resolves their vars
// when the task runs.
func ParseTaskConfig(data []byte) (TaskConfig, error) {
	cfg, diags := LoadTaskConfig("", data, TaskFileOptions{})
	return cfg, diags.Err()
}

// TaskFileOptions say what the reader of a task file knows besides the file.
type TaskFileOptions struct {
	// Vars, when not nil, are filled in first, as fly execute fills them in: every
	// ((var)) they have is replaced (a whole-string var keeps its type), and the others
	// are left for run time.
	Vars vars.Variables
	// ImageGiven says the task's image comes from elsewhere (its step's `image:`, fly
	// execute's --image): a file that names none is not warned of.
	ImageGiven bool
}

// LoadTaskConfig parses and validates the task file named file, as ParseTaskConfig. Its
// diagnostics are the file's errors and warnings, each at its position in the file (as
// ParsePipeline's are in a pipeline); the config is valid when they hold no error.
func LoadTaskConfig(file string, data []byte, opts TaskFileOptions) (TaskConfig, Diagnostics) {
	tree, diags := parseTaskTree(file, data)
	if tree == nil {
		return TaskConfig{}, diags
	}
	p := &Pipeline{File: file, tree: tree, taskFile: true}
	if tree.kind != mapNode {
		return TaskConfig{}, Diagnostics{p.Diagnostic(SeverityError, nil, "a task config must be a map with platform, run and so on")}
	}
	if opts.Vars != nil {
		if idiags := p.interpolate(tree, nil, opts.Vars); idiags.Err() != nil {
			return TaskConfig{}, idiags.Errors()
		}
	}
	var cfg TaskConfig
	diags = append(diags, p.decodeValue(tree, nil, &cfg)...)
	if diags.Err() != nil {
		p.hideVarValues(diags)
		return TaskConfig{}, diags
	}
	for _, fe := range cfg.validateFile() {
		diags = append(diags, p.fieldDiagnostic(SeverityError, nil, fe))
	}
	for _, fe := range cfg.warnings() {
		diags = append(diags, p.fieldDiagnostic(SeverityWarning, nil, fe))
	}
	if !opts.ImageGiven && !cfg.namesImage() {
		d := p.Diagnostic(SeverityWarning, nil, noImage, "the task config", "give it an image_resource (or a rootfs_uri), or its step an image")
		d.Rule = noImage
		diags = append(diags, d)
	}
	p.hideVarValues(diags)
	diags.sort()
	if diags.Err() != nil {
		return TaskConfig{}, diags
	}
	return cfg, diags
}
