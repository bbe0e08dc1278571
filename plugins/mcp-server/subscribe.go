package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// UpstreamWatcher is an [Upstream] that reports the mounted servers'
// notifications about their resources and prompts (mcpclient's
// *Upstreams is one). With it, a [Server] forwards resource updates to
// the sessions subscribed to them and list changes to every session.
type UpstreamWatcher interface {
	// Watch calls f with server's notifications: method is
	// "notifications/resources/updated" (uri the upstream URI),
	// "notifications/resources/list_changed",
	// "notifications/prompts/list_changed", or an mcpclient notice such
	// as "dsh/connected" (the server's session is new) or "dsh/removed".
	// f must not block; stop ends the watch, f is not called after it.
	Watch(f func(server, method, uri string)) (stop func())
}

// The resource subscriptions of the mounted servers, for a mounted server
// S:
//
//   - a session subscribes to dsh://S/<uri> (resources/subscribe): the
//     subscription is refused when a read of it would be (hidden, a deny
//     rule, an ask not allowed once: Config.Access is asked as for a read,
//     "subscribe to the resource …") or S does not offer subscriptions;
//     else dsh subscribes to <uri> on S, once for all the sessions
//     subscribed to it (reference counted);
//   - an update S sends for <uri> goes, as dsh://S/<uri>, to each session
//     subscribed to it, unless a read of it is now hidden or denied (the
//     update names the URI only; reading it is asked again);
//   - resources/unsubscribe, or the session's end, drops the session's
//     subscription; the last one unsubscribes on S. A new session of S
//     (S reconnected) is subscribed again to every URI still wanted.
//
// A session holds at most maxSubscriptions subscriptions.
const maxSubscriptions = 1024

// Bounds of the work done for one notice, for the releases of one ended
// session's subscriptions and for one upstream (un)subscription; the
// notices waiting for the dispatcher (past it they are dropped).
const (
	noticeTimeout     = 30 * time.Second
	releaseTimeout    = 10 * time.Second
	upstreamOpTimeout = 30 * time.Second
	noticeQueue       = 1024
)

// notice is one notification of a mounted server.
type notice struct{ server, method, uri string }

// upSub is one upstream URI some sessions are subscribed to.
type upSub struct {
	server, uri string
	// sessions are the sessions subscribed (Server.subMu).
	sessions map[*session]struct{}
	// op (capacity 1) is held while the upstream subscription is changed;
	// on is the upstream session subscribed to uri, nil when none (held
	// op).
	op chan struct{}
	on *mcp.ClientSession
}

// startWatch starts forwarding the upstream's notifications when it can
// report them.
func (s *Server) startWatch() {
	w, ok := s.cfg.Upstream.(UpstreamWatcher)
	if !ok {
		return
	}
	s.notices = make(chan notice, noticeQueue)
	s.noticesDone = make(chan struct{})
	s.bg, s.bgCancel = context.WithCancel(context.Background())
	go s.dispatch()
	var full atomic.Bool // logged once per overflow, not once per notice
	s.stopWatch = w.Watch(func(server, method, uri string) {
		select {
		case s.notices <- notice{server, method, uri}:
			full.Store(false)
		default:
			if !full.Swap(true) {
				s.log.Warn().Str("server", server).Str("method", method).Msg("mcp-server: notice queue full; notices dropped")
			}
		}
	})
}

// endWatch stops forwarding and waits for the dispatcher and the
// subscriptions' releases.
func (s *Server) endWatch() {
	if s.stopWatch == nil {
		return
	}
	s.stopWatch()
	s.bgCancel()
	close(s.notices)
	<-s.noticesDone
	s.subMu.Lock()
	s.bgClosed = true
	s.subMu.Unlock()
	s.bgWG.Wait()
}

// dispatch handles the notices in order.
func (s *Server) dispatch() {
	defer close(s.noticesDone)
	for n := range s.notices {
		ctx, cancel := context.WithTimeout(s.bg, noticeTimeout)
		switch n.method {
		case "notifications/resources/updated":
			s.updated(ctx, n.server, n.uri)
		case "notifications/resources/list_changed":
			s.listChanged(true, false)
		case "notifications/prompts/list_changed":
			s.listChanged(false, true)
		default: // connected, removed: everything of the server may differ
			s.listChanged(true, true)
			s.resubscribe(ctx, n.server)
		}
		cancel()
	}
}

