package mcpserver

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/internal/safeerr"
	"github.com/dsh-go/dsh/internal/textcut"
	"github.com/dsh-go/dsh/plugins/codemode"
	"github.com/dsh-go/dsh/plugins/tools"
	"github.com/dsh-go/dsh/plugins/tools/cardtext"
)

// session is one MCP session: its agent scope, its own mcp.Server (whose
// tool table mirrors what the scope sees), and the goroutines that keep
// the table current and clean up when the session ends.
type session struct {
	srv   *Server
	key   host.ScopeKey
	scope *host.Context
	info  SessionInfo
	mcp   *mcp.Server
	// rules are the session's own Hidden and Access (Config.SessionRules).
	rules SessionRules

	ss atomic.Pointer[mcp.ServerSession]

	dirty   chan struct{} // cap 1: the registry changed
	done    chan struct{} // closed when the connection has ended
	cleaned chan struct{} // closed when cleanup has finished

	// current is the tool table as last synced: name → fingerprint. Only
	// the goroutine syncing touches it (newSession, then run).
	current map[string]string

	callSeq atomic.Uint64

	// subs are the session's resource subscriptions by namespaced URI;
	// subsClosed is set when the session has ended (Server.subMu).
	subs       map[string]*upSub
	subsClosed bool

	// ctx is cancelled when the session is closed from this side, which
	// cancels its calls in flight (the go-sdk's Close waits for them).
	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	inflight int
	closing  bool
	idle     chan struct{} // closed when closing and inflight reaches 0

	started              atomic.Bool
	startOnce, cleanOnce sync.Once
}

func (x *session) markDirty() {
	select {
	case x.dirty <- struct{}{}:
	default:
	}
}

// start records the connected session and starts its goroutines.
func (x *session) start(ss *mcp.ServerSession) {
	x.startOnce.Do(func() {
		x.started.Store(true)
		x.ss.CompareAndSwap(nil, ss)
		x.srv.wg.Add(2)
		go func() {
			defer x.srv.wg.Done()
			_ = ss.Wait()
			close(x.done)
		}()
		go func() {
			defer x.srv.wg.Done()
			for {
				select {
				case <-x.dirty:
					x.sync()
				case <-x.done:
					x.cleanup()
					return
				}
			}
		}()
	})
}

// close ends the session and waits for its cleanup: its calls in flight
// are cancelled first.
func (x *session) close() error {
	x.cancel()
	var err error
	if ss := x.ss.Load(); ss != nil {
		err = ss.Close()
		if safeerr.Is(err, mcp.ErrConnectionClosed) {
			err = nil
		}
	}
	if x.started.Load() {
		<-x.cleaned // the session's goroutine cleans up once Wait returns
	} else {
		x.cleanup()
	}
	return err
}

// cleanup refuses new calls, waits for the calls in flight (their
// contexts are cancelled by the ended connection), removes the session and
// disposes its scope.
func (x *session) cleanup() {
	x.cleanOnce.Do(func() {
		x.cancel()
		x.mu.Lock()
		x.closing = true
		x.idle = make(chan struct{})
		if x.inflight == 0 {
			close(x.idle)
		}
		idle := x.idle
		x.mu.Unlock()
		<-idle
		x.srv.mu.Lock()
		delete(x.srv.sessions, x.key)
		x.srv.mu.Unlock()
		x.srv.releaseSubscriptions(x)
		if err := x.scope.Fiber().Dispose(); err != nil {
			x.srv.log.Warn().Err(err).Str("scope", string(x.key)).Msg("disposing an MCP session's scope")
		}
		close(x.cleaned)
	})
}

// errClosing refuses a call on a session being closed.
var errClosing = errors.New("the session is closing")

// enter admits a call: refused when the session is closing or a call
// limit is reached (a JSON-RPC error with code CodeLimit).
func (x *session) enter() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closing {
		return errClosing
	}
	if m := x.srv.cfg.MaxCallsPerSession; m > 0 && x.inflight >= m {
		return &jsonrpc.Error{Code: CodeLimit, Message: fmt.Sprintf("too many calls in flight on this session (limit %d); retry when one has returned", m)}
	}
	if m := x.srv.cfg.MaxCalls; m > 0 && x.srv.calls.Add(1) > int64(m) {
		x.srv.calls.Add(-1)
		return &jsonrpc.Error{Code: CodeLimit, Message: fmt.Sprintf("too many calls in flight on this gateway (limit %d); retry later", m)}
	} else if m <= 0 {
		x.srv.calls.Add(1)
	}
	x.inflight++
	return nil
}

