package mcpserver_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	mcpserver "github.com/dsh-go/dsh/plugins/mcp-server"
	"github.com/dsh-go/dsh/plugins/tools"
)

// watchedUp is an Upstream that reports its server's notifications
// (as mcpclient's Upstreams does).
type watchedUp struct {
	cs *mcp.ClientSession
	mu sync.Mutex
	ws map[int]func(server, method, uri string)
	n  int
}

func (u *watchedUp) Servers() []string { return []string{"up"} }
func (u *watchedUp) Session(s string) *mcp.ClientSession {
	u.mu.Lock()
	defer u.mu.Unlock()
	if s == "up" {
		return u.cs
	}
	return nil
}
func (u *watchedUp) Watch(f func(server, method, uri string)) func() {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.ws == nil {
		u.ws = map[int]func(string, string, string){}
	}
	u.n++
	id := u.n
	u.ws[id] = f
	return func() { u.mu.Lock(); delete(u.ws, id); u.mu.Unlock() }
}
func (u *watchedUp) notify(method, uri string) {
	u.mu.Lock()
	fs := make([]func(string, string, string), 0, len(u.ws))
	for _, f := range u.ws {
		fs = append(fs, f)
	}
	u.mu.Unlock()
	for _, f := range fs {
		f("up", method, uri)
	}
}

// upstreamLog records the upstream's subscribe and unsubscribe requests.
type upstreamLog struct {
	mu    sync.Mutex
	subs  map[string]int // URI → subscribe requests minus unsubscribe requests
	calls chan string    // "+uri" / "-uri"
}

func (l *upstreamLog) count(uri string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.subs[uri]
}

// mountWatched connects an in-memory upstream "up" offering resources
// test://a, test://b and test://hidden, the template "files"
// (test://files/{name}), the prompt "greet", subscriptions and
// completions (each value names the upstream ref it was asked for, and
// 150 values plus an over-long one come back for the argument "many").
func mountWatched(t *testing.T) (*watchedUp, *mcp.Server, *upstreamLog) {
	t.Helper()
	log := &upstreamLog{subs: map[string]int{}, calls: make(chan string, 4096)}
	srv := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, &mcp.ServerOptions{
		// The session-based protocol, as the npm servers speak: its
		// subscribe and unsubscribe are requests answered after the
		// handler ran (the 2026-07-28 one's are listen streams).
		SupportedProtocolVersions: []string{"2025-11-25"},
		SubscribeHandler: func(_ context.Context, r *mcp.SubscribeRequest) error {
			log.mu.Lock()
			log.subs[r.Params.URI]++
			log.mu.Unlock()
			log.calls <- "+" + r.Params.URI
			return nil
		},
		UnsubscribeHandler: func(_ context.Context, r *mcp.UnsubscribeRequest) error {
			log.mu.Lock()
			log.subs[r.Params.URI]--
			log.mu.Unlock()
			log.calls <- "-" + r.Params.URI
			return nil
		},
		CompletionHandler: func(_ context.Context, r *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			var vals []string
			if r.Params.Argument.Name == "many" {
				for range 150 {
					vals = append(vals, "v")
				}
				vals = append([]string{strings.Repeat("x", 5000)}, vals...)
			} else {
				vals = []string{r.Params.Ref.Type + ":" + r.Params.Ref.Name + r.Params.Ref.URI + ":" + r.Params.Argument.Value}
			}
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: vals}}, nil
		},
	})
	read := func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, Text: "x"}}}, nil
	}
	for _, n := range []string{"a", "b", "hidden"} {
		srv.AddResource(&mcp.Resource{Name: n, URI: "test://" + n}, read)
	}
	srv.AddResourceTemplate(&mcp.ResourceTemplate{Name: "files", URITemplate: "test://files/{name}"}, read)
	srv.AddPrompt(&mcp.Prompt{Name: "greet", Arguments: []*mcp.PromptArgument{{Name: "who"}}},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{}, nil
		})
	srv.AddPrompt(&mcp.Prompt{Name: "secret", Arguments: []*mcp.PromptArgument{{Name: "who"}}},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{}, nil
		})
	u := &watchedUp{}
	u.cs = u.dial(t, srv)
	return u, srv, log
}

