package schema

import (
	"cmp"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/dsh-go/dsh/internal/safeerr"
	"github.com/dsh-go/dsh/plugins/tools/canonjson"
)

// Target describes how encoding/json decodes JSON into one Go type, so that
// arguments can be checked, before any policy reads them, for keys a policy
// reading the JSON by exact name would not see the way the Go value sees
// them, and then decoded with every failure located.
//
// encoding/json matches an object key to a struct field by exact name
// first and otherwise by case folding (ASCII case and Unicode simple
// folding, so "PATH", "Path", "paſh" with U+017F and a "K" written as the
// Kelvin sign U+212A all reach a field named with the ASCII letters); the
// last of several matching keys wins. A policy reading "path" would then
// see one value and the tool another. A Target therefore refuses, in any
// object that decodes into a struct (at any depth: through maps, slices,
// arrays, pointers and embedded structs, following Go's promotion rules
// for embedded fields as amended by json tags), every key that is not
// exactly the name of a field but folds to one. Refusing only ambiguous
// pairs would not be enough: a lone "PATH" also hides the value from a
// policy that reads "path". Keys that match no field are ignored by
// encoding/json and are allowed.
//
// The same holds for map keys that encoding/json converts: a map whose key
// type is an integer takes "1", "01" and "+1" as the same key, so an
// integer key must be written in its canonical decimal form; a map whose
// key type implements encoding.TextUnmarshaler must not have two keys that
// decode to the same Go key, and when the key type also implements
// encoding.TextMarshaler each key must be the form it marshals back to.
//
// Values handed to a type's own json.Unmarshaler or
// encoding.TextUnmarshaler are opaque: their decoder owns its key
// matching; [Target.Decode] checks that it accepts them. Interface values
// (any) decode into maps whose keys are exact.
//
// A Target is immutable and safe for concurrent use.
type Target struct {
	typ  reflect.Type
	root *tnode
	dec  *argDecoder // the one-pass decoder (DecodeCanonical)
}

// TargetFor returns the Target of T. It never fails: types encoding/json
// cannot decode into (channels, functions) are leaves that [Target.Decode]
// reports. Building a Target walks the type once; keep it (tools.Define
// builds one per tool).
func TargetFor[T any]() *Target {
	t := reflect.TypeFor[T]()
	b := &targetBuilder{nodes: map[reflect.Type]*tnode{}}
	return &Target{typ: t, root: b.node(t), dec: (&decoders{built: map[reflect.Type]*argDecoder{}}).of(t)}
}

// shape is how encoding/json decodes a non-null JSON value into a Go type.
type shape uint8

const (
	shapeLeaf shape = iota // string, bool, numbers; unsupported kinds
	shapeJSON              // the type's own json.Unmarshaler
	shapeText              // the type's own encoding.TextUnmarshaler
	shapeStruct
	shapeMap
	shapeList // slice or array
	shapeAny  // interface{} without methods
)