func (x *session) exit() {
	x.srv.calls.Add(-1)
	x.mu.Lock()
	defer x.mu.Unlock()
	x.inflight--
	if x.closing && x.inflight == 0 {
		close(x.idle)
	}
}

// sync makes the mcp.Server's tool table what the scope sees now; the
// go-sdk sends tools/list_changed (debounced) when it changes.
func (x *session) sync() {
	reg := x.srv.reg
	want := map[string]*mcp.Tool{}
	fps := map[string]string{}
	codeOnly := reg.ModeOf(x.key) == tools.Code // the agent's own PresentAs, else the registry's mode
	for _, t := range reg.Visible(x.key) {
		if codeOnly && t.Name() != codemode.RunCodeName {
			continue // under code, end tools are reached from run_code only
		}
		if t.Name() != codemode.RunCodeName && x.srv.hiddenIn(x, t.Name()) {
			continue
		}
		desc := t.Description()
		if t.Name() == codemode.RunCodeName {
			if sdk := codemode.SDKWithout(reg, x.key, x.hiddenFunc()); sdk != "" {
				// An MCP client has no tools:sdk prompt section: the
				// declarations follow in the description itself.
				desc = strings.Replace(desc, "in the tools:sdk section of the system prompt", "below", 1) + "\n\n" + sdk
			}
		}
		params, ok := objectSchema(t.Parameters())
		if !ok {
			x.srv.log.Warn().Str("tool", t.Name()).Msg("not served: its parameters schema is not an object schema")
			continue
		}
		mt := &mcp.Tool{Name: t.Name(), Description: desc, InputSchema: params}
		fp := desc + "\x00" + string(params)
		if out := t.OutputSchemaCompiled(); out != nil && out.ObjectRoot() {
			// A declared output with an object root is published (MCP
			// requires one); its value is the result's structuredContent.
			mt.OutputSchema = out.JSON()
			fp += "\x00out:" + string(mt.OutputSchema.(json.RawMessage))
		}
		if a := t.Annotations(); a != nil {
			mt.Title = a.Title
			destructive, openWorld := a.Destructive, a.OpenWorld
			mt.Annotations = &mcp.ToolAnnotations{Title: a.Title, ReadOnlyHint: a.ReadOnly,
				DestructiveHint: &destructive, IdempotentHint: a.Idempotent, OpenWorldHint: &openWorld}
			mt.Meta = mcp.Meta{MetaAnnotations: map[string]bool{"trusted": a.Trusted}}
			b, _ := json.Marshal(a)
			fp += "\x00" + string(b)
		}
		want[t.Name()] = mt
		fps[t.Name()] = fp
	}
	var removed []string
	for name := range x.current {
		if _, ok := want[name]; !ok {
			removed = append(removed, name)
		}
	}
	if len(removed) > 0 {
		x.mcp.RemoveTools(removed...)
	}
	for name, t := range want {
		if x.current[name] == fps[name] {
			continue
		}
		if err := addTool(x.mcp, t, x.handle); err != nil {
			x.srv.log.Warn().Err(err).Str("tool", name).Msg("not served")
			delete(fps, name)
		}
	}
	x.current = fps
}

func addTool(s *mcp.Server, t *mcp.Tool, h mcp.ToolHandler) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%v", v)
		}
	}()
	s.AddTool(t, h)
	return nil
}

// objectSchema returns the parameters with "type": "object" (added when
// absent, as the registry's default schema implies it); ok is false for a
// schema of another type.
func objectSchema(p json.RawMessage) (json.RawMessage, bool) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(p, &m); err != nil {
		return nil, false
	}
	typ, has := m["type"]
	if has {
		return p, string(typ) == `"object"`
	}
	m["type"] = json.RawMessage(`"object"`)
	b, err := json.Marshal(m)
	return b, err == nil
}

// middleware records the session from its first request (so an ask can
// reach the client even before start has run), and answers every
// tools/call with handle, whether or not the name is in the session's tool
// table: the pipeline, not the table, is what decides (an unknown name is
// its UNKNOWN_TOOL result), and a call racing a table update still gets
// the registry's current answer.
func (x *session) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if rctx, ok := x.srv.requestContext(req); ok && !strings.HasPrefix(method, "notifications/") {
			// A request the client abandoned (its HTTP request went
			// away) is cancelled, cancel notification or not. A
			// notification is answered (202) before it is handled: its
			// request is gone by design.
			var cancel context.CancelFunc
			ctx, cancel = context.WithCancel(ctx)
			defer cancel()
			defer context.AfterFunc(rctx, cancel)()
		}
		if x.ss.Load() == nil {
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok {
				x.ss.CompareAndSwap(nil, ss)
			}
		}
		if method == "tools/call" {
			if r, ok := req.(*mcp.CallToolRequest); ok && r.Params != nil {
				return x.handle(ctx, r)
			}
		}
		if x.srv.cfg.Upstream != nil {
			if r, ok, err := x.srv.proxy(ctx, x, method, req); ok {
				return r, err
			}
		}
		return next(ctx, method, req)
	}
}