// dial opens a client session to srv whose resource updates u reports.
func (u *watchedUp) dial(t *testing.T, srv *mcp.Server) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			u.notify("notifications/resources/updated", r.Params.URI)
		},
	}).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Wait() })
	return cs
}

// updates returns client options that record the resource updates a
// session receives.
func updates() (*mcp.ClientOptions, chan string) {
	ch := make(chan string, 64)
	return &mcp.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
		ch <- r.Params.URI
	}}, ch
}

func next(t *testing.T, ch <-chan string) string {
	t.Helper()
	select {
	case s := <-ch:
		return s
	case <-time.After(budget):
		t.Fatal("nothing arrived")
		return ""
	}
}

// M5: resource subscriptions of a mounted server: a session's subscription
// to dsh://up/<uri> subscribes <uri> upstream once for all sessions;
// the upstream's updates reach, under the namespaced URI, the sessions
// subscribed and no other; unsubscribing (or the session's end) drops
// the session's share, the last one unsubscribing upstream; a hidden or
// denied resource cannot be subscribed to.
func TestM5_SubscriptionsAreSharedUpstreamAndDeliveredToSubscribersOnly(t *testing.T) {
	up, srv, log := mountWatched(t)
	e := boot(t, tools.Native, mcpserver.Config{Upstream: up,
		Hidden: func(n string) bool { return n == "mcp__up__hidden" },
		Access: func(n string, _ json.RawMessage) mcpserver.AccessDecision {
			if n == "mcp__up__files" {
				return mcpserver.AccessDecision{Verdict: mcpserver.AccessDeny, Reason: "deny rule"}
			}
			return mcpserver.AccessDecision{}
		}})
	optsA, gotA := updates()
	optsB, gotB := updates()
	optsC, gotC := updates()
	a := connect(t, e, optsA)
	b, bs := connect2(t, e, optsB)
	c := connect(t, e, optsC)
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	if ir := a.InitializeResult(); ir.Capabilities.Resources == nil || !ir.Capabilities.Resources.Subscribe || ir.Capabilities.Completions == nil {
		t.Fatalf("capabilities: %+v", ir.Capabilities)
	}
	sub := func(cs *mcp.ClientSession, uri string) error {
		return cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
	}
	for _, cs := range []*mcp.ClientSession{a, b} {
		if err := sub(cs, "dsh://up/test://a"); err != nil {
			t.Fatal(err)
		}
	}
	if err := sub(a, "dsh://up/test://a"); err != nil { // again: no second share
		t.Fatal(err)
	}
	if n := log.count("test://a"); n != 1 {
		t.Fatalf("upstream subscriptions of test://a: %d, want 1", n)
	}
	if err := sub(c, "dsh://up/test://hidden"); err == nil || !strings.Contains(err.Error(), "denied") {
		t.Errorf("a hidden resource was subscribed to: %v", err)
	}
	if err := sub(c, "dsh://up/test://files/x"); err == nil || !strings.Contains(err.Error(), "deny rule") {
		t.Errorf("a denied resource was subscribed to: %v", err)
	}
	if err := sub(c, "dsh://nope/test://a"); err == nil {
		t.Error("a resource of no server was subscribed to")
	}
	if n := log.count("test://hidden") + log.count("test://files/x"); n != 0 {
		t.Errorf("refused subscriptions reached the upstream: %d", n)
	}

	if err := srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "test://a"}); err != nil {
		t.Fatal(err)
	}
	if g := next(t, gotA); g != "dsh://up/test://a" {
		t.Errorf("a got %q", g)
	}
	if g := next(t, gotB); g != "dsh://up/test://a" {
		t.Errorf("b got %q", g)
	}

	// a drops test://a and takes test://b; c takes test://b. An update of
	// a then of b reaches a as b only (the order is the upstream's), c as
	// b only, and b as a only.
	if err := a.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "dsh://up/test://a"}); err != nil {
		t.Fatal(err)
	}
	if n := log.count("test://a"); n != 1 {
		t.Fatalf("upstream subscriptions of test://a after one of two left: %d, want 1", n)
	}
	for _, cs := range []*mcp.ClientSession{a, c} {
		if err := sub(cs, "dsh://up/test://b"); err != nil {
			t.Fatal(err)
		}
	}
	for _, u := range []string{"test://a", "test://b"} {
		if err := srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: u}); err != nil {
			t.Fatal(err)
		}
	}
	if g := next(t, gotA); g != "dsh://up/test://b" {
		t.Errorf("a, unsubscribed from test://a, got %q first", g)
	}
	if g := next(t, gotC); g != "dsh://up/test://b" {
		t.Errorf("c got %q first", g)
	}
	if g := next(t, gotB); g != "dsh://up/test://a" {
		t.Errorf("b got %q", g)
	}

	// b's end drops the last share of test://a: unsubscribed upstream.
	drain(log.calls)
	if err := bs.Close(); err != nil {
		t.Fatal(err)
	}
	if g := next(t, log.calls); g != "-test://a" {
		t.Errorf("upstream after the last subscriber ended: %q", g)
	}
	if n := log.count("test://a"); n != 0 {
		t.Errorf("upstream subscriptions of test://a after every subscriber left: %d", n)
	}
	// c unsubscribes; a still holds test://b.
	if err := c.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "dsh://up/test://b"}); err != nil {
		t.Fatal(err)
	}
	if n := log.count("test://b"); n != 1 {
		t.Errorf("upstream subscriptions of test://b: %d, want 1", n)
	}
	drain(log.calls)
	if err := a.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "dsh://up/test://b"}); err != nil {
		t.Fatal(err)
	}
	if g := next(t, log.calls); g != "-test://b" {
		t.Errorf("upstream after the last subscriber left: %q", g)
	}
	if n := log.count("test://b"); n != 0 {
		t.Errorf("upstream subscriptions of test://b after every subscriber left: %d", n)
	}
	if len(gotC) != 0 || len(gotA) != 0 {
		t.Errorf("late updates: a %d, c %d", len(gotA), len(gotC))
	}
}

