package hooks_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/hooks"
	"github.com/dsh-go/dsh/plugins/tools"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// policyHost boots a registry with the test policy: Bash commands holding
// "rm -rf" are denied, Write asks, mcp__memory__* is explicitly allowed
// (without calling next), and a result holding "sk-live" is blocked while
// every Bash result gets additional context.
func policyHost(t testing.TB) *tools.Registry {
	t.Helper()
	reg, _ := policyHostRoot(t)
	return reg
}

// policyHostRoot is policyHost with the host's root context.
func policyHostRoot(t testing.TB) (*tools.Registry, *host.Context) {
	t.Helper()
	h := host.New()
	t.Cleanup(func() { _ = h.Close() })
	if _, err := h.Root().Plugin(tools.Plugin, tools.Config{Mode: tools.Native}); err != nil {
		t.Fatal(err)
	}
	reg, err := tools.Service.Get(h.Root())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := host.OnWaterfall(h.Root(), tools.PreExecute, func(ctx context.Context, x *tools.Execution, next tools.PreNext) (tools.PreDecision, error) {
		switch {
		case x.Name() == "Bash" && strings.Contains(x.Arg("command").String(), "rm -rf"):
			return tools.Denied("rm -rf is not allowed"), nil
		case x.Name() == "Write":
			return tools.Asked("writes need a look"), nil
		case strings.HasPrefix(x.Name(), "mcp__memory__"):
			return tools.Allowed(), nil
		}
		return next(ctx)
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := host.OnWaterfall(h.Root(), tools.PostExecute, func(ctx context.Context, in tools.PostInput, next tools.PostNext) (tools.PostDecision, error) {
		r := in.Result()
		if len(r.Content) > 0 && strings.Contains(r.Content[0].Text, "sk-live") {
			return tools.PostDecision{Kind: tools.Block, Feedback: "the output holds a live key", AdditionalContext: "do not print .env files"}, nil
		}
		if in.Execution().Name() == "Bash" {
			return tools.PostDecision{Kind: tools.Accept, AdditionalContext: "Bash ran under dsh"}, nil
		}
		return next(ctx)
	}); err != nil {
		t.Fatal(err)
	}
	return reg, h.Root()
}

func loaderOf(pol hooks.Policy) hooks.Loader {
	return func(context.Context, hooks.Payload) (hooks.Policy, func(), error) { return pol, nil, nil }
}

func run(t testing.TB, f hooks.Format, stdin []byte, load hooks.Loader, o hooks.Options) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := hooks.Run(context.Background(), f, bytes.NewReader(stdin), &out, &errb, load, o)
	return out.String(), errb.String(), code
}

func readFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The recorded payloads of both formats, each answered by the test policy.
func TestRecordedPayloadsAreAnsweredInTheirFormat(t *testing.T) {
	reg := policyHost(t)
	cases := []struct {
		format hooks.Format
		file   string
		want   string
	}{
		{hooks.ClaudeCode, "claude-code/pre_bash.json",
			`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"Tool call denied: rm -rf is not allowed"}}`},
		{hooks.ClaudeCode, "claude-code/pre_write.json",
			`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"dsh policy requires approval: writes need a look"}}`},
		{hooks.ClaudeCode, "claude-code/pre_mcp.json",
			`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}`},
		{hooks.ClaudeCode, "claude-code/post_bash.json",
			`{"decision":"block","reason":"the output holds a live key","hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"do not print .env files"}}`},
		{hooks.Codex, "codex/pre_bash.json",
			`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"Tool call denied: rm -rf is not allowed"}}`},
		{hooks.Codex, "codex/pre_apply_patch.json", `{}`},
		{hooks.Codex, "codex/post_bash.json",
			`{"decision":"block","reason":"the output holds a live key","hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"do not print .env files"}}`},
	}
	for _, tc := range cases {
		t.Run(string(tc.format)+"/"+tc.file, func(t *testing.T) {
			out, errOut, code := run(t, tc.format, readFile(t, tc.file), loaderOf(reg), hooks.Options{})
			if code != 0 || errOut != "" {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
			if out != tc.want+"\n" {
				t.Fatalf("answer\n%s\nwant\n%s", out, tc.want)
			}
		})
	}
}

func pre(tool, input string) []byte {
	return []byte(`{"hook_event_name":"PreToolUse","tool_name":"` + tool + `","tool_input":` + input + `,"tool_use_id":"t1"}`)
}

func TestPreToolUse_DecisionMapping(t *testing.T) {
	reg := policyHost(t)
	cases := []struct {
		name   string
		format hooks.Format
		tool   string
		input  string
		want   string
	}{
		{"no policy decided: no decision, the agent's own permissions apply", hooks.ClaudeCode, "Read", `{"file_path":"/a"}`, `{}`},
		{"Codex cannot ask: an ask is denied with the reason", hooks.Codex, "Write", `{"file_path":"/a","content":""}`,
			`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"dsh policy requires approval: writes need a look (Codex hooks cannot ask, so dsh denies)"}}`},
		{"Codex has no allow without updatedInput: an explicit allow is no decision", hooks.Codex, "mcp__memory__read_graph", `{}`, `{}`},
		{"arguments the pipeline rejects deny", hooks.ClaudeCode, "Read", `{"x":"` + strings.Repeat("a", 5<<20) + `"}`, "INVALID_ARGS"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, _, code := run(t, tc.format, pre(tc.tool, tc.input), loaderOf(reg), hooks.Options{})
			if code != 0 {
				t.Fatalf("exit %d", code)
			}
			if tc.want == "INVALID_ARGS" {
				if !strings.Contains(out, `"permissionDecision":"deny"`) || !strings.Contains(out, "larger than the 4194304-byte limit") {
					t.Fatalf("answer %.300s, want a deny naming the size limit", out)
				}
				return
			}
			if out != tc.want+"\n" {
				t.Fatalf("answer\n%s\nwant\n%s", out, tc.want)
			}
		})
	}
}

func TestPostToolUse_AdditionalContextWithoutBlock(t *testing.T) {
	reg := policyHost(t)
	in := []byte(`{"hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_response":{"stdout":"a\nb\n"}}`)
	out, _, code := run(t, hooks.ClaudeCode, in, loaderOf(reg), hooks.Options{})
	want := `{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"Bash ran under dsh"}}` + "\n"
	if code != 0 || out != want {
		t.Fatalf("exit %d, answer %s", code, out)
	}
	in = []byte(`{"hook_event_name":"PostToolUse","tool_name":"Read","tool_input":{},"tool_response":"fine"}`)
	if out, _, _ := run(t, hooks.ClaudeCode, in, loaderOf(reg), hooks.Options{}); out != "{}\n" {
		t.Fatalf("nothing to say: %s", out)
	}
}

// Bad input: a clear error, and a fail-closed answer. Without a known event
// the answer is exit 2 with the reason on stderr; with one, the event's JSON.
func TestBadInputFailsClosed(t *testing.T) {
	reg := policyHost(t)
	big := append([]byte(`{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"`), bytes.Repeat([]byte("a"), hooks.MaxPayloadBytes)...)
	big = append(big, `"}}`...)
	cases := []struct {
		name    string
		in      []byte
		code    int
		stdout  string // substring; "" = must be empty
		stderrs string
	}{
		{"not JSON", readFile(t, "bad/not_json.txt"), 2, "", "not lossless JSON"},
		{"empty", nil, 2, "", "the payload is empty"},
		{"not an object", []byte(`["PreToolUse"]`), 2, "", "a JSON array, not an object"},
		{"unknown event", readFile(t, "bad/unknown_event.json"), 2, "", `unknown event "Stop"`},
		{"no event", []byte(`{"tool_name":"Bash","tool_input":{}}`), 2, "", `field "hook_event_name": missing`},
		{"oversized", big, 2, "", "larger than"},
		{"duplicate keys", readFile(t, "bad/duplicate_key.json"), 2, "", "duplicate"},
		{"duplicate key in tool_input", pre("Bash", `{"command":"ls","command":"rm -rf ~"}`), 2, "", "duplicate member name"},
		{"lone surrogate in tool_input", pre("Read", `{"file_path":"/etc/pass\udc00wd"}`), 2, "", "lone surrogate"},
		{"missing tool_input", readFile(t, "bad/missing_tool_input.json"), 0, `"permissionDecision":"deny"`, `field "tool_input": missing`},
		{"tool_input not an object", pre("Bash", `"ls"`), 0, `"permissionDecision":"deny"`, `not an object`},
		{"empty tool_name", pre("", `{}`), 0, `"permissionDecision":"deny"`, `field "tool_name": empty`},
		{"tool_use_id not a string", []byte(`{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{},"tool_use_id":7}`), 0, `"permissionDecision":"deny"`, `field "tool_use_id"`},
		{"post without tool_response", []byte(`{"hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{}}`), 0, `"decision":"block"`, `field "tool_response": missing`},
	}
	for _, f := range hooks.Formats {
		for _, tc := range cases {
			t.Run(string(f)+"/"+tc.name, func(t *testing.T) {
				out, errOut, code := run(t, f, tc.in, loaderOf(reg), hooks.Options{})
				if code != tc.code {
					t.Fatalf("exit %d, want %d (stdout %q, stderr %q)", code, tc.code, out, errOut)
				}
				if tc.stdout == "" && out != "" || !strings.Contains(out, tc.stdout) {
					t.Fatalf("stdout %q, want %q", out, tc.stdout)
				}
				if !strings.Contains(errOut, tc.stderrs) || !strings.HasPrefix(errOut, "dsh hook: ") {
					t.Fatalf("stderr %q, want it to say %q", errOut, tc.stderrs)
				}
				if tc.code == 0 {
					var a struct {
						Reason   string `json:"reason"`
						Specific struct {
							Reason string `json:"permissionDecisionReason"`
						} `json:"hookSpecificOutput"`
					}
					if err := json.Unmarshal([]byte(out), &a); err != nil {
						t.Fatal(err)
					}
					if got := a.Reason + a.Specific.Reason; !strings.Contains(got, tc.stderrs) || got != strings.TrimSuffix(errOut, "\n") {
						t.Fatalf("the JSON answer's reason %q does not give %q as stderr %q does", got, tc.stderrs, errOut)
					}
				}
			})
		}
	}
}

func TestLoaderFailureFailsClosed(t *testing.T) {
	fail := func(context.Context, hooks.Payload) (hooks.Policy, func(), error) {
		return nil, nil, errors.New(`dsh.json: unknown key "permisions"`)
	}
	out, errOut, code := run(t, hooks.ClaudeCode, pre("Read", `{}`), fail, hooks.Options{})
	if code != 0 || !strings.Contains(out, `"permissionDecision":"deny"`) || !strings.Contains(out, `loading the policy: dsh.json: unknown key \"permisions\"`) || errOut == "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	boom := func(context.Context, hooks.Payload) (hooks.Policy, func(), error) { panic("config reader exploded") }
	out, _, _ = run(t, hooks.Codex, pre("Read", `{}`), boom, hooks.Options{})
	if !strings.Contains(out, `"permissionDecision":"deny"`) || !strings.Contains(out, "the policy panicked: config reader exploded") {
		t.Fatalf("panicking loader: %s", out)
	}
	released := false
	rel := func(context.Context, hooks.Payload) (hooks.Policy, func(), error) {
		return policyHost(t), func() { released = true }, nil
	}
	if _, _, code := run(t, hooks.ClaudeCode, pre("Read", `{}`), rel, hooks.Options{}); code != 0 || !released {
		t.Fatalf("exit %d, released %v", code, released)
	}
}

// hangPolicy never answers until released.
type hangPolicy struct{ release chan struct{} }

func (p hangPolicy) Check(context.Context, tools.Call) tools.Verdict {
	<-p.release
	return tools.Verdict{Kind: tools.Allow}
}

func (p hangPolicy) CheckPost(_ context.Context, _ tools.Call, r tools.Result) tools.Result {
	<-p.release
	return r
}

// A policy that does not answer in time is a denial (the agent's own
// timeout would let the call through).
func TestPolicyTimeoutFailsClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := hangPolicy{release: make(chan struct{})}
		defer close(p.release)
		out, _, code := run(t, hooks.ClaudeCode, pre("Read", `{}`), loaderOf(p), hooks.Options{Timeout: 3 * time.Second})
		if code != 0 || !strings.Contains(out, `"permissionDecision":"deny"`) || !strings.Contains(out, "did not answer within 3s") {
			t.Fatalf("exit %d, answer %s", code, out)
		}
		post := []byte(`{"hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{},"tool_response":""}`)
		out, _, _ = run(t, hooks.Codex, post, loaderOf(p), hooks.Options{})
		if !strings.Contains(out, `"decision":"block"`) || !strings.Contains(out, "within 10s") {
			t.Fatalf("post answer %s", out)
		}
	})
}

