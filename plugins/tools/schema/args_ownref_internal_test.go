package schema

import (
	"encoding/json"
	"testing"
)

// keepsSelf is an argument type whose own UnmarshalJSON keeps a pointer
// to the memory it decodes into (its receiver), as a type may.
type keepsSelf struct {
	V    string
	self *keepsSelf
}

func (k *keepsSelf) UnmarshalJSON(b []byte) error {
	k.self = k
	var w struct{ V string }
	err := json.Unmarshal(b, &w)
	k.V = w.V
	return err
}

// keepsSelfIn holds keepsSelf values in place: in a slice, in a struct
// in a slice, and as the values of a map.
type keepsSelfIn struct {
	Items []keepsSelf          `json:"items,omitempty"`
	Outer []keepsSelfBox       `json:"outer,omitempty"`
	ByKey map[string]keepsSelf `json:"byKey,omitempty"`
}

type keepsSelfBox struct {
	K keepsSelf `json:"k"`
}

// selfOK fails t unless every kept receiver of v still holds the value it
// decoded (as encoding/json leaves it: the memory a receiver was handed
// is the decoded value's own, never reused by another call).
func selfOK(t *testing.T, what string, v *keepsSelfIn, want string) {
	t.Helper()
	for i, k := range v.Items {
		if k.self == nil || k.self.V != want {
			t.Errorf("%s: items[%d]: its UnmarshalJSON's receiver now holds %+v, want V %q", what, i, k.self, want)
		}
	}
	for i, o := range v.Outer {
		if o.K.self == nil || o.K.self.V != want {
			t.Errorf("%s: outer[%d].k: its UnmarshalJSON's receiver now holds %+v, want V %q", what, i, o.K.self, want)
		}
	}
	for key, k := range v.ByKey {
		if k.self == nil || k.self.V != want {
			t.Errorf("%s: byKey[%q]: its UnmarshalJSON's receiver now holds %+v, want V %q", what, key, k.self, want)
		}
	}
}

// Defect: a slice plan decoded the elements into a scratch array that the
// pooled state keeps for the next call (cleared after each), and a map
// plan each value into a pooled scratch value: a type's own UnmarshalJSON,
// handed a pointer into that memory, could keep it, and then saw it
// cleared, and rewritten by the next call's arguments (another call's
// values, written by another goroutine), where encoding/json leaves it the
// decoded value's own. Memory a type's own code was handed is now never
// reused.
func TestFusedDecodeNeverReusesMemoryOwnCodeWasHanded(t *testing.T) {
	c, _, _ := argsCheckFor[keepsSelfIn](t, true)
	args := func(s string) []byte {
		k := `{"V":"` + s + `"}`
		return []byte(`{"byKey":{"a":` + k + `,"b":` + k + `},"items":[` + k + `,` + k + `,` + k + `],"outer":[{"k":` + k + `},{"k":` + k + `}]}`)
	}
	var ref keepsSelfIn
	if err := json.Unmarshal(args("x"), &ref); err != nil {
		t.Fatal(err)
	}
	selfOK(t, "encoding/json", &ref, "x")
	for _, strict := range []bool{false, true} {
		var first keepsSelfIn
		if strict {
			if !c.DecodeIfCanonical(args("x"), "", &first) {
				t.Fatalf("DecodeIfCanonical declined %s", args("x"))
			}
		} else if vs := c.Decode(args("x"), &first); len(vs) > 0 {
			t.Fatal(vs)
		}
		selfOK(t, "decoded", &first, "x")
		if cap(first.Items) != cap(ref.Items) || cap(first.Outer) != cap(ref.Outer) {
			t.Errorf("capacities %d, %d, want encoding/json's %d, %d", cap(first.Items), cap(first.Outer), cap(ref.Items), cap(ref.Outer))
		}
		// Later calls (the pool keeps the state on this goroutine, mostly).
		for range 4 {
			var next keepsSelfIn
			if vs := c.Decode(args("y"), &next); len(vs) > 0 {
				t.Fatal(vs)
			}
		}
		selfOK(t, "after later calls", &first, "x")
	}
}