func drain(ch chan string) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

// M4: a completion of a mounted server's prompt or resource template goes to
// the server with the upstream name or template; a hidden or denied
// prompt's completion is refused, and so is one an ask rule names (a
// completion is never asked for, so an ask fails closed); the answer is
// cut to 100 values of at most 4 KiB, with hasMore.
func TestM4_CompletionsAreForwardedWithNamesMappedBack(t *testing.T) {
	up, _, _ := mountWatched(t)
	e := boot(t, tools.Native, mcpserver.Config{Upstream: up,
		Hidden: func(n string) bool { return n == "mcp__up__hidden" },
		Access: func(n string, _ json.RawMessage) mcpserver.AccessDecision {
			switch n {
			case "mcp__up__secret":
				return mcpserver.AccessDecision{Verdict: mcpserver.AccessDeny, Reason: "deny rule"}
			case "mcp__up__asked":
				return mcpserver.AccessDecision{Verdict: mcpserver.AccessAsk, Reason: "ask rule"}
			}
			return mcpserver.AccessDecision{}
		}})
	cs := connect(t, e, nil)
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	complete := func(ref *mcp.CompleteReference, arg string) (*mcp.CompleteResult, error) {
		return cs.Complete(ctx, &mcp.CompleteParams{Ref: ref, Argument: mcp.CompleteParamsArgument{Name: arg, Value: "Al"}})
	}
	r, err := complete(&mcp.CompleteReference{Type: "ref/prompt", Name: "mcp__up__greet"}, "who")
	if err != nil || len(r.Completion.Values) != 1 || r.Completion.Values[0] != "ref/prompt:greet:Al" {
		t.Errorf("prompt completion: %v %+v", err, r)
	}
	r, err = complete(&mcp.CompleteReference{Type: "ref/resource", URI: "dsh://up/test://files/{name}"}, "name")
	if err != nil || len(r.Completion.Values) != 1 || r.Completion.Values[0] != "ref/resource:test://files/{name}:Al" {
		t.Errorf("template completion: %v %+v", err, r)
	}
	if _, err := complete(&mcp.CompleteReference{Type: "ref/prompt", Name: "mcp__up__secret"}, "who"); err == nil || !strings.Contains(err.Error(), "deny rule") {
		t.Errorf("a denied prompt's completion: %v", err)
	}
	if _, err := complete(&mcp.CompleteReference{Type: "ref/prompt", Name: "mcp__up__asked"}, "who"); err == nil || !strings.Contains(err.Error(), "ask rule") {
		t.Errorf("a completion an ask rule names: %v", err)
	}
	if _, err := complete(&mcp.CompleteReference{Type: "ref/resource", URI: "dsh://up/test://hidden"}, "x"); err == nil || !strings.Contains(err.Error(), "denied") {
		t.Errorf("a hidden resource's completion: %v", err)
	}
	if _, err := complete(&mcp.CompleteReference{Type: "ref/prompt", Name: "greet"}, "who"); err == nil {
		t.Error("an unnamespaced prompt was completed")
	}
	r, err = complete(&mcp.CompleteReference{Type: "ref/prompt", Name: "mcp__up__greet"}, "many")
	if err != nil {
		t.Fatalf("bounded answer: %v", err)
	}
	if len(r.Completion.Values) != 100 || !r.Completion.HasMore || r.Completion.Values[0] != "v" {
		t.Errorf("bounded answer: %d values, hasMore %v", len(r.Completion.Values), r.Completion.HasMore)
	}
}