func TestParseFormat(t *testing.T) {
	for _, f := range hooks.Formats {
		if g, err := hooks.ParseFormat(string(f)); err != nil || g != f {
			t.Fatalf("%s: %v %v", f, g, err)
		}
	}
	if _, err := hooks.ParseFormat("cursor"); err == nil || !strings.Contains(err.Error(), "claude-code or codex") {
		t.Fatalf("unknown format: %v", err)
	}
}

// sleepPolicy explicitly allows after sleeping d, ignoring ctx.
type sleepPolicy struct{ d time.Duration }

func (p sleepPolicy) Check(context.Context, tools.Call) tools.Verdict {
	time.Sleep(p.d)
	return tools.Verdict{Kind: tools.Allow}
}

func (p sleepPolicy) CheckPost(_ context.Context, _ tools.Call, r tools.Result) tools.Result {
	time.Sleep(p.d)
	return r
}

// An answer that arrives at the deadline is not trusted, whichever of the
// two Run sees first.
func TestPolicyAnswerAtTheDeadlineIsNotTrusted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for i := range 50 {
			out, _, _ := run(t, hooks.ClaudeCode, pre("Read", `{}`), loaderOf(sleepPolicy{d: time.Second}), hooks.Options{Timeout: time.Second})
			if d := out; !strings.Contains(d, `"permissionDecision":"deny"`) {
				t.Fatalf("run %d: %s", i, out)
			}
		}
	})
}

