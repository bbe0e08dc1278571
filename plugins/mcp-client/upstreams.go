package mcpclient

import (
	"sort"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Upstreams is the set of mounted servers' live sessions, by server name,
// for proxying what is not a tool (resources, resource templates,
// prompts): pass the same *Upstreams as Config.Upstreams to every
// server's plugin. A server is present from its plugin's start to its
// end; its session is nil while it is not connected. Safe for concurrent
// use; the zero value is empty and ready.
type Upstreams struct {
	mu sync.Mutex
	m  map[string]*server
}

// Servers returns the names of the servers present, sorted.
func (u *Upstreams) Servers() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := make([]string, 0, len(u.m))
	for n := range u.m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Session returns server name's current session, or nil when it is not
// present or not connected.
func (u *Upstreams) Session(name string) *mcp.ClientSession {
	u.mu.Lock()
	s := u.m[name]
	u.mu.Unlock()
	if s == nil {
		return nil
	}
	if c := s.conn.Load(); c != nil {
		return c.cs
	}
	return nil
}

func (u *Upstreams) add(s *server) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.m == nil {
		u.m = map[string]*server{}
	}
	u.m[s.cfg.Name] = s
}

// remove drops s, unless another run of the same name replaced it.
func (u *Upstreams) remove(s *server) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.m[s.cfg.Name] == s {
		delete(u.m, s.cfg.Name)
	}
}
