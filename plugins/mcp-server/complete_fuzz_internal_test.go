package mcpserver

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// FuzzBoundCompletion: a proxied completion's answer keeps at most 100
// values of at most 4 KiB, in the server's order, each one the server
// sent; hasMore is set whenever one was dropped (or the server said so),
// and the total is never negative.
func FuzzBoundCompletion(f *testing.F) {
	f.Add("a\x00b\x00c", 0, false, -3)
	f.Add(strings.Repeat("v\x00", 150), 0, false, 150)
	f.Add("x", 5000, true, 0)
	f.Fuzz(func(t *testing.T, joined string, long int, hasMore bool, total int) {
		vals := strings.Split(joined, "\x00")
		if long > 0 && long < 1<<16 {
			vals = append(vals, strings.Repeat("y", long))
		}
		in := &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: vals, HasMore: hasMore, Total: total}}
		out := boundCompletion(in).Completion
		if len(out.Values) > maxCompletionValues || out.Total < 0 || out.Values == nil {
			t.Fatalf("%d values, total %d", len(out.Values), out.Total)
		}
		i := 0
		for _, v := range out.Values {
			if len(v) > maxCompletionValueBytes {
				t.Fatalf("a value of %d bytes", len(v))
			}
			for i < len(vals) && vals[i] != v {
				i++
			}
			if i == len(vals) {
				t.Fatalf("%q is not one of the server's values, in order", v)
			}
			i++
		}
		if (len(out.Values) < len(vals) || hasMore) != out.HasMore {
			t.Fatalf("hasMore %v with %d of %d values kept (server's %v)", out.HasMore, len(out.Values), len(vals), hasMore)
		}
	})
}
