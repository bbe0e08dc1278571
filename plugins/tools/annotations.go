package tools

import (
	"strings"
)

// Annotations are behaviour hints a tool's author declares about it, in
// MCP's vocabulary (readOnlyHint, destructiveHint, idempotentHint,
// openWorldHint), with MCP's defaults already applied by whoever built
// them. They are shown on cards and in the tool catalog. Policy
// (concurrency, default ask rules) may act on them only when Trusted is
// set: hints from an untrusted source (an MCP server not configured as
// trusted) describe what the tool claims, not what it does.
//
// A Definition holds them by pointer (nil: no hints); registration copies
// them, so changing the caller's value afterwards changes nothing.
type Annotations struct {
	// Title is a human-readable display name; empty means the tool name.
	Title string `json:"title,omitempty"`
	// ReadOnly: the tool does not modify its environment.
	ReadOnly bool `json:"readOnly"`
	// Destructive: the tool may destroy or overwrite (meaningful only
	// when not ReadOnly).
	Destructive bool `json:"destructive"`
	// Idempotent: repeating a call with the same arguments has no further
	// effect (meaningful only when not ReadOnly).
	Idempotent bool `json:"idempotent"`
	// OpenWorld: the tool interacts with external entities (the web, other
	// people's systems), not a closed domain.
	OpenWorld bool `json:"openWorld"`
	// Trusted: the hints come from a trusted source and policy may act on
	// them.
	Trusted bool `json:"trusted"`
}

// DescribeAnnotations renders a for a catalog or a card, e.g.
// "read-only, closed-world (trusted)" or "destructive, open-world
// (untrusted hints)"; "" for nil.
func DescribeAnnotations(a *Annotations) string {
	if a == nil {
		return ""
	}
	var parts []string
	if a.ReadOnly {
		parts = append(parts, "read-only")
	} else {
		if a.Destructive {
			parts = append(parts, "destructive")
		} else {
			parts = append(parts, "additive")
		}
		if a.Idempotent {
			parts = append(parts, "idempotent")
		}
	}
	if a.OpenWorld {
		parts = append(parts, "open-world")
	} else {
		parts = append(parts, "closed-world")
	}
	s := strings.Join(parts, ", ")
	if a.Trusted {
		return s + " (trusted)"
	}
	return s + " (untrusted hints)"
}

// Annotations returns a copy of the tool's behaviour hints, or nil.
func (t *Tool) Annotations() *Annotations {
	if t == nil || t.annotations == nil {
		return nil
	}
	a := *t.annotations
	return &a
}

// copyAnnotations returns a private copy of a (nil for nil).
func copyAnnotations(a *Annotations) *Annotations {
	if a == nil {
		return nil
	}
	c := *a
	return &c
}