var (
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// shapeOf mirrors how encoding/json finds a decoder for a non-null value
// of type t: a named non-pointer type is addressed, so the methods of *t
// count; every pointer on the way down is asked for the unmarshalers;
// the type reached through pointers is decoded by its kind.
func shapeOf(t reflect.Type) (shape, reflect.Type) {
	if t.Kind() != reflect.Pointer {
		if t.Name() != "" {
			if s, ok := unmarshalerShape(reflect.PointerTo(t)); ok {
				return s, t
			}
		}
	} else {
		for t.Kind() == reflect.Pointer {
			if s, ok := unmarshalerShape(t); ok {
				return s, t.Elem()
			}
			t = t.Elem()
		}
	}
	switch t.Kind() {
	case reflect.Struct:
		return shapeStruct, t
	case reflect.Map:
		return shapeMap, t
	case reflect.Slice, reflect.Array:
		return shapeList, t
	case reflect.Interface:
		if t.NumMethod() == 0 {
			return shapeAny, t
		}
	}
	return shapeLeaf, t
}

func unmarshalerShape(p reflect.Type) (shape, bool) {
	if p.NumMethod() == 0 {
		return 0, false
	}
	if p.Implements(jsonUnmarshalerType) {
		return shapeJSON, true
	}
	if p.Implements(textUnmarshalerType) {
		return shapeText, true
	}
	return 0, false
}

// mapKeyRule is how encoding/json turns an object key into a map key.
type mapKeyRule uint8

const (
	keyString mapKeyRule = iota
	keyInt
	keyUint
	keyText
	keyInvalid // encoding/json refuses to decode an object into this map
)

func keyRuleOf(k reflect.Type) mapKeyRule {
	if reflect.PointerTo(k).Implements(textUnmarshalerType) {
		return keyText
	}
	switch k.Kind() {
	case reflect.String:
		return keyString
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return keyInt
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return keyUint
	}
	return keyInvalid
}

// tnode is the decoding plan of one Go type. Nodes form a graph that is
// cyclic for recursive types.
type tnode struct {
	typ   reflect.Type // the Go type, as declared
	shape shape
	// struct
	fields map[string]*tfield // exact field name -> field
	folded map[string]string  // foldName(field name) -> the field name encoding/json picks
	// map, slice and array
	elem    *tnode
	key     mapKeyRule
	keyType reflect.Type
	arrayN  int // array length; -1 for slices
}

// container reports whether keys below a value of n's type are matched by
// encoding/json (a struct, map, slice or array).
func (n *tnode) container() bool {
	return n.shape == shapeStruct || n.shape == shapeMap || n.shape == shapeList
}

type tfield struct {
	node   *tnode
	quoted bool // the ",string" option applies
}

func hasKey[V any](m map[string]V, k string) bool {
	_, ok := m[k]
	return ok
}

type targetBuilder struct {
	nodes map[reflect.Type]*tnode
}

func (b *targetBuilder) node(t reflect.Type) *tnode {
	if n, ok := b.nodes[t]; ok {
		return n
	}
	n := &tnode{typ: t}
	b.nodes[t] = n
	s, base := shapeOf(t)
	n.shape = s
	switch s {
	case shapeStruct:
		fields, _ := jsonFields(base)
		n.fields = make(map[string]*tfield, len(fields))
		n.folded = make(map[string]string, len(fields))
		for _, f := range fields {
			n.fields[f.name] = &tfield{node: b.node(f.sf.Type), quoted: f.quoted}
			if k := foldName(f.name); !hasKey(n.folded, k) {
				n.folded[k] = f.name // the first field in index order wins
			}
		}
	case shapeMap:
		n.keyType = base.Key()
		n.key = keyRuleOf(n.keyType)
		n.elem = b.node(base.Elem())
	case shapeList:
		n.arrayN = -1
		if base.Kind() == reflect.Array {
			n.arrayN = base.Len()
		}
		n.elem = b.node(base.Elem())
	}
	return n
}

// jsonField is one struct field as encoding/json sees it.
type jsonField struct {
	name   string
	tagged bool
	index  []int
	sf     reflect.StructField
	quoted bool
}

// jsonFields lists the fields encoding/json decodes for struct type t, in
// index order: exported fields and the fields promoted from embedded
// structs (exported or not, through pointers) without a json name, named
// by a valid json tag or else the Go name, skipping json:"-". Of several
// fields with one name, the shallowest wins, then a tagged one; a tie
// removes them all. conflicts names every name that had more than one
// candidate (shadowed or removed).
func jsonFields(t reflect.Type) (fields []jsonField, conflicts []string) {
	type embedded struct {
		typ   reflect.Type
		index []int
	}
	var all []jsonField
	next := []embedded{{typ: t}}
	var count, nextCount map[reflect.Type]int
	visited := map[reflect.Type]bool{}
	for len(next) > 0 {
		current := next
		next = nil
		count, nextCount = nextCount, map[reflect.Type]int{}
		for _, e := range current {
			if visited[e.typ] {
				continue
			}
			visited[e.typ] = true
			for i := range e.typ.NumField() {
				sf := e.typ.Field(i)
				if sf.Anonymous {
					et := sf.Type
					if et.Kind() == reflect.Pointer {
						et = et.Elem()
					}
					if !sf.IsExported() && et.Kind() != reflect.Struct {
						continue
					}
				} else if !sf.IsExported() {
					continue
				}
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, opts, _ := strings.Cut(tag, ",")
				if !validTagName(name) {
					name = ""
				}
				index := append(slices.Clip(e.index), i)
				ft := sf.Type
				if ft.Name() == "" && ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if name == "" && sf.Anonymous && ft.Kind() == reflect.Struct {
					nextCount[ft]++
					if nextCount[ft] == 1 {
						next = append(next, embedded{typ: ft, index: index})
					}
					continue
				}
				f := jsonField{name: cmp.Or(name, sf.Name), tagged: name != "", index: index, sf: sf,
					quoted: hasOption(opts, "string") && quotable(ft.Kind())}
				all = append(all, f)
				if count[e.typ] > 1 {
					// The same embedded type twice at this depth: its
					// fields tie with themselves.
					all = append(all, f)
				}
			}
		}
	}
	slices.SortStableFunc(all, func(a, b jsonField) int {
		return cmp.Or(strings.Compare(a.name, b.name), cmp.Compare(len(a.index), len(b.index)),
			boolFirst(a.tagged, b.tagged), slices.Compare(a.index, b.index))
	})
	for i := 0; i < len(all); {
		j := i + 1
		for j < len(all) && all[j].name == all[i].name {
			j++
		}
		group := all[i:j]
		if len(group) > 1 {
			conflicts = append(conflicts, group[0].name)
		}
		if len(group) == 1 || len(group[0].index) != len(group[1].index) || group[0].tagged != group[1].tagged {
			fields = append(fields, group[0])
		}
		i = j
	}
	slices.SortFunc(fields, func(a, b jsonField) int { return slices.Compare(a.index, b.index) })
	return fields, conflicts
}

func boolFirst(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	}
	return 1
}

