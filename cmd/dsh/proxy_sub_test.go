package main

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-go/dsh/internal/npmpeer"
)

// M4: completions of the everything server's prompt and resource template
// go through the gateway under the namespaced names (the server knows
// only its own: an answer proves the mapping); a completion a deny rule
// names (here by the completion context's arguments) is refused.
func TestM4_CompletionsOfTheEverythingServer(t *testing.T) {
	t.Setenv(tokenEnv, testToken)
	cfg := writeConfig(t, map[string]any{
		"mcpServers":  map[string]any{"ev": map[string]any{"command": npmpeer.Bin(t, "mcp-server-everything"), "args": []string{"stdio"}}},
		"permissions": map[string]any{"deny": []string{"mcp__ev__completable-prompt(department:Sales)"}},
	})
	s := startServe(t, cfg, "127.0.0.1:0")
	cs, err := connect(t, s.url, testToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cs.InitializeResult().Capabilities.Completions == nil {
		t.Fatalf("completions not offered: %+v", cs.InitializeResult().Capabilities)
	}
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	complete := func(ref *mcp.CompleteReference, arg, value string, context map[string]string) ([]string, error) {
		r, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: ref, Argument: mcp.CompleteParamsArgument{Name: arg, Value: value},
			Context: &mcp.CompleteContext{Arguments: context}})
		if err != nil {
			return nil, err
		}
		return r.Completion.Values, nil
	}
	prompt := &mcp.CompleteReference{Type: "ref/prompt", Name: "mcp__ev__completable-prompt"}
	if got, err := complete(prompt, "department", "Eng", nil); err != nil || strings.Join(got, ",") != "Engineering" {
		t.Fatalf("prompt completion: %q %v\n%s", got, err, s.stderr.String())
	}
	if got, err := complete(prompt, "name", "", map[string]string{"department": "Engineering"}); err != nil || strings.Join(got, ",") != "Alice,Bob,Charlie" {
		t.Errorf("prompt completion with context: %q %v", got, err)
	}
	if got, err := complete(prompt, "name", "", map[string]string{"department": "Sales"}); err == nil || !strings.Contains(err.Error(), "denied") {
		t.Errorf("a denied completion answered: %q %v", got, err)
	}
	tl, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := ""
	for _, x := range tl.ResourceTemplates {
		if strings.HasSuffix(x.URITemplate, "/text/{resourceId}") {
			tmpl = x.URITemplate
		}
	}
	if tmpl != "dsh://ev/demo://resource/dynamic/text/{resourceId}" {
		t.Fatalf("template %q among %d", tmpl, len(tl.ResourceTemplates))
	}
	if got, err := complete(&mcp.CompleteReference{Type: "ref/resource", URI: tmpl}, "resourceId", "7", nil); err != nil || strings.Join(got, ",") != "7" {
		t.Errorf("template completion: %q %v", got, err)
	}
}

// M5: resource subscriptions through the gateway. Session a subscribes to
// two resources of the everything server, session b to a third; the
// server's updates (started by its toggle-subscriber-updates tool) reach
// each session under the namespaced URIs it subscribed to and no other;
// after a unsubscribes from one, a's updates no longer carry it.
//
// The server sends its updates in the order of first subscription, one
// pass at a time, and the gateway forwards them in order: a marker
// subscribed after the others ends each pass, so what a session got in a
// pass is known without waiting for something not to come.
func TestM5_ResourceSubscriptionsOfTheEverythingServer(t *testing.T) {
	t.Setenv(tokenEnv, testToken)
	cfg := writeConfig(t, map[string]any{
		"mcpServers": map[string]any{"ev": map[string]any{"command": npmpeer.Bin(t, "mcp-server-everything"), "args": []string{"stdio"}}},
	})
	s := startServe(t, cfg, "127.0.0.1:0")
	gotA, gotB := make(chan string, 1024), make(chan string, 1024)
	rec := func(ch chan string) *mcp.ClientOptions {
		return &mcp.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			select {
			case ch <- r.Params.URI:
			default:
			}
		}}
	}
	a, err := connect(t, s.url, testToken, rec(gotA))
	if err != nil {
		t.Fatal(err)
	}
	b, err := connect(t, s.url, testToken, rec(gotB))
	if err != nil {
		t.Fatal(err)
	}
	if c := a.InitializeResult().Capabilities.Resources; c == nil || !c.Subscribe || !c.ListChanged {
		t.Fatalf("subscriptions not offered: %+v", c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	const base = "dsh://ev/demo://resource/dynamic/text/"
	u1, u2, u3, u4 := base+"1", base+"2", base+"3", base+"4"
	sub := func(cs *mcp.ClientSession, uri string) {
		t.Helper()
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			t.Fatalf("subscribe %s: %v\n%s", uri, err, s.stderr.String())
		}
	}
	toggle := func() {
		t.Helper()
		r, err := a.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__ev__toggle-subscriber-updates", Arguments: map[string]any{}})
		if err != nil || r.IsError {
			t.Fatalf("toggle: %v %q", err, resultText(r))
		}
	}
	// upTo returns what ch got up to and including marker.
	upTo := func(ch chan string, marker string) []string {
		t.Helper()
		var seq []string
		for {
			select {
			case u := <-ch:
				seq = append(seq, u)
				if u == marker {
					return seq
				}
			case <-ctx.Done():
				t.Fatalf("no update of %s; got %q\n%s", marker, seq, s.stderr.String())
			}
		}
	}
	sub(a, u1)
	sub(b, u2)
	sub(a, u3)
	toggle() // on: one pass now (u1 a, u2 b, u3 a), then one every 5 s
	if seq := upTo(gotA, u3); strings.Join(seq, " ") != u1+" "+u3 {
		t.Errorf("a's first pass: %q", seq)
	}
	if seq := upTo(gotB, u2); strings.Join(seq, " ") != u2 {
		t.Errorf("b's first pass: %q (b subscribed to %s only)", seq, u2)
	}
	toggle() // off
	if err := a.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: u1}); err != nil {
		t.Fatal(err)
	}
	sub(a, u4)
	toggle() // on: a pass of u2 (b), u3, u4 (a); u1 no longer
	seq := upTo(gotA, u4)
	// Passes the 5 s ticker made before "off" may precede (u1 u3 each);
	// the last pass is the one after the unsubscribe.
	if n := len(seq); n < 2 || seq[n-2] != u3 || (n >= 3 && seq[n-3] == u1) {
		t.Errorf("a's updates after unsubscribing from %s: %q", u1, seq)
	}
	toggle() // off
	for {
		select {
		case u := <-gotB:
			if u != u2 {
				t.Errorf("b got an update of %s it did not subscribe to", u)
			}
			continue
		default:
		}
		break
	}
}