// handle runs one tools/call through the registry's full pipeline, as the
// session's agent.
func (x *session) handle(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if err := x.enter(); err != nil {
		return nil, err
	}
	defer x.exit()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(x.ctx, cancel)()
	if code, ok := runCodeProgram(req.Params.Name, req.Params.Arguments); ok {
		// An ask on a call the program makes shows the program.
		ctx = context.WithValue(ctx, programKey{}, code)
	}
	call := tools.Call{
		ID:        strconv.FormatUint(x.callSeq.Add(1), 10),
		Name:      req.Params.Name,
		Arguments: req.Params.Arguments,
		Agent:     x.key,
	}
	return toMCP(x.srv.reg.Execute(ctx, call)), nil
}

// toMCP maps a pipeline result to MCP: content blocks, isError, and the
// error class and additional context in _meta.
func toMCP(r tools.Result) *mcp.CallToolResult {
	out := &mcp.CallToolResult{IsError: r.IsError, Content: make([]mcp.Content, 0, len(r.Content))}
	for _, c := range r.Content {
		out.Content = append(out.Content, contentToMCP(c))
	}
	if !r.IsError {
		switch {
		case len(r.Value) > 0 && r.Value[0] == '{':
			// The value of a declared output with an object root, the
			// one whose schema is published.
			out.StructuredContent = r.Value
		case r.Value == nil:
			if sc := structured(r.Meta); sc != nil {
				out.StructuredContent = sc
			}
		}
	}
	if r.Error != nil || len(r.AdditionalContext) > 0 {
		out.Meta = mcp.Meta{}
		if r.Error != nil {
			out.Meta[MetaError] = map[string]string{"code": string(r.Error.Code), "name": r.Error.Name}
		}
		if len(r.AdditionalContext) > 0 {
			out.Meta[MetaAdditionalContext] = r.AdditionalContext
		}
	}
	return out
}