func hasOption(opts, want string) bool {
	for o := range strings.SplitSeq(opts, ",") {
		if o == want {
			return true
		}
	}
	return false
}

// quotable reports whether the ",string" option applies to a field of
// kind k.
func quotable(k reflect.Kind) bool {
	switch k {
	case reflect.Bool, reflect.String, reflect.Float32, reflect.Float64,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return true
	}
	return false
}

// validTagName reports whether encoding/json accepts name from a json tag
// (otherwise it uses the Go field name): letters, digits and the
// punctuation !#$%&()*+-./:;<=>?@[]^_{|}~ and space.
func validTagName(name string) bool {
	if name == "" {
		return false
	}
	for _, c := range name {
		if !strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c) && !unicode.IsLetter(c) && !unicode.IsDigit(c) {
			return false
		}
	}
	return true
}

// foldName maps a key to the form encoding/json compares case-insensitive
// field names in: ASCII letters upper-cased, every other rune replaced by
// the smallest rune of its Unicode simple-folding orbit (so U+017F 'ſ'
// becomes 'S' and U+212A KELVIN SIGN becomes 'K'), invalid UTF-8 by
// U+FFFD.
func foldName(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= utf8.RuneSelf || 'a' <= c && c <= 'z' {
			ascii = false
			break
		}
	}
	if ascii {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			b = append(b, c)
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		b = utf8.AppendRune(b, foldRune(r))
		i += n
	}
	return string(b)
}

func foldRune(r rune) rune {
	for {
		next := unicode.SimpleFold(r)
		if next <= r {
			return next
		}
		r = next
	}
}

// pathSeg is one step of a JSON pointer, kept unrendered until a
// violation needs it.
type pathSeg struct {
	key   string
	index int // -1 for a key
}

// keyWalker walks a decoded value along a type. With track unset it only
// notes whether any key is refused (found), without building paths, so
// the common case allocates nothing; with track set it records each
// refused key with its path in vs.
type keyWalker struct {
	track bool
	found bool
	path  []pathSeg
	vs    []Violation
}