// listChanged tells every session its resource or prompt list changed.
// The go-sdk sends list_changed only when its own table changes: a
// placeholder is added and removed (it is never listed or served, the
// proxy answering those methods first), which sends one notification.
func (s *Server) listChanged(resources, prompts bool) {
	s.mu.Lock()
	all := make([]*session, 0, len(s.sessions))
	for _, x := range s.sessions {
		all = append(all, x)
	}
	s.mu.Unlock()
	for _, x := range all {
		if resources {
			x.mcp.AddResource(&mcp.Resource{Name: "dsh-list-changed", URI: listChangedURI}, nil)
			x.mcp.RemoveResources(listChangedURI)
		}
		if prompts {
			x.mcp.AddPrompt(&mcp.Prompt{Name: listChangedURI}, nil)
			x.mcp.RemovePrompts(listChangedURI)
		}
	}
}

const listChangedURI = "dsh-internal:list-changed"

// updated sends an update of uri of sv to the sessions subscribed to it
// that may still read it.
func (s *Server) updated(ctx context.Context, sv, uri string) {
	ns := nsURI(sv, uri)
	s.subMu.Lock()
	e := s.subs[ns]
	var to []*session
	if e != nil {
		for x := range e.sessions {
			to = append(to, x)
		}
	}
	s.subMu.Unlock()
	if len(to) == 0 {
		return
	}
	names, sure := s.readNames(ctx, sv, uri)
	if !sure {
		return
	}
	args, _ := json.Marshal(map[string]string{"uri": uri})
	for _, x := range to {
		if s.hiddenTo(x, names) || s.verdictFor(x, names, args).Verdict == AccessDeny {
			continue
		}
		if err := x.mcp.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: ns}); err != nil {
			s.log.Debug().Err(err).Str("uri", ns).Msg("resource update not sent")
		}
	}
}

// subscription does a session's resources/subscribe or unsubscribe
// upstream (nil: done, the go-sdk records it next).
func (s *Server) subscription(ctx context.Context, x *session, method string, req mcp.Request) error {
	if s.notices == nil {
		// No updates could be forwarded: not offered, nothing subscribed.
		return errors.New(method + ": resource subscriptions are not offered")
	}
	if method == "resources/subscribe" {
		p, _ := req.GetParams().(*mcp.SubscribeParams)
		if p == nil {
			return errors.New("resources/subscribe: missing params")
		}
		return s.subscribe(ctx, x, p.URI)
	}
	p, _ := req.GetParams().(*mcp.UnsubscribeParams)
	if p == nil {
		return errors.New("resources/unsubscribe: missing params")
	}
	return s.unsubscribe(ctx, x, p.URI)
}

// subscribe is a session's resources/subscribe of the namespaced URI ns.
func (s *Server) subscribe(ctx context.Context, x *session, ns string) error {
	sv, uri, ok := splitURI(ns)
	cs := s.known(sv)
	if !ok || cs == nil {
		return fmt.Errorf("resource %q: not found", ns)
	}
	if ir := cs.InitializeResult(); ir == nil || ir.Capabilities == nil || ir.Capabilities.Resources == nil || !ir.Capabilities.Resources.Subscribe {
		return fmt.Errorf("resource %q: the server %q does not offer subscriptions", ns, sv)
	}
	names, sure := s.readNames(ctx, sv, uri)
	if !sure || s.hiddenTo(x, names) {
		return fmt.Errorf("resource %q: denied by a permission rule", ns)
	}
	args, _ := json.Marshal(map[string]string{"uri": uri})
	if err := s.access(ctx, x, names, args, "subscribe to the resource "+ns); err != nil {
		return fmt.Errorf("resource %q: %w", ns, err)
	}
	s.subMu.Lock()
	if x.subsClosed {
		s.subMu.Unlock()
		return fmt.Errorf("resource %q: %w", ns, errClosing)
	}
	if x.subs == nil {
		x.subs = map[string]*upSub{}
	}
	if _, ok := x.subs[ns]; ok {
		s.subMu.Unlock()
		return nil
	}
	if len(x.subs) >= maxSubscriptions {
		s.subMu.Unlock()
		return fmt.Errorf("resource %q: this session holds %d subscriptions, the limit; unsubscribe from one first", ns, maxSubscriptions)
	}
	e := s.subs[ns]
	if e == nil {
		e = &upSub{server: sv, uri: uri, sessions: map[*session]struct{}{}, op: make(chan struct{}, 1)}
		s.subs[ns] = e
	}
	e.sessions[x] = struct{}{}
	x.subs[ns] = e
	s.subMu.Unlock()
	err := s.reconcile(ctx, e, ns)
	if err == nil {
		return nil
	}
	s.subMu.Lock()
	delete(e.sessions, x)
	delete(x.subs, ns)
	s.subMu.Unlock()
	_ = s.reconcile(ctx, e, ns) // drops the entry when no one else wants it
	return fmt.Errorf("resource %q: %w", ns, err)
}

