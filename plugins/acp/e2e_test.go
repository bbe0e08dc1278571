package acp_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-go/dsh/plugins/acp"
	"github.com/dsh-go/dsh/plugins/tools"
)

// answerByCommand answers a request_permission by the command (the
// toolCall title) it names.
func answerByCommand(choices map[string]acpsdk.PermissionOptionId) func(context.Context, acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
	return func(_ context.Context, r acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
		title := ""
		if r.ToolCall.Title != nil {
			title = *r.ToolCall.Title
		}
		opt, ok := choices[title]
		if !ok {
			opt = acp.OptionRejectOnce
		}
		return acpsdk.RequestPermissionResponse{Outcome: acpsdk.NewRequestPermissionOutcomeSelected(opt)}, nil
	}
}

func prompt(t *testing.T, cc *acpsdk.ClientSideConnection, sid acpsdk.SessionId, calls ...scriptedCall) acpsdk.PromptResponse {
	t.Helper()
	text, err := json.Marshal(calls)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := cc.Prompt(context.Background(), acpsdk.PromptRequest{SessionId: sid, Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock(string(text))}})
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func args(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// TestE2E_SessionUpdatesOverTheSDK drives the bridge end to end: the SDK's
// client and agent connections over io.Pipe, the example agent's file and
// shell tools on a temporary workspace, and a policy asking before every
// shell command. It checks the exact sequence of updates the client
// receives for a read, an edit (diff card), an approved command, a
// command the user rejects, and a command allowed always and then reused
// without asking.
func TestE2E_SessionUpdatesOverTheSDK(t *testing.T) {
	r := newRig(t, acp.Config{Approval: true})
	writeFile(t, filepath.Join(r.ws, "a.txt"), "hello\nworld\n")
	client := &testClient{answer: answerByCommand(map[string]acpsdk.PermissionOptionId{
		"echo hi":  acp.OptionAllowOnce,
		"rm a.txt": acp.OptionRejectOnce,
		"ls":       acp.OptionAllowAlways,
	})}
	cc, agent := wire(t, r, client)
	ctx := context.Background()
	if _, err := cc.Initialize(ctx, acpsdk.InitializeRequest{ProtocolVersion: acpsdk.ProtocolVersionNumber}); err != nil {
		t.Fatal(err)
	}
	sess, err := cc.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: r.ws, McpServers: []acpsdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	resp := prompt(t, cc, sess.SessionId,
		scriptedCall{"c1", "read", args(map[string]any{"path": "a.txt", "offset": 2})},
		scriptedCall{"c2", "edit", args(map[string]any{"path": "a.txt", "old_string": "world", "new_string": "there"})},
		scriptedCall{"c3", "bash", args(map[string]any{"command": "echo hi", "description": "Say hi"})},
		scriptedCall{"c4", "bash", args(map[string]any{"command": "rm a.txt", "description": "Remove a.txt"})},
		scriptedCall{"c5", "bash", args(map[string]any{"command": "ls", "description": "List"})},
		scriptedCall{"c6", "bash", args(map[string]any{"command": "ls", "description": "List again"})},
	)
	if resp.StopReason != acpsdk.StopReasonEndTurn {
		t.Errorf("stop reason %q", resp.StopReason)
	}
	updates, asks := client.recorded()
	var got []string
	for _, u := range updates {
		got = append(got, summary(r.ws, u))
	}
	want := []string{
		`tool_call c1 pending read "Read a.txt" @$WS/a.txt:2`,
		`tool_call_update c1 in_progress`,
		`tool_call_update c1 completed | text "world\n"`,
		`tool_call c2 pending edit "Edit a.txt" @$WS/a.txt | diff $WS/a.txt "world" -> "there"`,
		`tool_call_update c2 in_progress`,
		`tool_call_update c2 completed "Edited a.txt" | diff $WS/a.txt "hello\nworld\n" -> "hello\nthere\n"`,
		`tool_call c3 pending execute "echo hi" | text "Say hi"`,
		`tool_call_update c3 in_progress`,
		"tool_call_update c3 completed | text \"```\\nhi\\n```\\nexit code 0\"",
		`tool_call c4 pending execute "rm a.txt" | text "Remove a.txt"`,
		`tool_call_update c4 failed | text "Tool call denied: the user rejected it"`,
		`tool_call c5 pending execute "ls" | text "List"`,
		`tool_call_update c5 in_progress`,
		"tool_call_update c5 completed | text \"```\\na.txt\\n```\\nexit code 0\"",
		`tool_call c6 pending execute "ls" | text "List again"`,
		`tool_call_update c6 in_progress`,
		"tool_call_update c6 completed | text \"```\\na.txt\\n```\\nexit code 0\"",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("updates:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// Three asks: c6 was covered by the allow_always answer to c5.
	var asked []string
	for _, a := range asks {
		asked = append(asked, string(a.ToolCall.ToolCallId)+" "+*a.ToolCall.Title)
		if a.SessionId != sess.SessionId {
			t.Errorf("ask in session %q", a.SessionId)
		}
		var ids []string
		for _, o := range a.Options {
			ids = append(ids, string(o.OptionId)+"="+string(o.Kind))
		}
		if got := strings.Join(ids, ","); got != "allow_once=allow_once,allow_always=allow_always,reject_once=reject_once,reject_always=reject_always" {
			t.Errorf("options %s", got)
		}
		if a.ToolCall.Status == nil || *a.ToolCall.Status != acpsdk.ToolCallStatusPending || a.ToolCall.Kind == nil || *a.ToolCall.Kind != acpsdk.ToolKindExecute {
			t.Errorf("ask toolCall %+v", a.ToolCall)
		}
	}
	if got, want := strings.Join(asked, "; "), "c3 echo hi; c4 rm a.txt; c5 ls"; got != want {
		t.Errorf("asks: %s, want %s", got, want)
	}
	if n := len(asks); n == 3 && asks[2].Options[1].Name != "Always allow bash `ls`" {
		t.Errorf("allow_always option named %q", asks[2].Options[1].Name)
	}

	// rawInput and rawOutput: the read's arguments, and its final result.
	var raw map[string]any
	b, _ := json.Marshal(updates[0].ToolCall.RawInput)
	if err := json.Unmarshal(b, &raw); err != nil || raw["path"] != "a.txt" || raw["offset"] != float64(2) {
		t.Errorf("rawInput %s", b)
	}
	b, _ = json.Marshal(updates[2].ToolCallUpdate.RawOutput)
	var res tools.Result
	if err := json.Unmarshal(b, &res); err != nil || res.CallID != "c1" || res.IsError || len(res.Content) != 1 || res.Content[0].Text != "world\n" {
		t.Errorf("rawOutput %s", b)
	}
	b, _ = json.Marshal(updates[10].ToolCallUpdate.RawOutput)
	if err := json.Unmarshal(b, &res); err != nil || !res.IsError || res.Error == nil || res.Error.Code != "APPROVAL_REJECTED" {
		t.Errorf("rejected rawOutput %s", b)
	}
	if len(agent.results) != 1 || agent.results[0][3].Error == nil || agent.results[0][3].Error.Code != "APPROVAL_REJECTED" {
		t.Errorf("agent results %+v", agent.results)
	}
}

// TestE2E_SessionCancelWhileAskingAnswersCancelled: the user cancels the
// turn (session/cancel) while a permission request is open and the client
// never answers it: the call fails without running, and the prompt ends
// as cancelled.
func TestE2E_SessionCancelWhileAskingAnswersCancelled(t *testing.T) {
	r := newRig(t, acp.Config{Approval: true})
	var cc *acpsdk.ClientSideConnection
	client := &testClient{answer: func(ctx context.Context, q acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
		if err := cc.Cancel(ctx, acpsdk.CancelNotification{SessionId: q.SessionId}); err != nil {
			return acpsdk.RequestPermissionResponse{}, err
		}
		<-ctx.Done() // never answers; the agent withdraws the request
		return acpsdk.RequestPermissionResponse{Outcome: acpsdk.NewRequestPermissionOutcomeCancelled()}, nil
	}}
	cc, agent := wire(t, r, client)
	ctx := context.Background()
	if _, err := cc.Initialize(ctx, acpsdk.InitializeRequest{ProtocolVersion: acpsdk.ProtocolVersionNumber}); err != nil {
		t.Fatal(err)
	}
	sess, err := cc.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: r.ws, McpServers: []acpsdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	resp := prompt(t, cc, sess.SessionId,
		scriptedCall{"c1", "bash", args(map[string]any{"command": "touch ran", "description": "Touch"})},
		scriptedCall{"c2", "bash", args(map[string]any{"command": "touch ran2", "description": "Touch"})},
	)
	if resp.StopReason != acpsdk.StopReasonCancelled {
		t.Errorf("stop reason %q", resp.StopReason)
	}
	updates, asks := client.recorded()
	got := summaries(r.ws, updates)
	want := []string{
		`tool_call c1 pending execute "touch ran" | text "Touch"`,
		`tool_call_update c1 failed | text "Tool call aborted before it started: context canceled"`,
		`tool_call c2 pending execute "touch ran2" | text "Touch"`,
		`tool_call_update c2 failed | text "Tool call aborted before it started: context canceled"`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("updates:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(asks) != 1 {
		t.Errorf("%d asks, want 1 (the turn was cancelled before c2)", len(asks))
	}
	for _, res := range agent.results[0] {
		if !res.IsError {
			t.Errorf("a call ran: %+v", res)
		}
	}
}