func (w *keyWalker) at(extra pathSeg) string {
	var b strings.Builder
	for _, s := range append(w.path, extra) {
		b.WriteByte('/')
		if s.index >= 0 {
			b.WriteString(strconv.Itoa(s.index))
		} else {
			b.WriteString(escapePointer(s.key))
		}
	}
	return b.String()
}

func (w *keyWalker) add(key string, msg func() string) {
	w.found = true
	if w.track {
		w.vs = append(w.vs, Violation{Path: w.at(pathSeg{key: key, index: -1}), Message: msg()})
	}
}

func (w *keyWalker) push(s pathSeg) {
	if w.track {
		w.path = append(w.path, s)
	}
}

func (w *keyWalker) pop() {
	if w.track {
		w.path = w.path[:len(w.path)-1]
	}
}

// checkKeys walks v (decoded with UseNumber) and returns the refused keys,
// unsorted.
func (t *Target) checkKeys(v any) []Violation {
	w := keyWalker{}
	if w.walk(t.root, v); !w.found {
		return nil
	}
	w = keyWalker{track: true}
	w.walk(t.root, v)
	return w.vs
}

func (w *keyWalker) walk(n *tnode, v any) {
	switch n.shape {
	case shapeStruct:
		obj, ok := v.(map[string]any)
		if !ok {
			return
		}
		for k, val := range obj {
			if f := n.fields[k]; f != nil {
				if !f.quoted && f.node.container() {
					w.push(pathSeg{key: k, index: -1})
					w.walk(f.node, val)
					w.pop()
				}
				continue
			}
			if name, ok := n.folded[foldName(k)]; ok {
				w.add(k, func() string {
					return fmt.Sprintf("not a field name, but encoding/json would decode it into field %q (it matches names case-insensitively); write %q", name, name)
				})
			}
		}
	case shapeMap:
		obj, ok := v.(map[string]any)
		if !ok {
			return
		}
		w.mapKeys(n, obj)
		if !n.elem.container() {
			return
		}
		for k, val := range obj {
			w.push(pathSeg{key: k, index: -1})
			w.walk(n.elem, val)
			w.pop()
		}
	case shapeList:
		arr, ok := v.([]any)
		if !ok || !n.elem.container() {
			return
		}
		if n.arrayN >= 0 && len(arr) > n.arrayN {
			arr = arr[:n.arrayN] // encoding/json skips the rest
		}
		for i, e := range arr {
			w.push(pathSeg{index: i})
			w.walk(n.elem, e)
			w.pop()
		}
	}
}

// mapKeys checks the keys of an object decoded into a map.
func (w *keyWalker) mapKeys(n *tnode, obj map[string]any) {
	switch n.key {
	case keyInt, keyUint:
		for k := range obj {
			var canon string
			if n.key == keyInt {
				i, err := strconv.ParseInt(k, 10, 64)
				if err != nil {
					continue // does not decode: Decode reports it
				}
				canon = strconv.FormatInt(i, 10)
			} else {
				u, err := strconv.ParseUint(k, 10, 64)
				if err != nil {
					continue
				}
				canon = strconv.FormatUint(u, 10)
			}
			if canon != k {
				w.add(k, func() string {
					return fmt.Sprintf("map key is not in canonical form: encoding/json decodes it as the key %s; write %q", canon, canon)
				})
			}
		}
	case keyText:
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		seen := map[any]string{}
		for _, k := range keys {
			gk, canon, ok := decodeMapKey(n.keyType, k)
			if !ok {
				continue
			}
			if canon != nil && *canon != k {
				w.add(k, func() string {
					return fmt.Sprintf("map key is not in canonical form: it decodes to the key written %q; write that", *canon)
				})
				continue
			}
			if other, dup := seen[gk]; dup {
				w.add(k, func() string { return fmt.Sprintf("map key decodes to the same Go key as %q", other) })
				continue
			}
			seen[gk] = k
		}
	}
}

