package concourse

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/concourse-tekton/concourse-tekton/concourse/vars"
)

// A static var (fly's -v, -y and -l) is how a pipeline is given its credentials, and a
// diagnostic is printed: a message about a value the vars gave shows the value as
// written, its ((vars)) named, never what they gave (`invalid check_every
// "((git_token))"`).

// splice is a scalar, or a map key, that static vars were interpolated into: its text as
// written, what it became, and what each var gave.
type splice struct {
	written string
	value   any
	vars    []splicedVar
}

// splicedVar is one var of a splice: its reference as written, ((git_token)), and its
// value.
type splicedVar struct {
	ref   string
	value any
}

// noteSplice records that the text written, at n (a scalar, or the value of the key
// written), became value through static.
func (p *Pipeline) noteSplice(n *node, written string, value any, static vars.Variables) {
	sp := splice{written: written, value: value}
	for _, name := range vars.Names(written) {
		ref, err := vars.ParseReference(name)
		if err != nil {
			continue
		}
		if v, found, err := static.Get(ref); err == nil && found {
			sp.vars = append(sp.vars, splicedVar{ref: "((" + name + "))", value: v})
		}
	}
	if len(sp.vars) == 0 {
		return
	}
	if p.spliced == nil {
		p.spliced = map[*node][]splice{}
	}
	p.spliced[n] = append(p.spliced[n], sp)
}

// hideVarValues rewrites, in place, the diagnostics about values that static vars gave:
// those at such a value, under it, or at what holds it.
func (p *Pipeline) hideVarValues(diags Diagnostics) {
	if len(p.spliced) == 0 {
		return
	}
	for i := range diags {
		for _, sp := range p.splicesAround(diags[i].Path) {
			diags[i].Message = sp.hide(diags[i].Message)
		}
	}
}

// splicesAround lists the splices of the node at path and under it, then those of the
// nodes that hold it, nearest first.
func (p *Pipeline) splicesAround(path Path) []splice {
	var out []splice
	var under func(n *node)
	under = func(n *node) {
		out = append(out, p.spliced[n]...)
		for _, e := range n.entries {
			under(e.value)
		}
		for _, item := range n.items {
			under(item)
		}
	}
	holders := []*node{p.tree}
	for _, e := range path {
		cur := holders[len(holders)-1]
		switch {
		case e.isIndex && cur.kind == listNode && e.index >= 0 && e.index < len(cur.items):
			cur = cur.items[e.index]
		case !e.isIndex:
			cur = cur.get(e.key)
		default:
			cur = nil
		}
		if cur == nil {
			break
		}
		holders = append(holders, cur)
	}
	at := holders[len(holders)-1]
	if len(holders) == len(path)+1 {
		under(at)
		holders = holders[:len(holders)-1]
	}
	for i := len(holders) - 1; i >= 0; i-- {
		out = append(out, p.spliced[holders[i]]...)
	}
	return out
}

// minHidden is the length from which a var's value is replaced wherever it is in a
// message about it, and not only where the message shows the value it made: a shorter
// one would be found in the message's own words.
const minHidden = 4

// hide rewrites msg so that it shows the splice as written: the value it made, quoted
// (%q) or as a word, becomes the text written, and what is left of a var's value its
// ((var)).
func (sp splice) hide(msg string) string {
	text, ok := sp.value.(string)
	if ok {
		if q := strconv.Quote(text); strings.Contains(msg, q) {
			msg = strings.ReplaceAll(msg, q, strconv.Quote(sp.written))
			text = ""
		}
	} else {
		text = printedScalar(sp.value)
	}
	if i := lastWord(msg, text); i >= 0 {
		msg = msg[:i] + sp.written + msg[i+len(text):]
	}
	for _, v := range sp.vars {
		leaves(v.value, func(s string) {
			if len(s) >= minHidden {
				msg = strings.ReplaceAll(msg, s, v.ref)
			}
		})
	}
	return msg
}

// printedScalar is the text of a number or a boolean as a message prints it; "" for
// anything else.
func printedScalar(v any) string {
	switch v.(type) {
	case bool, int64, uint64, float64, int:
		return scalarString(v)
	}
	return ""
}

// leaves calls f with the text of each string, number and boolean of a var's value.
func leaves(v any, f func(string)) {
	switch x := v.(type) {
	case string:
		f(x)
	case map[string]any:
		for _, e := range x {
			leaves(e, f)
		}
	case []any:
		for _, e := range x {
			leaves(e, f)
		}
	default:
		if s := printedScalar(v); s != "" {
			f(s)
		}
	}
}

// lastWord is the index of the last occurrence of word in msg that is not part of a
// longer word (a letter, a digit or a '.' beside it); -1 when there is none.
func lastWord(msg, word string) int {
	if word == "" {
		return -1
	}
	for end := len(msg); end > 0; {
		i := strings.LastIndex(msg[:end], word)
		if i < 0 {
			return -1
		}
		before, _ := utf8.DecodeLastRuneInString(msg[:i])
		after, _ := utf8.DecodeRuneInString(msg[i+len(word):])
		if !wordRune(before) && !wordRune(after) {
			return i
		}
		end = i + len(word) - 1
	}
	return -1
}

func wordRune(r rune) bool {
	return r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '.')
}
