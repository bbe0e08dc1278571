package mcpclient

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/internal/safeerr"
	"github.com/dsh-go/dsh/internal/textcut"
	"github.com/dsh-go/dsh/plugins/tools"
	"github.com/dsh-go/dsh/plugins/tools/schema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mounted is one registered tool.
type mounted struct {
	fingerprint string
	dispose     host.Disposer
}

// remote is what a mounted tool's body needs of the server's tool.
type remote struct {
	name    string // the server's name for it
	regName string
	// output is the output schema when it fits the structured-output
	// subset, else nil. It is then the mounted tool's declared output: the
	// structured content is its value, validated.
	output *schema.ValueSchema
}

// maxDescription bounds a tool description taken from a server.
const maxDescription = 16 << 10

// sync re-lists the tools of cur and makes the registered set match.
func (s *server) sync(cur *conn) error {
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.ConnectTimeout.d())
	defer cancel()
	return s.syncCtx(ctx, cur)
}

func (s *server) syncCtx(ctx context.Context, cur *conn) error {
	list, err := listTools(ctx, cur.cs)
	if err != nil {
		return fmt.Errorf("listing tools: %w", err)
	}
	originals := make([]string, 0, len(list))
	byName := make(map[string]*mcp.Tool, len(list))
	for _, t := range list {
		if t == nil || t.Name == "" {
			continue
		}
		if _, dup := byName[t.Name]; dup {
			s.log.Warn().Str("tool", t.Name).Msg("MCP server lists a tool twice; the first is mounted")
			continue
		}
		byName[t.Name] = t
		originals = append(originals, t.Name)
	}
	names := ToolNames(s.cfg.Name, originals)
	type want struct {
		def tools.Definition
		fp  string
	}
	desired := make(map[string]want, len(originals))
	for _, orig := range originals {
		def, fp, err := s.definition(byName[orig], names[orig])
		if err != nil {
			s.log.Warn().Str("tool", textcut.Truncate(orig, 128)).Err(err).Msg("MCP tool not mounted")
			continue
		}
		desired[def.Name] = want{def, fp}
	}
	for name, m := range s.mounted {
		if w, ok := desired[name]; ok && w.fp == m.fingerprint {
			continue
		}
		_ = m.dispose()
		delete(s.mounted, name)
	}
	regNames := make([]string, 0, len(desired))
	for name := range desired {
		if _, ok := s.mounted[name]; !ok {
			regNames = append(regNames, name)
		}
	}
	slices.Sort(regNames)
	for _, name := range regNames {
		w := desired[name]
		d, err := s.reg.Register(s.c, w.def)
		if err != nil {
			if safeerr.Is(err, host.ErrFiberClosed) {
				return err
			}
			s.log.Warn().Str("tool", name).Err(err).Msg("MCP tool not registered")
			continue
		}
		s.mounted[name] = &mounted{fingerprint: w.fp, dispose: d}
	}
	return nil
}

// listTools pages through tools/list, bounded by maxTools and maxPages.
func listTools(ctx context.Context, cs *mcp.ClientSession) ([]*mcp.Tool, error) {
	var out []*mcp.Tool
	cursor := ""
	for range maxPages {
		res, err := cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			return nil, err
		}
		out = append(out, res.Tools...)
		if len(out) > maxTools {
			return nil, fmt.Errorf("the server lists more than %d tools", maxTools)
		}
		if res.NextCursor == "" {
			return out, nil
		}
		cursor = res.NextCursor
	}
	return nil, fmt.Errorf("the server's tool list has more than %d pages", maxPages)
}