// blockingReader never returns until released, like an agent that does
// not close the hook's stdin.
type blockingReader struct{ release chan struct{} }

func (r blockingReader) Read([]byte) (int, error) {
	<-r.release
	return 0, errors.New("released")
}

// A payload that never completes is a blocking error (exit 2) within the
// time budget.
func TestUnreadPayloadFailsClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := blockingReader{release: make(chan struct{})}
		defer close(r.release)
		var out, errb bytes.Buffer
		code := hooks.Run(context.Background(), hooks.Codex, r, &out, &errb, loaderOf(policyHost(t)), hooks.Options{Timeout: 2 * time.Second})
		if code != 2 || out.Len() != 0 || !strings.Contains(errb.String(), "no complete payload on stdin within 2s") {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
		}
	})
}

// The caller's cancellation (SIGTERM in dsh) is a fail-closed answer too.
func TestCancelledHookFailsClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := hangPolicy{release: make(chan struct{})}
		defer close(p.release)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		var out, errb bytes.Buffer
		code := hooks.Run(ctx, hooks.ClaudeCode, bytes.NewReader(pre("Read", `{}`)), &out, &errb, loaderOf(p), hooks.Options{})
		denied := code == 0 && strings.Contains(out.String(), `"permissionDecision":"deny"`) || code == 2 && out.Len() == 0
		if !denied || !strings.Contains(errb.String(), "the hook was cancelled before the") {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
		}
	})
}