// unsubscribe is a session's resources/unsubscribe of ns.
func (s *Server) unsubscribe(ctx context.Context, x *session, ns string) error {
	s.subMu.Lock()
	e, ok := x.subs[ns]
	if ok {
		delete(e.sessions, x)
		delete(x.subs, ns)
	}
	s.subMu.Unlock()
	if !ok {
		return nil
	}
	if err := s.reconcile(ctx, e, ns); err != nil {
		s.log.Debug().Err(err).Str("uri", ns).Msg("upstream unsubscribe failed")
	}
	return nil
}

// releaseSubscriptions drops every subscription of a session that ended;
// the upstream unsubscriptions run in the background, bounded.
func (s *Server) releaseSubscriptions(x *session) {
	s.subMu.Lock()
	x.subsClosed = true
	subs := x.subs
	x.subs = nil
	for _, e := range subs {
		delete(e.sessions, x)
	}
	if len(subs) == 0 || s.bg == nil || s.bgClosed {
		s.subMu.Unlock()
		return
	}
	s.bgWG.Add(1)
	s.subMu.Unlock()
	go func() {
		defer s.bgWG.Done()
		ctx, cancel := context.WithTimeout(s.bg, releaseTimeout)
		defer cancel()
		for ns, e := range subs {
			if err := s.reconcile(ctx, e, ns); err != nil {
				s.log.Debug().Err(err).Str("uri", ns).Msg("upstream unsubscribe failed")
			}
		}
	}()
}

// resubscribe makes sv's subscriptions what its sessions want after sv's
// session changed.
func (s *Server) resubscribe(ctx context.Context, sv string) {
	s.subMu.Lock()
	var es []*upSub
	var nss []string
	for ns, e := range s.subs {
		if e.server == sv {
			es, nss = append(es, e), append(nss, ns)
		}
	}
	s.subMu.Unlock()
	for i, e := range es {
		if err := s.reconcile(ctx, e, nss[i]); err != nil {
			s.log.Warn().Err(err).Str("uri", nss[i]).Msg("resubscribing upstream failed")
		}
	}
}

// reconcile makes e's upstream subscription what its sessions want:
// subscribed on the server's current session while any session is
// subscribed, else unsubscribed and the entry dropped. Changes of one
// entry are serialized (e.op); the maps are never locked across a call
// to the server.
func (s *Server) reconcile(ctx context.Context, e *upSub, ns string) error {
	select {
	case e.op <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-e.op }()
	// A server that does not answer holds this entry's changes no longer
	// than this.
	ctx, cancel := context.WithTimeout(ctx, upstreamOpTimeout)
	defer cancel()
	s.subMu.Lock()
	want := len(e.sessions) > 0
	s.subMu.Unlock()
	cur := s.known(e.server)
	var err error
	switch {
	case want && e.on != cur:
		e.on = nil
		if cur == nil {
			err = fmt.Errorf("the server %q is not connected", e.server)
			break
		}
		if err = cur.Subscribe(ctx, &mcp.SubscribeParams{URI: e.uri}); err == nil {
			e.on = cur
		}
	case !want && e.on != nil:
		if e.on == cur {
			err = cur.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: e.uri})
		}
		e.on = nil // an old session's subscriptions ended with it
	}
	if e.on == nil {
		s.subMu.Lock()
		if len(e.sessions) == 0 && s.subs[ns] == e {
			delete(s.subs, ns)
		}
		s.subMu.Unlock()
	}
	return err
}

// hiddenTo reports whether any of names is hidden from session x: its own
// rules (Config.SessionRules, a profile) when it has them, else
// Config.Hidden.
func (s *Server) hiddenTo(x *session, names []string) bool {
	return s.anyHiddenIn(x, names)
}

// verdictFor is the strongest of the access decisions for names, for
// session x: its own Access (Config.SessionRules, a profile) when it has
// one, else Config.Access (allow when neither exists). It never asks.
func (s *Server) verdictFor(x *session, names []string, args []byte) AccessDecision {
	acc := s.cfg.Access
	if x != nil && x.rules.Access != nil {
		acc = x.rules.Access
	}
	var d AccessDecision
	if acc == nil {
		return d
	}
	for i, n := range names {
		if a := acc(n, args); i == 0 || a.Verdict > d.Verdict {
			d = a
		}
	}
	return d
}