// definition turns the server's tool t into the registry definition named
// regName, and a fingerprint of everything it was built from.
func (s *server) definition(t *mcp.Tool, regName string) (tools.Definition, string, error) {
	fp, err := json.Marshal(t)
	if err != nil {
		return tools.Definition{}, "", fmt.Errorf("the tool cannot be encoded: %w", err)
	}
	var params json.RawMessage
	if t.InputSchema != nil {
		if params, err = json.Marshal(t.InputSchema); err != nil {
			return tools.Definition{}, "", fmt.Errorf("input schema: %w", err)
		}
	}
	rt := &remote{name: t.Name, regName: regName}
	if t.OutputSchema != nil {
		rt.output = fittingOutputSchema(t.OutputSchema)
	}
	title := t.Title
	var ann *tools.Annotations
	if a := t.Annotations; a != nil {
		if title == "" {
			title = a.Title
		}
		ann = &tools.Annotations{
			Title:       textcut.Valid(title, 256),
			ReadOnly:    a.ReadOnlyHint,
			Destructive: a.DestructiveHint == nil || *a.DestructiveHint,
			Idempotent:  a.IdempotentHint,
			OpenWorld:   a.OpenWorldHint == nil || *a.OpenWorldHint,
			Trusted:     s.cfg.Trusted,
		}
	}
	desc := textcut.Valid(t.Description, maxDescription)
	if strings.TrimSpace(desc) == "" {
		desc = textcut.Valid(title, 256)
	}
	if strings.TrimSpace(desc) == "" {
		desc = fmt.Sprintf("Tool %q of the MCP server %q.", textcut.Valid(t.Name, 256), s.cfg.Name)
	}
	def := tools.Definition{
		Name:        regName,
		Description: desc,
		Parameters:  params,
		Execute: func(ctx context.Context, exec *tools.Execution) (tools.Output, error) {
			return s.call(ctx, exec, rt)
		},
		PresentCall: s.presentCall(t.Name, textcut.Valid(title, 256), ann),
		Annotations: ann,
	}
	if rt.output != nil {
		def.OutputSchema = rt.output.JSON()
	}
	if ann != nil && ann.Trusted && ann.ReadOnly {
		def.Concurrency = tools.Parallel
	}
	if err := def.Validate(); err != nil {
		return tools.Definition{}, "", err
	}
	return def, string(fp), nil
}

// fittingOutputSchema returns an output schema compiled when it is in the
// structured-output subset with an object root (as MCP requires), else
// nil. A root "$schema" (the dialect the schema is written in, which
// servers built on zod always send) is dropped first: it constrains no
// value.
func fittingOutputSchema(s any) *schema.ValueSchema {
	out, err := json.Marshal(s)
	if err != nil {
		return nil
	}
	var root map[string]json.RawMessage
	if json.Unmarshal(out, &root) == nil {
		if d, ok := root["$schema"]; ok && len(d) > 0 && d[0] == '"' {
			delete(root, "$schema")
			if out, err = json.Marshal(root); err != nil {
				return nil
			}
		}
	}
	vs, err := schema.CompileOutputSchema(out)
	if err != nil {
		return nil
	}
	return vs
}

// presentCall returns the pending card of a mounted tool: the server and
// the tool's title, and the server's hints marked trusted or untrusted.
func (s *server) presentCall(name, title string, ann *tools.Annotations) func(json.RawMessage) tools.CallView {
	if title == "" {
		title = textcut.Valid(name, 256)
	}
	title = s.cfg.Name + ": " + title
	kind := "other"
	if ann != nil && ann.Trusted {
		kind = "execute"
		if ann.ReadOnly {
			kind = "read"
		}
	}
	var content []tools.Content
	if d := tools.DescribeAnnotations(ann); d != "" {
		content = []tools.Content{tools.Text("MCP server " + s.cfg.Name + ", hints: " + d)}
	}
	return func(args json.RawMessage) tools.CallView {
		v := tools.GenericCall{Title: title, Kind: kind, Content: slices.Clone(content)}
		if len(args) > 0 && len(args) <= 4096 && json.Valid(args) {
			v.RawInput = slices.Clone(args)
		}
		return v
	}
}