// structured returns the "structuredContent" member of a result's Meta
// (where mounted MCP tools keep their server's structured content), or
// nil.
func structured(meta json.RawMessage) json.RawMessage {
	if len(meta) == 0 || meta[0] != '{' {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(meta, &m) != nil {
		return nil
	}
	if sc, ok := m["structuredContent"]; ok && string(sc) != "null" {
		return sc
	}
	return nil
}

func contentToMCP(c tools.Content) mcp.Content {
	switch c.Type {
	case tools.ContentText:
		return &mcp.TextContent{Text: c.Text}
	case tools.ContentImage, tools.ContentAudio:
		data, err := base64.StdEncoding.DecodeString(c.Data)
		if err != nil {
			return &mcp.TextContent{Text: "[" + c.Type + " block with invalid base64 data]"}
		}
		if c.Type == tools.ContentImage {
			return &mcp.ImageContent{Data: data, MIMEType: c.MIMEType}
		}
		return &mcp.AudioContent{Data: data, MIMEType: c.MIMEType}
	case tools.ContentResource:
		rc := &mcp.ResourceContents{URI: c.URI, MIMEType: c.MIMEType, Text: c.Text}
		if c.Data != "" {
			blob, err := base64.StdEncoding.DecodeString(c.Data)
			if err != nil {
				return &mcp.TextContent{Text: "[resource block with invalid base64 data]"}
			}
			rc.Blob = blob
		}
		return &mcp.EmbeddedResource{Resource: rc}
	case tools.ContentResourceLink:
		return &mcp.ResourceLink{URI: c.URI, Name: c.Name, Title: c.Title, Description: c.Description, MIMEType: c.MIMEType}
	}
	return &mcp.TextContent{Text: c.Text}
}

// elicitable returns the connected session when its client declared form
// elicitation in its initialize request, else nil.
func (x *session) elicitable() *mcp.ServerSession {
	ss := x.ss.Load()
	if ss == nil {
		return nil
	}
	p := ss.InitializeParams()
	if p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil {
		return nil
	}
	if e := p.Capabilities.Elicitation; e.Form == nil && e.URL != nil {
		return nil // URL elicitation only
	}
	return ss
}

// confirmSchema is the form of an approval elicitation: nothing to fill
// in, only accept, decline or cancel.
var confirmSchema = json.RawMessage(`{"type":"object","properties":{}}`)

// elicit asks the client: accept → allowed-once, decline → rejected,
// cancel → cancelled. Anything else fails closed (APPROVAL_FAILED).
func elicit(ctx context.Context, ss *mcp.ServerSession, req tools.ApprovalRequest) (tools.ApprovalOutcome, error) {
	res, err := ss.Elicit(ctx, &mcp.ElicitParams{
		Mode:            "form",
		Message:         approvalMessage(ctx, req),
		RequestedSchema: confirmSchema,
		Meta: mcp.Meta{MetaApproval: map[string]string{
			"tool": req.Tool, "callId": req.CallID, "reason": req.Reason,
		}},
	})
	if ctxErr := ctx.Err(); ctxErr != nil {
		return "", ctxErr
	}
	if err != nil {
		return "", fmt.Errorf("elicitation failed: %w", err)
	}
	switch res.Action {
	case "accept":
		return tools.AllowedOnce, nil
	case "decline":
		return tools.Rejected, nil
	case "cancel":
		return tools.Cancelled, nil
	}
	return "", fmt.Errorf("the client answered the elicitation with an unknown action %q", cardtext.Line(textcut.Truncate(res.Action, 64)))
}

// approvalMessage is the elicitation's text: the tool, the rendered call
// card and the reason, sanitized. A run_code call shows its whole program
// (a card cuts it), and a call a served run_code program makes shows the
// program that makes it, each with its SHA-256 and size, so the person
// approving sees everything that runs.
func approvalMessage(ctx context.Context, req tools.ApprovalRequest) string {
	var b strings.Builder
	if what, ok := ctx.Value(accessKey{}).(string); ok {
		// An ask on a resource read or a prompt get (see proxy.go).
		fmt.Fprintf(&b, "Allow this once?\n\n  %s: %s\n", cardtext.Line(req.Tool), cardtext.Line(what))
		if req.Reason != "" {
			b.WriteString("\nReason: ")
			b.WriteString(cardtext.Line(req.Reason))
		}
		return b.String()
	}
	var args []byte
	if req.Execution != nil {
		args = req.Execution.Args()
	}
	return approvalMessageArgs(ctx, req, args)
}

// approvalMessageArgs is approvalMessage for a tool call with the
// arguments args.
func approvalMessageArgs(ctx context.Context, req tools.ApprovalRequest, args []byte) string {
	var b strings.Builder
	b.WriteString("Allow this tool call once?\n\n")
	code, isProgram := runCodeProgram(req.Tool, args)
	if isProgram {
		writeProgram(&b, "The run_code program", code)
	} else {
		b.WriteString(cardtext.Call(req.Tool, args, req.Call))
		if p, ok := ctx.Value(programKey{}).(string); ok {
			b.WriteString("\n")
			writeProgram(&b, "Called by the run_code program", p)
		}
	}
	if req.Reason != "" {
		b.WriteString("\n\nReason: ")
		b.WriteString(cardtext.Line(req.Reason))
	}
	return b.String()
}

// programKey is the context key of the program of the served run_code
// call a context belongs to (its sub-calls' contexts derive from it).
type programKey struct{}

// runCodeProgram returns the program of a run_code call's arguments, and
// whether tool is run_code with a string code argument.
func runCodeProgram(tool string, args []byte) (string, bool) {
	if tool != codemode.RunCodeName {
		return "", false
	}
	var a struct {
		Code *string `json:"code"`
	}
	if json.Unmarshal(args, &a) != nil || a.Code == nil {
		return "", false
	}
	return *a.Code, true
}

// writeProgram writes a program whole, each line sanitized and marked
// with "| " (so no line of it can pose as the message's own text), under
// a heading with its SHA-256 and size.
func writeProgram(b *strings.Builder, heading, code string) {
	sum := sha256.Sum256([]byte(code))
	fmt.Fprintf(b, "%s (sha256 %s, %d bytes):\n", heading, hex.EncodeToString(sum[:]), len(code))
	for _, l := range strings.Split(strings.TrimSuffix(code, "\n"), "\n") {
		b.WriteString("  | ")
		b.WriteString(cardtext.Line(l))
		b.WriteString("\n")
	}
}