// M5: a mounted server's resource and prompt list changes reach every
// session as list_changed (the placeholder that sends them is never
// listed); a new session of the server (a reconnection) is subscribed
// again to the URIs sessions hold, and their updates keep coming.
func TestM5_ListChangesAndResubscriptionAfterAReconnection(t *testing.T) {
	up, srv, log := mountWatched(t)
	e := boot(t, tools.Native, mcpserver.Config{Upstream: up})
	resChanged, promptChanged := make(chan struct{}, 16), make(chan struct{}, 16)
	opts, got := updates()
	opts.ResourceListChangedHandler = func(context.Context, *mcp.ResourceListChangedRequest) { resChanged <- struct{}{} }
	opts.PromptListChangedHandler = func(context.Context, *mcp.PromptListChangedRequest) { promptChanged <- struct{}{} }
	cs := connect(t, e, opts)
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	wait := func(ch <-chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("no %s list_changed", what)
		}
	}
	up.notify("notifications/resources/list_changed", "")
	wait(resChanged, "resources")
	up.notify("notifications/prompts/list_changed", "")
	wait(promptChanged, "prompts")
	rl, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rl.Resources) != 3 || len(pl.Prompts) != 2 {
		t.Errorf("listed %d resources, %d prompts: %+v %+v", len(rl.Resources), len(pl.Prompts), rl.Resources, pl.Prompts)
	}

	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "dsh://up/test://a"}); err != nil {
		t.Fatal(err)
	}
	if g := next(t, log.calls); g != "+test://a" {
		t.Fatalf("upstream: %q", g)
	}
	old := up.Session("up")
	fresh := up.dial(t, srv)
	up.mu.Lock()
	up.cs = fresh
	up.mu.Unlock()
	old.Close()
	up.notify("dsh/connected", "")
	if g := next(t, log.calls); g != "+test://a" {
		t.Fatalf("upstream after the reconnection: %q", g)
	}
	wait(resChanged, "resources (reconnected)")
	if err := srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "test://a"}); err != nil {
		t.Fatal(err)
	}
	if g := next(t, got); g != "dsh://up/test://a" {
		t.Errorf("update after the reconnection: %q", g)
	}
}