// call runs one tool call on the current session.
func (s *server) call(ctx context.Context, exec *tools.Execution, rt *remote) (tools.Output, error) {
	cur := s.conn.Load()
	if cur == nil {
		return tools.Output{}, failf(CodeServerUnavailable, "ServerUnavailable", "MCP server %q is not connected", s.cfg.Name)
	}
	// The call's context (see inflight): cancelled when the caller's is,
	// when the session is closed (closeConn: cause errSessionClosed) and
	// when CallTimeout expires (cause errCallTimeout).
	in := &inflight{parent: ctx, exec: exec, cur: cur}
	if ctx.Done() != nil || s.cfg.CallTimeout > 0 {
		in.own, in.cancel = context.WithCancelCause(ctx)
		defer in.cancel(nil)
		if s.cfg.CallTimeout > 0 {
			var stop context.CancelFunc
			in.own, stop = context.WithTimeoutCause(in.own, s.cfg.CallTimeout.d(), errCallTimeout)
			defer stop()
		}
	}
	s.mu.Lock()
	s.inflight.add(in)
	meta := cur.meta
	s.mu.Unlock()
	if cur.ctx.Err() != nil {
		// closeConn's sweep may have missed it.
		in.stop(errSessionClosed)
	}
	// Arguments is a pointer into in: a json.RawMessage put in an interface
	// would be boxed (an allocation per call); *json.RawMessage encodes
	// the same.
	in.args = in.copyArgs()
	in.params = mcp.CallToolParams{Meta: meta, Name: rt.name, Arguments: &in.args}
	res, err := cur.cs.CallTool(in, &in.params)
	s.mu.Lock()
	s.inflight.remove(in)
	if meta == nil && cur.meta == nil {
		cur.meta = encodedMeta(in.params.Meta)
	}
	s.mu.Unlock()
	if err != nil {
		return tools.Output{}, s.callError(ctx, in, cur, err)
	}
	if res == nil {
		return tools.Output{}, failf(CodeServerError, "ServerError", "MCP server %q answered with no result", s.cfg.Name)
	}
	content := convertContent(in.content[:0], res.Content)
	if res.IsError {
		return tools.Output{}, failf(CodeToolError, "ToolError", "%s", errorText(s.cfg.Name, content))
	}
	out := tools.Output{Content: content}
	if res.StructuredContent == nil && rt.output == nil {
		return out, nil
	}
	sc, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return tools.Output{}, failf(CodeInvalidOutput, "InvalidOutput", "MCP server %q: the structured content of tool %q cannot be encoded: %v", s.cfg.Name, rt.name, err)
	}
	if rt.output == nil {
		// No declared output (none, or one outside the subset): the
		// structured content is kept, unvalidated, as presentation meta.
		out.Meta, _ = json.Marshal(struct {
			StructuredContent json.RawMessage `json:"structuredContent"`
		}{sc})
		if len(out.Content) == 0 {
			out.Content = []tools.Content{tools.Text(string(sc))}
		}
		return out, nil
	}
	// The declared output: the structured content is the value. The
	// pipeline validates it too; checking here names the server that broke
	// its own schema.
	if res.StructuredContent == nil {
		return tools.Output{}, failf(CodeInvalidOutput, "InvalidOutput", "MCP server %q violated its own output schema: tool %q declares one but returned no structured content", s.cfg.Name, rt.name)
	}
	canon, vs := rt.output.Validate(sc)
	if len(vs) > 0 {
		msgs := make([]string, len(vs))
		for i, v := range vs {
			msgs[i] = v.String()
		}
		return tools.Output{}, failf(CodeInvalidOutput, "InvalidOutput", "MCP server %q violated its own output schema: the structured content of tool %q does not match it: %s", s.cfg.Name, rt.name, strings.Join(msgs, "; "))
	}
	out.Value = canon
	if len(out.Content) == 0 {
		out.Content = nil // rendered from the value
	}
	return out, nil
}