// A payload is read for matching only: numbers and strings JSON cannot
// carry losslessly, and duplicate members of tool_response, do not fail
// the hook (they blocked legitimate calls).
func TestPayloadReadForMatchingOnly(t *testing.T) {
	reg := policyHost(t)
	for _, tc := range []struct{ name, in string }{
		{"64-bit id in tool_input", `{"hook_event_name":"PreToolUse","tool_name":"mcp__db__get","tool_input":{"id":1234567890123456789}}`},
		{"integer beyond 2^53 in tool_response", `{"hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_response":{"n":1234567890123456789}}`},
		{"lone surrogate in tool_response", `{"hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_response":"a\ud800b"}`},
		{"surrogate pair and escaped backslash-u in tool_input", `{"hook_event_name":"PreToolUse","tool_name":"mcp__x__y","tool_input":{"s":"\ud83d\ude00 \\ud800","n":1234567890123456789}}`},
		{"duplicate key in tool_response", `{"hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_response":{"a":1,"a":2}}`},
	} {
		for _, f := range hooks.Formats {
			t.Run(string(f)+"/"+tc.name, func(t *testing.T) {
				out, errOut, code := run(t, f, []byte(tc.in), loaderOf(reg), hooks.Options{})
				if code != 0 || strings.Contains(out, "deny") || strings.Contains(out, "block") {
					t.Fatalf("exit %d, stdout %q, stderr %q; want an answer that does not block", code, out, errOut)
				}
			})
		}
	}
	p, err := hooks.ParsePayload([]byte(`{"hook_event_name":"PreToolUse","tool_name":"x","tool_input":{"id":1234567890123456789},"cwd":"/w"}`))
	if err != nil || string(p.ToolInput) != `{"id":"1234567890123456789"}` || p.Cwd != "/w" {
		t.Fatalf("ParsePayload = %s %q, %v; want the id's digits as text and the cwd", p.ToolInput, p.Cwd, err)
	}
}