// M5: a session holds at most 1,024 subscriptions; past it a subscription
// is refused (and not made upstream) until one is dropped.
func TestM5_SubscriptionsPerSessionAreBounded(t *testing.T) {
	up, _, log := mountWatched(t)
	e := boot(t, tools.Native, mcpserver.Config{Upstream: up})
	cs := connect(t, e, nil)
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	uri := func(i int) string { return "dsh://up/test://files/" + strconv.Itoa(i) }
	for i := range 1024 {
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri(i)}); err != nil {
			t.Fatalf("subscription %d: %v", i, err)
		}
	}
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri(1024)}); err == nil || !strings.Contains(err.Error(), "the limit") {
		t.Fatalf("subscription past the limit: %v", err)
	}
	if n := log.count("test://files/1024"); n != 0 {
		t.Errorf("the refused subscription reached the upstream")
	}
	if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri(0)}); err != nil {
		t.Fatal(err)
	}
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri(1024)}); err != nil {
		t.Errorf("subscription after one was dropped: %v", err)
	}
}

// M4, M5: completions and subscriptions are offered only when a mounted
// server offers them (and subscriptions only when its notifications are
// reported); a completion for a server without them is refused.
func TestM4_M5_CapabilitiesFollowTheMountedServers(t *testing.T) {
	e := boot(t, tools.Native, mcpserver.Config{Upstream: mountUp(t)})
	cs := connect(t, e, nil)
	c := cs.InitializeResult().Capabilities
	if c.Completions != nil || c.Resources == nil || c.Resources.Subscribe || c.Prompts == nil {
		t.Errorf("capabilities with a server offering neither: %+v %+v", c, c.Resources)
	}
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	_, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "mcp__up__greet"}, Argument: mcp.CompleteParamsArgument{Name: "who"}})
	if err == nil || !strings.Contains(err.Error(), "does not offer completions") {
		t.Errorf("completion for a server without them: %v", err)
	}
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "dsh://up/test://secret"}); err == nil {
		t.Error("a subscription was taken without the capability")
	}
}

// M5: an Upstream that does not report its servers' notifications offers
// no subscriptions, and none is made upstream (its updates could not be
// forwarded).
func TestM5_NoSubscriptionsWithoutNotifications(t *testing.T) {
	up, _, log := mountWatched(t)
	e := boot(t, tools.Native, mcpserver.Config{Upstream: upstreams{"up": up.Session("up")}})
	cs := connect(t, e, nil)
	if c := cs.InitializeResult().Capabilities; c.Resources == nil || c.Resources.Subscribe || c.Completions == nil {
		t.Errorf("capabilities: %+v %+v", c, c.Resources)
	}
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "dsh://up/test://a"}); err == nil {
		t.Error("a subscription was taken")
	}
	if n := log.count("test://a"); n != 0 {
		t.Errorf("subscribed upstream %d times", n)
	}
}

// M5: an update reaches a subscribed session only while it may still
// read the resource: once a rule hides or denies it, its updates stop.
func TestM5_UpdatesStopWhenTheResourceIsNoLongerReadable(t *testing.T) {
	up, srv, _ := mountWatched(t)
	var hideA, denyB atomic.Bool
	e := boot(t, tools.Native, mcpserver.Config{Upstream: up,
		Hidden: func(n string) bool { return n == "mcp__up__a" && hideA.Load() },
		Access: func(n string, _ json.RawMessage) mcpserver.AccessDecision {
			if n == "mcp__up__b" && denyB.Load() {
				return mcpserver.AccessDecision{Verdict: mcpserver.AccessDeny, Reason: "deny rule"}
			}
			return mcpserver.AccessDecision{}
		}})
	opts, got := updates()
	cs := connect(t, e, opts)
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	for _, u := range []string{"a", "b", "files/marker"} {
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "dsh://up/test://" + u}); err != nil {
			t.Fatal(err)
		}
	}
	update := func(u string) {
		t.Helper()
		if err := srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "test://" + u}); err != nil {
			t.Fatal(err)
		}
	}
	update("a")
	if g := next(t, got); g != "dsh://up/test://a" {
		t.Fatalf("got %q", g)
	}
	hideA.Store(true)
	denyB.Store(true)
	update("a")
	update("b")
	update("files/marker")
	if g := next(t, got); g != "dsh://up/test://files/marker" {
		t.Errorf("an update of a resource no longer readable arrived: %q", g)
	}
}

