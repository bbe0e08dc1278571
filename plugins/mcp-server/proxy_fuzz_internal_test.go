package mcpserver

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-go/dsh/plugins/permissions"
)

// names is an Upstream with fixed server names and no sessions.
type names []string

func (n names) Servers() []string                 { return n }
func (n names) Session(string) *mcp.ClientSession { return nil }

// FuzzSplitURI: splitURI undoes nsURI for every mountable server name and
// non-empty upstream URI, and whatever it accepts is an nsURI of what it
// returns (so a dsh:// URI names exactly one server and one upstream URI).
func FuzzSplitURI(f *testing.F) {
	f.Add("ev", "test://static/resource/1", "dsh://ev/test://static/resource/1")
	f.Add("a-b", "file:///etc/passwd", "dsh://a-b/")
	f.Add("x", "/", "dsh:///x")
	f.Add("s", "dsh://t/u", "dsh://s/dsh://t/u")
	f.Fuzz(func(t *testing.T, server, uri, raw string) {
		if permissions.CheckServerName(server) == nil && uri != "" {
			sv, rest, ok := splitURI(nsURI(server, uri))
			if !ok || sv != server || rest != uri {
				t.Fatalf("splitURI(nsURI(%q, %q)) = %q, %q, %v", server, uri, sv, rest, ok)
			}
		}
		sv, rest, ok := splitURI(raw)
		if !ok {
			return
		}
		if sv == "" || rest == "" || strings.Contains(sv, "/") {
			t.Fatalf("splitURI(%q) accepted server %q, rest %q", raw, sv, rest)
		}
		if nsURI(sv, rest) != raw {
			t.Fatalf("splitURI(%q) = %q, %q, which does not rebuild it", raw, sv, rest)
		}
	})
}

// FuzzSplitName: with mountable server names (which cannot contain "__"
// or end in "_"), a namespaced name belongs to at most one server, and
// splitName finds it: it undoes nsName and never attributes a tool, resource
// or prompt of one server to another.
func FuzzSplitName(f *testing.F) {
	f.Add("a", "a-b", "x", "mcp__a-b__x")
	f.Add("a", "a_b", "_x", "mcp__a___x")
	f.Add("fs", "fs2", "read__file", "mcp__fs__read__file")
	f.Add("s", "t", "", "mcp__s__")
	f.Fuzz(func(t *testing.T, a, b, name, raw string) {
		var servers names
		for _, sv := range []string{a, b} {
			if permissions.CheckServerName(sv) == nil && (len(servers) == 0 || servers[0] != sv) {
				servers = append(servers, sv)
			}
		}
		s := &Server{cfg: Config{Upstream: servers}}
		for _, sv := range servers {
			if name == "" {
				break
			}
			got, rest, ok := s.splitName(nsName(sv, name))
			if !ok || got != sv || rest != name {
				t.Fatalf("servers %q: splitName(nsName(%q, %q)) = %q, %q, %v", servers, sv, name, got, rest, ok)
			}
		}
		sv, rest, ok := s.splitName(raw)
		if !ok {
			return
		}
		if rest == "" || nsName(sv, rest) != raw {
			t.Fatalf("servers %q: splitName(%q) = %q, %q, which does not rebuild it", servers, raw, sv, rest)
		}
		matches := 0
		for _, other := range servers {
			if r, ok := strings.CutPrefix(raw, "mcp__"+other+"__"); ok && r != "" {
				matches++
			}
		}
		if matches != 1 {
			t.Fatalf("servers %q: %q is a name of %d servers", servers, raw, matches)
		}
	})
}
