package permissions

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// keyTrie holds every argument key path the rules read, folded (see
// foldKey), so that one pass over a call's arguments gathers the values of
// all of them: the cost of a call is bounded by its argument bytes, not by
// rules × values.
type keyTrie struct {
	kids map[string]*keyTrie
	id   int // the key path's index in gathered values; -1: not a path end
}

func newKeyTrie() *keyTrie { return &keyTrie{id: -1} }

// add returns the id of key (a path of segments), adding it when new.
func (t *keyTrie) add(key []string, next *int) int {
	n := t
	for _, seg := range key {
		f := foldKey(seg)
		k := n.kids[f]
		if k == nil {
			if n.kids == nil {
				n.kids = map[string]*keyTrie{}
			}
			k = newKeyTrie()
			n.kids[f] = k
		}
		n = k
	}
	if n.id < 0 {
		n.id = *next
		*next++
	}
	return n.id
}

// foldKey is a member name's case-folded form: each rune replaced by the
// smallest rune of its case-folding orbit (so "path", "PATH" and "Path"
// are one key, as are "k" and the Kelvin sign), matching what
// strings.EqualFold and Go's JSON decoding treat as the same name.
func foldKey(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return strings.ToUpper(s)
	}
	var b strings.Builder
	for _, r := range s {
		m := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			m = min(m, f)
		}
		b.WriteRune(m)
	}
	return b.String()
}

// gather walks args once and returns, per key id, the JSON values found
// at that key path: object members matched by folded name, arrays on the
// way element by element. ok is false when args is not valid JSON.
func (t *keyTrie) gather(args []byte, n int) (vals [][]gjson.Result, ok bool) {
	if !gjson.ValidBytes(args) {
		return nil, false
	}
	vals = make([][]gjson.Result, n)
	var descend func(v gjson.Result, node *keyTrie, depth int)
	descend = func(v gjson.Result, node *keyTrie, depth int) {
		if depth > 256 {
			return
		}
		switch {
		case v.IsObject():
			v.ForEach(func(k, e gjson.Result) bool {
				if kid := node.kids[foldKey(k.String())]; kid != nil {
					if kid.id >= 0 {
						vals[kid.id] = append(vals[kid.id], e)
					}
					if kid.kids != nil {
						descend(e, kid, depth+1)
					}
				}
				return true
			})
		case v.IsArray():
			v.ForEach(func(_, e gjson.Result) bool {
				descend(e, node, depth+1)
				return true
			})
		}
	}
	if t.kids != nil {
		descend(gjson.ParseBytes(args), t, 0)
	}
	return vals, true
}

// scalars appends the scalar values in v as text: strings as they are,
// numbers, booleans and null as their JSON text, arrays element by
// element; objects hold no scalar value.
func scalars(v gjson.Result, out []string, depth int) []string {
	switch {
	case v.IsArray():
		if depth > 256 {
			return append(out, v.Raw) // too deep to judge: its text
		}
		v.ForEach(func(_, e gjson.Result) bool {
			out = scalars(e, out, depth+1)
			return true
		})
		return out
	case v.IsObject():
		return out
	}
	switch v.Type {
	case gjson.String:
		return append(out, v.String())
	case gjson.Null:
		return append(out, "null")
	}
	return append(out, v.Raw)
}