// M5: a subscription an ask rule names asks first, as a read does (the
// message says it is a subscription): accepted, it is made; declined, it
// is refused and not made upstream.
func TestM5_AnAskRuleAsksBeforeSubscribing(t *testing.T) {
	up, _, log := mountWatched(t)
	e := boot(t, tools.Native, mcpserver.Config{Upstream: up,
		Access: func(n string, _ json.RawMessage) mcpserver.AccessDecision {
			if n == "mcp__up__a" || n == "mcp__up__b" {
				return mcpserver.AccessDecision{Verdict: mcpserver.AccessAsk, Reason: "ask rule"}
			}
			return mcpserver.AccessDecision{}
		}})
	asked := make(chan string, 4)
	cs := connect(t, e, &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked <- req.Params.Message
		if strings.Contains(req.Params.Message, "test://a") {
			return &mcp.ElicitResult{Action: "accept"}, nil
		}
		return &mcp.ElicitResult{Action: "decline"}, nil
	}})
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "dsh://up/test://a"}); err != nil {
		t.Fatalf("accepted subscription: %v", err)
	}
	if msg := next(t, asked); !strings.Contains(msg, "subscribe to the resource dsh://up/test://a") {
		t.Errorf("the ask's message:\n%s", msg)
	}
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "dsh://up/test://b"}); err == nil || !strings.Contains(err.Error(), "rejected") {
		t.Errorf("declined subscription: %v", err)
	}
	next(t, asked)
	if a, b := log.count("test://a"), log.count("test://b"); a != 1 || b != 0 {
		t.Errorf("upstream subscriptions: a %d, b %d", a, b)
	}
}

// M4/M5 under per-session rules (a profile): a session whose own Access
// denies a prompt cannot complete its arguments, and a session whose own
// Hidden hides a resource gets none of its updates, while the server-wide
// rules allow both. The server-wide rules must not stand in for a
// session's own.
func TestM4_M5_SessionRulesGovernCompletionsAndUpdates(t *testing.T) {
	up, srv, _ := mountWatched(t)
	var hideA atomic.Bool
	restricted := mcpserver.SessionRules{
		Hidden: func(n string) bool { return n == "mcp__up__a" && hideA.Load() },
		Access: func(n string, _ json.RawMessage) mcpserver.AccessDecision {
			if n == "mcp__up__greet" {
				return mcpserver.AccessDecision{Verdict: mcpserver.AccessDeny, Reason: "profile rule"}
			}
			return mcpserver.AccessDecision{Verdict: mcpserver.AccessAllow}
		},
	}
	e := boot(t, tools.Native, mcpserver.Config{Upstream: up,
		Hidden: func(string) bool { return false },
		Access: func(string, json.RawMessage) mcpserver.AccessDecision {
			return mcpserver.AccessDecision{Verdict: mcpserver.AccessAllow}
		},
		SessionRules: func(mcpserver.SessionInfo) mcpserver.SessionRules { return restricted },
	})
	opts, got := updates()
	cs := connect(t, e, opts)
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	_, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "mcp__up__greet"}, Argument: mcp.CompleteParamsArgument{Name: "who", Value: "Al"}})
	if err == nil || !strings.Contains(err.Error(), "profile rule") {
		t.Errorf("completion of a prompt the session's rules deny: %v", err)
	}
	for _, u := range []string{"a", "files/marker"} {
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "dsh://up/test://" + u}); err != nil {
			t.Fatal(err)
		}
	}
	hideA.Store(true)
	for _, u := range []string{"a", "files/marker"} {
		if err := srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "test://" + u}); err != nil {
			t.Fatal(err)
		}
	}
	if g := next(t, got); g != "dsh://up/test://files/marker" {
		t.Errorf("an update of a resource the session's rules hide arrived: %q", g)
	}
}
