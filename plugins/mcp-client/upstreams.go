package mcpclient

import (
	"sort"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Upstreams is the set of mounted servers' live sessions, by server name,
// for proxying what is not a tool (resources, resource templates,
// prompts, completions, resource subscriptions): pass the same *Upstreams
// as Config.Upstreams to every server's plugin; [Upstreams.Watch] reports
// their resource and prompt notifications. A server is present from its plugin's start to its
// end; its session is nil while it is not connected. Safe for concurrent
// use; the zero value is empty and ready.
type Upstreams struct {
	mu       sync.Mutex
	m        map[string]*server
	watchers map[*watcher]struct{}
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
	if u.m == nil {
		u.m = map[string]*server{}
	}
	u.m[s.cfg.Name] = s
	u.mu.Unlock()
	if s.conn.Load() != nil {
		u.notify(s.cfg.Name, NoticeConnected, "")
	}
}

// remove drops s, unless another run of the same name replaced it.
func (u *Upstreams) remove(s *server) {
	u.mu.Lock()
	removed := u.m[s.cfg.Name] == s
	if removed {
		delete(u.m, s.cfg.Name)
	}
	u.mu.Unlock()
	if removed {
		u.notify(s.cfg.Name, NoticeRemoved, "")
	}
}

// The notices [Upstreams.Watch] reports besides the servers' own
// notification methods ("notifications/resources/updated",
// "notifications/resources/list_changed",
// "notifications/prompts/list_changed").
const (
	// NoticeConnected: the server's session is (re)connected; its
	// resources and prompts may differ, and a new session has none of
	// the old one's resource subscriptions. It may be reported twice for
	// one connection (once when connected, once when present).
	NoticeConnected = "dsh/connected"
	// NoticeRemoved: the server is no longer present (its plugin ended).
	NoticeRemoved = "dsh/removed"
)

// Watch calls f with each notification a present server sends about its
// resources and prompts: server is its name, method the notification's
// method (or [NoticeConnected]) and uri the updated resource's URI (for
// "notifications/resources/updated", else ""). f runs on one of the
// server plugin's goroutines (the one reading the server's messages, for
// its notifications): it must return quickly and must not call the
// server. stop ends the watch; f is not called after stop returns.
func (u *Upstreams) Watch(f func(server, method, uri string)) (stop func()) {
	w := &watcher{f: f}
	u.mu.Lock()
	if u.watchers == nil {
		u.watchers = map[*watcher]struct{}{}
	}
	u.watchers[w] = struct{}{}
	u.mu.Unlock()
	return func() {
		u.mu.Lock()
		delete(u.watchers, w)
		u.mu.Unlock()
		w.mu.Lock() // waits for a call in progress
		w.stopped = true
		w.mu.Unlock()
	}
}

type watcher struct {
	mu      sync.Mutex
	stopped bool
	f       func(server, method, uri string)
}

// notify reports a notice of server to every watcher.
func (u *Upstreams) notify(server, method, uri string) {
	if u == nil {
		return
	}
	u.mu.Lock()
	ws := make([]*watcher, 0, len(u.watchers))
	for w := range u.watchers {
		ws = append(ws, w)
	}
	u.mu.Unlock()
	for _, w := range ws {
		w.mu.Lock()
		if !w.stopped {
			w.f(server, method, uri)
		}
		w.mu.Unlock()
	}
}