// decodeMapKey decodes a map key of a key type with its own unmarshaler
// the way encoding/json does (the key, as a JSON string, through the
// type's unmarshaler). canon is the key encoding/json would write for the
// decoded Go key (the string itself for a string kind, else its
// MarshalText), nil when it writes none. ok is false when the key does not
// decode, or is not usable as a Go map key.
func decodeMapKey(kt reflect.Type, k string) (key any, canon *string, ok bool) {
	defer func() {
		if recover() != nil {
			key, canon, ok = nil, nil, false
		}
	}()
	p := reflect.New(kt)
	if err := json.Unmarshal(canonjson.AppendString(nil, k), p.Interface()); err != nil {
		return nil, nil, false
	}
	kv := p.Elem()
	if kt.Kind() == reflect.String {
		s := kv.String()
		canon = &s
	} else if m, isM := kv.Interface().(encoding.TextMarshaler); isM {
		if b, err := m.MarshalText(); err == nil {
			s := string(b)
			canon = &s
		}
	}
	key = kv.Interface()
	_ = map[any]bool{key: true} // panics for keys that are not comparable
	return key, canon, true
}

// Decode unmarshals args into v, which must be a pointer to the Target's
// type, exactly as json.Unmarshal does, and reports a failure as
// violations located at the value that did not decode ("/edits/2/line:
// cannot decode number 1e+21 into int"), naming the Go type and the
// decoder's reason. It returns nil on success. A panic in a type's own
// unmarshaler is reported as a violation, not propagated. Decode does not
// check keys; see [Target.CheckKeys] and [ArgsOptions].
func (t *Target) Decode(args []byte, v any) (vs []Violation) {
	defer func() {
		if r := recover(); r != nil {
			vs = []Violation{{Message: fmt.Sprintf("decoding into %s panicked: %v", t.typ, r)}}
		}
	}()
	if rv := reflect.ValueOf(v); !rv.IsValid() || rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Type().Elem() != t.typ {
		return []Violation{{Message: fmt.Sprintf("Decode needs a non-nil *%s, got %T", t.typ, v)}}
	}
	err := json.Unmarshal(args, v)
	if err == nil {
		return nil
	}
	var se *json.SyntaxError
	if !safeerr.AsAny(err, &se) {
		x := explainer{b: args}
		x.value(t.root, false, skipSpace(args, 0), "")
		if len(x.vs) > 0 {
			return sortViolations(x.vs)
		}
	}
	return []Violation{{Message: decodeMessage(t.typ, err)}}
}

// decodeMessage says why a value did not decode into typ.
func decodeMessage(typ reflect.Type, err error) string {
	var ute *json.UnmarshalTypeError
	if safeerr.AsAny(err, &ute) && ute.Field == "" {
		return "cannot decode " + ute.Value + " into " + ute.Type.String()
	}
	return "cannot decode into " + typ.String() + ": " + strings.TrimPrefix(err.Error(), "json: ")
}

// explainer walks JSON that did not decode, guided by the type, and
// decodes each leaf on its own to find where and why. Each byte is
// scanned a bounded number of times, so the walk is linear in the input.
type explainer struct {
	b  []byte
	vs []Violation
}

// value explains the value starting at b[i] (a non-space byte) decoded
// into n's type, and returns the offset after it, or -1 when the JSON is
// malformed.
func (x *explainer) value(n *tnode, quoted bool, i int, path string) int {
	if i >= len(x.b) {
		return -1
	}
	if !quoted {
		switch c := x.b[i]; {
		case n.shape == shapeStruct && c == '{':
			return x.members(i, path, func(key string, vi int, p string) int {
				f := n.fields[key]
				if f == nil {
					if name, ok := n.folded[foldName(key)]; ok {
						f = n.fields[name]
					}
				}
				if f == nil {
					return valueEnd(x.b, vi)
				}
				return x.value(f.node, f.quoted, vi, p)
			})
		case n.shape == shapeMap && c == '{':
			return x.members(i, path, func(key string, vi int, p string) int {
				x.mapKey(n, key, p)
				return x.value(n.elem, false, vi, p)
			})
		case n.shape == shapeList && c == '[':
			return x.elements(n, i, path)
		}
	}
	end := valueEnd(x.b, i)
	if end < 0 {
		return -1
	}
	raw, typ := x.b[i:end], n.typ
	if quoted {
		raw, typ = append(append([]byte(`{"v":`), raw...), '}'), quotedType(n.typ)
	}
	if err := json.Unmarshal(raw, reflect.New(typ).Interface()); err != nil {
		x.vs = append(x.vs, Violation{Path: path, Message: decodeMessage(n.typ, err)})
	}
	return end
}