// encodedMeta returns the request _meta the SDK (v1.8.0) put in a call's
// params, m, with each value encoded as the SDK encodes it, or nil unless
// m is what the SDK puts there on a session of the 2026-07-28 protocol or
// later, and nothing else: the protocol version, the client's info and
// its capabilities. They are the session's, the same for every request on
// it, and the SDK only adds the keys a params' Meta lacks
// (injectRequestMeta), writing nothing into a Meta that has all three; it
// reads none of them back on the way out (what reads them reads the
// encoded request). So the calls after the first on a session are given
// this Meta: the same _meta on the wire, without a new map, a copy of the
// client's capabilities and their conversion, nor the encoding of those
// structures, per call. A Meta with any other key is not reused (it could
// be one call's).
func encodedMeta(m mcp.Meta) mcp.Meta {
	if len(m) != 3 {
		return nil
	}
	out := make(mcp.Meta, 3)
	for _, k := range [...]string{mcp.MetaKeyProtocolVersion, mcp.MetaKeyClientInfo, mcp.MetaKeyClientCapabilities} {
		v, ok := m[k]
		if !ok {
			return nil
		}
		// As the SDK's jsonrpc2 encodes a request: no HTML escaping.
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if enc.Encode(v) != nil {
			return nil
		}
		out[k] = json.RawMessage(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
	}
	return out
}

// copyArgs returns a copy of the call's canonical arguments as the CallTool
// arguments: in argBuf when they fit, else in an allocation of their own.
// The copy is the call's alone (never written again, never reused); the
// execution's arguments are an immutable string that the SDK must not be
// handed as bytes.
func (in *inflight) copyArgs() json.RawMessage {
	a := in.exec.ArgsString()
	if len(a) <= len(in.argBuf) {
		n := copy(in.argBuf[:], a)
		return in.argBuf[:n:n]
	}
	return json.RawMessage(a)
}

// callError classifies a failed CallTool.
func (s *server) callError(ctx, callCtx context.Context, cur *conn, err error) error {
	if ctx.Err() != nil {
		return ctx.Err() // the caller's cancellation: the pipeline says ABORTED
	}
	switch context.Cause(callCtx) {
	case errSessionClosed:
		return failf(CodeServerUnavailable, "ServerUnavailable", "MCP server %q: the session was closed during the call (the plugin was disposed or lost its connection)", s.cfg.Name)
	case errCallTimeout:
		return failf(CodeCallTimeout, "CallTimeout", "MCP server %q did not answer within the call timeout %v; the request was cancelled", s.cfg.Name, s.cfg.CallTimeout)
	}
	var we *jsonrpc.Error
	if safeerr.AsAny(err, &we) {
		return failf(CodeServerError, "ServerError", "MCP server %q: %s (code %d)", s.cfg.Name, textcut.Valid(we.Message, 4096), we.Code)
	}
	select {
	case <-cur.ended:
		return failf(CodeServerUnavailable, "ServerUnavailable", "MCP server %q: the session ended during the call: %s", s.cfg.Name, textcut.Valid(err.Error(), 1024))
	default:
	}
	return failf(CodeServerUnavailable, "ServerUnavailable", "MCP server %q: %s", s.cfg.Name, textcut.Valid(err.Error(), 1024))
}

// errorText is the text of an isError result's content.
func errorText(server string, content []tools.Content) string {
	var parts []string
	for _, c := range content {
		if c.Type == tools.ContentText {
			parts = append(parts, c.Text)
		} else {
			parts = append(parts, "["+c.Type+"]")
		}
	}
	if len(parts) == 0 {
		return fmt.Sprintf("MCP server %q reported a tool error without a message", server)
	}
	return strings.Join(parts, "\n")
}

// convertContent appends MCP content blocks, turned into the registry's,
// which have the same shape, to out (allocated for them unless it has room
// for all); binary data is base64 as on the wire. Unknown blocks become a
// text note.
func convertContent(out []tools.Content, in []mcp.Content) []tools.Content {
	if cap(out)-len(out) < len(in) {
		out = slices.Grow(out, len(in))
	}
	for _, c := range in {
		switch c := c.(type) {
		case *mcp.TextContent:
			out = append(out, tools.Text(valid8(c.Text)))
		case *mcp.ImageContent:
			out = append(out, tools.Image(base64.StdEncoding.EncodeToString(c.Data), valid8(c.MIMEType)))
		case *mcp.AudioContent:
			out = append(out, tools.Audio(base64.StdEncoding.EncodeToString(c.Data), valid8(c.MIMEType)))
		case *mcp.ResourceLink:
			b := tools.Link(valid8(c.URI), valid8(c.Name), valid8(c.Description), valid8(c.MIMEType))
			b.Title = valid8(c.Title)
			out = append(out, b)
		case *mcp.EmbeddedResource:
			r := c.Resource
			switch {
			case r == nil:
				out = append(out, tools.Text("[empty embedded resource]"))
			case r.Blob != nil:
				out = append(out, tools.EmbeddedBlob(valid8(r.URI), valid8(r.MIMEType), base64.StdEncoding.EncodeToString(r.Blob)))
			default:
				out = append(out, tools.EmbeddedText(valid8(r.URI), valid8(r.MIMEType), valid8(r.Text)))
			}
		default:
			out = append(out, tools.Text(fmt.Sprintf("[unsupported content block %T]", c)))
		}
	}
	return out
}

func valid8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}
