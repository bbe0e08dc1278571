//lint:file-ignore SA1019 sampling is deprecated (SEP-2577) but still in use during its deprecation window; issue 21 asks the gateway to forward it

package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-go/dsh/internal/npmpeer"
)

// The everything server's resources, resource templates and prompts are
// served under the tools' namespacing (mcp__ev__<name>, dsh://ev/<uri>),
// listed, read and got through the gateway by a go-sdk client; a bare
// deny rule on a namespaced name hides it and refuses its read or get.
func TestServe_ResourcesAndPromptsOfTheEverythingServer(t *testing.T) {
	t.Setenv(tokenEnv, testToken)
	cfg := writeConfig(t, map[string]any{
		"mcpServers":  map[string]any{"ev": map[string]any{"command": npmpeer.Bin(t, "mcp-server-everything"), "args": []string{"stdio"}}},
		"permissions": map[string]any{"deny": []string{"mcp__ev__args-prompt"}},
	})
	s := startServe(t, cfg, "127.0.0.1:0")
	cs, err := connect(t, s.url, testToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	rl, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatalf("resources/list: %v\n%s", err, s.stderr.String())
	}
	var res *mcp.Resource
	for _, r := range rl.Resources {
		if !strings.HasPrefix(r.URI, "dsh://ev/") || !strings.HasPrefix(r.Name, "mcp__ev__") {
			t.Errorf("not namespaced: %q %q", r.Name, r.URI)
		}
		if res == nil && strings.Contains(r.MIMEType, "text") {
			res = r
		}
	}
	if res == nil {
		t.Fatalf("no text resource among %d", len(rl.Resources))
	}
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: res.URI})
	if err != nil || len(rr.Contents) == 0 || rr.Contents[0].Text == "" || !strings.HasPrefix(rr.Contents[0].URI, "dsh://ev/") {
		t.Fatalf("resources/read %s: %v %+v", res.URI, err, rr)
	}
	tl, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(tl.ResourceTemplates) == 0 || !strings.HasPrefix(tl.ResourceTemplates[0].URITemplate, "dsh://ev/") {
		t.Fatalf("resources/templates/list: %v %+v", err, tl)
	}
	pl, err := cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pl.Prompts {
		names = append(names, p.Name)
	}
	all := strings.Join(names, " ")
	if !strings.Contains(all, "mcp__ev__simple-prompt") || strings.Contains(all, "mcp__ev__args-prompt") {
		t.Fatalf("prompts: %s", all)
	}
	gp, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "mcp__ev__simple-prompt"})
	if err != nil || len(gp.Messages) == 0 {
		t.Fatalf("prompts/get: %v %+v", err, gp)
	}
	if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "mcp__ev__args-prompt", Arguments: map[string]string{"city": "x"}}); err == nil || !strings.Contains(err.Error(), "denied") {
		t.Errorf("a denied prompt was got: %v", err)
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://static/resource/1"}); err == nil {
		t.Error("an unnamespaced URI was read")
	}
}

// A mounted server's sampling request goes to the calling client when it
// declared sampling, and its answer reaches the server; a client without
// sampling gets the request refused (the tool fails), never answered by
// dsh.
func TestServe_SamplingGoesToTheClientOrIsRefused(t *testing.T) {
	t.Setenv(tokenEnv, testToken)
	cfg := writeConfig(t, map[string]any{
		"mcpServers": map[string]any{"ev": map[string]any{"command": npmpeer.Bin(t, "mcp-server-everything"), "args": []string{"stdio"}}},
	})
	s := startServe(t, cfg, "127.0.0.1:0")
	asked := make(chan *mcp.CreateMessageParams, 1)
	withSampling, err := connect(t, s.url, testToken, &mcp.ClientOptions{CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		asked <- req.Params
		return &mcp.CreateMessageResult{Role: "assistant", Model: "test-model", Content: &mcp.TextContent{Text: "sampled-by-the-client"}}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	without, err := connect(t, s.url, testToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	args := map[string]any{"prompt": "hello-sampling", "maxTokens": 10}
	r, err := withSampling.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__ev__trigger-sampling-request", Arguments: args})
	if err != nil {
		t.Fatalf("call: %v\n%s", err, s.stderr.String())
	}
	var p *mcp.CreateMessageParams
	select {
	case p = <-asked:
	case <-ctx.Done():
		t.Fatalf("the client was never asked: %v %q", r.IsError, resultText(r))
	}
	if len(p.Messages) == 0 || !strings.Contains(fmt.Sprint(p.Messages[0].Content), "hello-sampling") {
		t.Errorf("the forwarded request: %+v", p)
	}
	if r.IsError || !strings.Contains(resultText(r), "sampled-by-the-client") {
		t.Errorf("the server did not receive the client's answer: %v %q", r.IsError, resultText(r))
	}
	r, err = without.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__ev__trigger-sampling-request", Arguments: args})
	if err == nil && !r.IsError {
		t.Errorf("a client without sampling got an answer: %q", resultText(r))
	}
	if err == nil && !strings.Contains(resultText(r), "does not support sampling") {
		t.Errorf("refusal: %q", resultText(r))
	}
	select {
	case p := <-asked:
		t.Errorf("the sampling client was asked for another session's request: %+v", p)
	default:
	}
}

// An ask rule with an argument condition on a mounted server's prompt
// asks the calling client before the get (as an elicitation whose message
// names the prompt and its arguments): accepted, the get is served;
// declined, it is refused; a get the condition does not match is not
// asked.
func TestServe_AskRuleOnAPromptOfTheEverythingServer(t *testing.T) {
	t.Setenv(tokenEnv, testToken)
	cfg := writeConfig(t, map[string]any{
		"mcpServers":  map[string]any{"ev": map[string]any{"command": npmpeer.Bin(t, "mcp-server-everything"), "args": []string{"stdio"}}},
		"permissions": map[string]any{"ask": []string{"mcp__ev__args-prompt(city:Paris)"}},
	})
	s := startServe(t, cfg, "127.0.0.1:0")
	answer := "accept"
	asked := make(chan string, 4)
	cs, err := connect(t, s.url, testToken, &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked <- req.Params.Message
		return &mcp.ElicitResult{Action: answer}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	get := func(city string) (string, error) {
		r, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "mcp__ev__args-prompt", Arguments: map[string]string{"city": city}})
		if err != nil {
			return "", err
		}
		if len(r.Messages) == 0 {
			return "", fmt.Errorf("no messages")
		}
		tc, _ := r.Messages[0].Content.(*mcp.TextContent)
		if tc == nil {
			return "", fmt.Errorf("not text")
		}
		return tc.Text, nil
	}
	if got, err := get("Rome"); err != nil || !strings.Contains(got, "Rome") || len(asked) != 0 {
		t.Fatalf("get not asked about: %q %v (%d asks)\n%s", got, err, len(asked), s.stderr.String())
	}
	if got, err := get("Paris"); err != nil || !strings.Contains(got, "Paris") {
		t.Fatalf("accepted get: %q %v", got, err)
	}
	select {
	case msg := <-asked:
		if !strings.Contains(msg, "mcp__ev__args-prompt") || !strings.Contains(msg, `"city":"Paris"`) {
			t.Errorf("the ask's message:\n%s", msg)
		}
	default:
		t.Fatal("the get the ask rule names was not asked about")
	}
	answer = "decline"
	if got, err := get("Paris"); err == nil || !strings.Contains(err.Error(), "rejected") {
		t.Errorf("declined get: %q %v", got, err)
	}
}
