package schema

import "reflect"

// ArgsCheck validates the canonical arguments of a tool whose Go type is
// described by a [Target] against a value schema: [ValueSchema.ValidateArgs]
// with that Target, with the same results, but when the schema refuses
// every key the Target would report (every object that decodes into a
// struct is closed to undeclared keys, which are its fields' exact names,
// and every map has string keys), valid arguments cost one scan of their
// bytes, without decoding them. Build one per tool with
// [ValueSchema.ForArgs]; it is immutable and safe for concurrent use.
type ArgsCheck struct {
	s *ValueSchema
	t *Target
	// scan: valid arguments are recognized by a scan (the schema covers
	// the Target's key checks).
	scan bool
	// fused: with scan and a Target, the plan that checks and decodes
	// valid arguments in one pass (args_fused.go).
	fused *fusedPlan
}

// ForArgs returns the check of arguments against s and t (nil: no
// Target).
func (s *ValueSchema) ForArgs(t *Target) *ArgsCheck {
	scan := true
	if t != nil {
		scan = covers(t.root, s.root, map[coverKey]bool{})
	}
	c := &ArgsCheck{s: s, t: t, scan: scan}
	if scan && t != nil {
		b := &fusedBuilder{dec: &decoders{built: map[reflect.Type]*argDecoder{}}, built: map[fusedKey]*fusedPlan{}}
		c.fused = b.of(t.typ, s.root)
	}
	return c
}

// Validate is [ValueSchema.ValidateArgs](args, ArgsOptions{Target: t})
// for args in canonical form (canonjson's output, as tools hands every
// call's arguments to validation): the same violations, or nil.
func (c *ArgsCheck) Validate(args []byte) []Violation {
	if c.scan && len(args) > 0 && args[0] == '{' {
		w := canonWalker{b: args}
		if end := w.value(c.s.root, 0); end == len(args) && len(w.vs) == 0 {
			return nil
		}
		// Invalid (or not canonical): the full path says why, in its words.
	}
	return c.s.ValidateArgs(args, ArgsOptions{Target: c.t})
}

type coverKey struct {
	t *tnode
	n *node
}

// covers reports whether every value that matches n has no key that the
// key check of t's type would report (see Target.checkKeys).
func covers(t *tnode, n *node, seen map[coverKey]bool) bool {
	if n == nil || n.never {
		return n != nil || !needsKeys(t, map[*tnode]bool{})
	}
	k := coverKey{t, n}
	if seen[k] {
		return true
	}
	seen[k] = true
	switch t.shape {
	case shapeStruct:
		if n.types != 0 && n.types&kObject == 0 {
			return true // no object matches n
		}
		if !n.closed || n.addl != nil {
			return false
		}
		for name, p := range n.props {
			f := t.fields[name]
			if f == nil {
				return false // a declared key that is no field's exact name
			}
			if !f.quoted && f.node.container() && !covers(f.node, p, seen) {
				return false
			}
		}
		return true
	case shapeMap:
		if n.types != 0 && n.types&kObject == 0 {
			return true
		}
		if t.key != keyString {
			return false
		}
		if !t.elem.container() {
			return true
		}
		for _, p := range n.props {
			if !covers(t.elem, p, seen) {
				return false
			}
		}
		if n.addl != nil {
			return covers(t.elem, n.addl, seen)
		}
		return n.closed || !needsKeys(t.elem, map[*tnode]bool{})
	case shapeList:
		if n.types != 0 && n.types&kArray == 0 || !t.elem.container() {
			return true
		}
		if n.items != nil {
			return covers(t.elem, n.items, seen)
		}
		return !needsKeys(t.elem, map[*tnode]bool{})
	}
	return true
}

// needsKeys reports whether some value of t's type has keys the key check
// reports (it contains a struct or a map with non-string keys).
func needsKeys(t *tnode, seen map[*tnode]bool) bool {
	if seen[t] {
		return false
	}
	seen[t] = true
	switch t.shape {
	case shapeStruct:
		return true
	case shapeMap:
		return t.key != keyString || needsKeys(t.elem, seen)
	case shapeList:
		return needsKeys(t.elem, seen)
	}
	return false
}