// quotedType is struct{ V T `json:"v,string"` }, to decode a value the way
// a field with the ",string" option is decoded.
func quotedType(t reflect.Type) reflect.Type {
	return reflect.StructOf([]reflect.StructField{{Name: "V", Type: t, Tag: `json:"v,string"`}})
}

// mapKey reports a map key that does not decode into n's key type.
func (x *explainer) mapKey(n *tnode, key, path string) {
	var err error
	switch n.key {
	case keyText:
		err = json.Unmarshal(canonjson.AppendString(nil, key), reflect.New(n.keyType).Interface())
	case keyInt:
		var i int64
		if i, err = strconv.ParseInt(key, 10, 64); err == nil && reflect.New(n.keyType).Elem().OverflowInt(i) {
			err = errors.New("out of range")
		}
	case keyUint:
		var u uint64
		if u, err = strconv.ParseUint(key, 10, 64); err == nil && reflect.New(n.keyType).Elem().OverflowUint(u) {
			err = errors.New("out of range")
		}
	}
	if err != nil {
		x.vs = append(x.vs, Violation{Path: path, Message: fmt.Sprintf("map key does not decode into %s: %s", n.keyType, strings.TrimPrefix(err.Error(), "json: "))})
	}
}

// members calls f for each member of the object at b[i] with its key, the
// offset of its value and its path; f returns the offset after the value.
// It returns the offset after the object, or -1.
func (x *explainer) members(i int, path string, f func(key string, vi int, path string) int) int {
	j := skipSpace(x.b, i+1)
	for j < len(x.b) && x.b[j] != '}' {
		ke := valueEnd(x.b, j)
		var key string
		if ke < 0 || x.b[j] != '"' || json.Unmarshal(x.b[j:ke], &key) != nil {
			return -1
		}
		if j = skipSpace(x.b, ke); j >= len(x.b) || x.b[j] != ':' {
			return -1
		}
		e := f(key, skipSpace(x.b, j+1), path+"/"+escapePointer(key))
		if e < 0 {
			return -1
		}
		if j = skipSpace(x.b, e); j < len(x.b) && x.b[j] == ',' {
			j = skipSpace(x.b, j+1)
		}
	}
	if j >= len(x.b) {
		return -1
	}
	return j + 1
}

// elements explains each element of the array at b[i] decoded into n's
// slice or array type (an array's extra elements are skipped, as
// encoding/json does) and returns the offset after the array, or -1.
func (x *explainer) elements(n *tnode, i int, path string) int {
	j := skipSpace(x.b, i+1)
	for k := 0; j < len(x.b) && x.b[j] != ']'; k++ {
		var e int
		if n.arrayN >= 0 && k >= n.arrayN {
			e = valueEnd(x.b, j)
		} else {
			e = x.value(n.elem, false, j, path+"/"+strconv.Itoa(k))
		}
		if e < 0 {
			return -1
		}
		if j = skipSpace(x.b, e); j < len(x.b) && x.b[j] == ',' {
			j = skipSpace(x.b, j+1)
		}
	}
	if j >= len(x.b) {
		return -1
	}
	return j + 1
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && isWS(b[i]) {
		i++
	}
	return i
}

// valueEnd returns the offset just after the JSON value starting at b[i],
// or -1 when there is none. It checks only what it needs to find the end.
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				e := stringEnd(b, j)
				if e < 0 {
					return -1
				}
				j = e - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(b) && !isWS(b[j]) && !strings.ContainsRune(",]}:", rune(b[j])) {
		j++
	}
	if j == i {
		return -1
	}
	return j
}

func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}
