package jsengine

import (
	"context"
	"encoding/json"
	"testing"
	"unsafe"
)

// TestNewCallCopiesShortArgsInline pins NewCall: the call gets its own copy of the arguments
// (changing the caller's afterwards changes nothing), whose capacity is its length (a binding
// appending to it writes elsewhere); arguments of up to callInlineArgs bytes share the call's one
// allocation (two without it), longer ones get their own; and a call with its room for arguments
// still fits the 128-byte size class.
func TestNewCallCopiesShortArgsInline(t *testing.T) {
	fn := func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, nil }
	for _, n := range []int{0, 1, 9, callInlineArgs, callInlineArgs + 1, 1000} {
		src := make([]byte, n)
		for i := range src {
			src[i] = 'a' + byte(i%26)
		}
		want := string(src)
		c := NewCall("t", fn, src)
		for i := range src {
			src[i] = '!'
		}
		if string(c.Args) != want || cap(c.Args) != len(c.Args) || c.Name != "t" || c.Fn == nil {
			t.Fatalf("%d bytes: Args %q (cap %d), want %q with no room", n, c.Args, cap(c.Args), want)
		}
		_ = append(c.Args, 'z')
		if string(c.Args) != want {
			t.Fatalf("%d bytes: appending changed the call's arguments", n)
		}
		if s := NewCall("t", fn, want); string(s.Args) != want {
			t.Fatalf("%d bytes from a string: %q", n, s.Args)
		}
		allocs := testing.AllocsPerRun(100, func() { sinkCall = NewCall("t", fn, src) })
		if wantAllocs := 1.0; n > callInlineArgs && allocs != 2 || n <= callInlineArgs && allocs != wantAllocs {
			t.Errorf("%d bytes: %v allocations", n, allocs)
		}
	}
	if s := unsafe.Sizeof(callInline{}); s > 128 {
		t.Errorf("a call with its room for arguments is %d bytes, over the 128-byte size class", s)
	}
}

var sinkCall *Call
