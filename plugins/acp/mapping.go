package acp

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-go/dsh/plugins/tools"
)

// FieldMapping is one row of the card → ACP mapping: which field of which
// presentation card (or of the call and its result) becomes which field of
// the ACP tool_call / tool_call_update the bridge sends. [Mapping] returns
// the whole table; the package doc and the generated catalog state it.
type FieldMapping struct {
	// Update is the ACP update the field is sent in: "tool_call" (status
	// pending), "tool_call_update" (in_progress, or the final completed or
	// failed one), or "request_permission" (the toolCall of an ask).
	Update string
	// Source is where the value comes from: a card field ("TerminalCall.Title")
	// or the call ("Execution.CallID", "Result.IsError").
	Source string
	// Field is the ACP field it fills ("title", "content[].diff", ...).
	Field string
	// Note says how the value is converted; empty when copied as is.
	Note string
}

// Mapping returns the card → ACP field mapping the bridge implements, one
// row per source field, in the order the updates are sent. The slice is
// fresh at each call.
func Mapping() []FieldMapping {
	return []FieldMapping{
		{"tool_call", "Execution.CallID", "toolCallId", "the model's call id; an empty id, or one the session already used (in flight, or among its last 4096 calls), gets a \"#n\" suffix so ids stay unique"},
		{"tool_call", "(always)", "status", "`pending`"},
		{"tool_call", "GenericCall.Title", "title", ""},
		{"tool_call", "GenericCall.Kind", "kind", "an ACP tool kind (read, edit, delete, move, search, execute, think, fetch, switch_mode) as is; empty or anything else → `other`"},
		{"tool_call", "GenericCall.Content", "content[].content", "each block as an ACP content block (text, image, audio, resource, resource_link)"},
		{"tool_call", "GenericCall.Locations", "locations", "path (relative paths resolved against the session's Cwd), line when > 0"},
		{"tool_call", "GenericCall.RawInput", "rawInput", "when set; otherwise the call's canonical arguments"},
		{"tool_call", "TerminalCall.Title", "title", "the command"},
		{"tool_call", "(TerminalCall)", "kind", "`execute`"},
		{"tool_call", "TerminalCall.Description", "content[].content", "one text block, when set"},
		{"tool_call", "TerminalCall.Cwd", "(not sent)", "ACP has no field for a command's working directory, and a directory is no file location to follow"},
		{"tool_call", "DiffCall.Title", "title", ""},
		{"tool_call", "(DiffCall)", "kind", "`edit`"},
		{"tool_call", "DiffCall.Diffs", "content[].diff", "path (resolved against Cwd), oldText (absent for a new file), newText"},
		{"tool_call", "DiffCall.Locations", "locations", "as GenericCall.Locations"},
		{"tool_call", "(no card)", "title, kind", "the tool's name, `other`"},
		{"tool_call", "Execution.Args", "rawInput", "for terminal and diff cards, and without a card; omitted beyond Config.MaxRawBytes"},
		{"tool_call_update", "(the body starts)", "status", "`in_progress`, sent by the outermost tools/execute wrapper (not for an unknown tool: nothing runs)"},
		{"tool_call_update", "Result.IsError", "status", "`failed` when true, else `completed`"},
		{"tool_call_update", "GenericResult.Title", "title", "when set"},
		{"tool_call_update", "GenericResult.Content", "content[].content", "when set; otherwise the result's content"},
		{"tool_call_update", "TerminalResult.Title", "title", "when set"},
		{"tool_call_update", "TerminalResult.Output, ExitCode, Signal", "content[].content", "one text block: the output in a code fence, then `exit code N` or `killed by signal S`"},
		{"tool_call_update", "DiffResult.Title", "title", "when set"},
		{"tool_call_update", "DiffResult.Diffs", "content[].diff", "as DiffCall.Diffs"},
		{"tool_call_update", "Result.Content", "content[].content", "without a result card: the model-facing content (for a failure, its error text)"},
		{"tool_call_update", "Result", "rawOutput", "the final result as JSON (callId, content, isError, error, meta, ...); omitted beyond Config.MaxRawBytes"},
		{"request_permission", "tool_call", "toolCall", "the pending tool_call's toolCallId, title, kind, status, content, locations and rawInput"},
	}
}

// acpKinds are the ToolKind values a GenericCall.Kind passes through.
var acpKinds = map[string]acpsdk.ToolKind{
	"read": acpsdk.ToolKindRead, "edit": acpsdk.ToolKindEdit, "delete": acpsdk.ToolKindDelete,
	"move": acpsdk.ToolKindMove, "search": acpsdk.ToolKindSearch, "execute": acpsdk.ToolKindExecute,
	"think": acpsdk.ToolKindThink, "fetch": acpsdk.ToolKindFetch, "switch_mode": acpsdk.ToolKindSwitchMode,
	"other": acpsdk.ToolKindOther,
}

func toolKind(k string) acpsdk.ToolKind {
	if v, ok := acpKinds[k]; ok {
		return v
	}
	return acpsdk.ToolKindOther
}

// mapper converts cards with one session's settings.
type mapper struct {
	cwd    string // absolute, or "" (paths stay as the card gives them)
	maxRaw int
}

// path resolves a card path against the session's working directory.
func (m mapper) path(p string) string {
	if m.cwd == "" || p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(m.cwd, p)
}

func (m mapper) locations(ls []tools.Location) []acpsdk.ToolCallLocation {
	if len(ls) == 0 {
		return nil
	}
	out := make([]acpsdk.ToolCallLocation, 0, len(ls))
	for _, l := range ls {
		loc := acpsdk.ToolCallLocation{Path: m.path(l.Path)}
		if l.Line > 0 {
			line := l.Line
			loc.Line = &line
		}
		out = append(out, loc)
	}
	return out
}

func (m mapper) diffs(ds []tools.FileDiff) []acpsdk.ToolCallContent {
	out := make([]acpsdk.ToolCallContent, 0, len(ds))
	for _, d := range ds {
		c := acpsdk.ToolCallContentDiff{Type: "diff", Path: m.path(d.Path), NewText: d.NewText}
		if d.OldText != nil {
			old := *d.OldText
			c.OldText = &old
		}
		out = append(out, acpsdk.ToolCallContent{Diff: &c})
	}
	return out
}

// raw returns b as a rawInput/rawOutput value, or nil when it is empty or
// larger than the bound.
func (m mapper) raw(b []byte) any {
	if len(b) == 0 || len(b) > m.maxRaw || !json.Valid(b) {
		return nil
	}
	return json.RawMessage(b)
}

// start is the tool_call (status pending) for a call: card may be nil.
func (m mapper) start(id acpsdk.ToolCallId, toolName string, args []byte, card tools.CallView) acpsdk.SessionUpdateToolCall {
	tc := acpsdk.SessionUpdateToolCall{ToolCallId: id, Status: acpsdk.ToolCallStatusPending, Title: toolName, Kind: acpsdk.ToolKindOther}
	rawInput := args
	switch c := card.(type) {
	case tools.GenericCall:
		tc.Title = c.Title
		tc.Kind = toolKind(c.Kind)
		tc.Content = contents(c.Content)
		tc.Locations = m.locations(c.Locations)
		if len(c.RawInput) > 0 {
			rawInput = c.RawInput
		}
	case tools.TerminalCall:
		tc.Title = c.Title
		tc.Kind = acpsdk.ToolKindExecute
		if c.Description != "" {
			tc.Content = []acpsdk.ToolCallContent{acpsdk.ToolContent(acpsdk.TextBlock(c.Description))}
		}
	case tools.DiffCall:
		tc.Title = c.Title
		tc.Kind = acpsdk.ToolKindEdit
		tc.Content = m.diffs(c.Diffs)
		tc.Locations = m.locations(c.Locations)
	}
	tc.RawInput = m.raw(rawInput)
	return tc
}

// finish is the final tool_call_update for a call: card may be nil.
func (m mapper) finish(id acpsdk.ToolCallId, res tools.Result, card tools.ResultView) acpsdk.SessionToolCallUpdate {
	status := acpsdk.ToolCallStatusCompleted
	if res.IsError {
		status = acpsdk.ToolCallStatusFailed
	}
	u := acpsdk.SessionToolCallUpdate{ToolCallId: id, Status: &status}
	var title string
	var content []acpsdk.ToolCallContent
	switch c := card.(type) {
	case tools.GenericResult:
		title = c.Title
		content = contents(c.Content)
	case tools.TerminalResult:
		title = c.Title
		content = []acpsdk.ToolCallContent{acpsdk.ToolContent(acpsdk.TextBlock(terminalText(c)))}
	case tools.DiffResult:
		title = c.Title
		content = m.diffs(c.Diffs)
	}
	if title != "" {
		u.Title = &title
	}
	if len(content) == 0 {
		content = contents(res.Content)
	}
	u.Content = content
	if b, err := json.Marshal(res); err == nil {
		u.RawOutput = m.raw(b)
	}
	return u
}

// terminalText is the fenced fallback of a terminal result for clients
// that show content blocks: the output in a code fence longer than any
// backtick run inside it, then the exit status.
func terminalText(c tools.TerminalResult) string {
	var b strings.Builder
	if c.Output != "" {
		fence := strings.Repeat("`", max(3, longestRun(c.Output, '`')+1))
		b.WriteString(fence)
		b.WriteString("\n")
		b.WriteString(c.Output)
		if !strings.HasSuffix(c.Output, "\n") {
			b.WriteString("\n")
		}
		b.WriteString(fence)
		b.WriteString("\n")
	}
	switch {
	case c.Signal != "":
		fmt.Fprintf(&b, "killed by signal %s", c.Signal)
	case c.ExitCode != nil:
		fmt.Fprintf(&b, "exit code %d", *c.ExitCode)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func longestRun(s string, ch byte) int {
	best, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == ch {
			run++
			best = max(best, run)
		} else {
			run = 0
		}
	}
	return best
}

// contents converts model-facing content blocks to ACP tool-call content.
func contents(cs []tools.Content) []acpsdk.ToolCallContent {
	if len(cs) == 0 {
		return nil
	}
	out := make([]acpsdk.ToolCallContent, 0, len(cs))
	for _, c := range cs {
		if b, ok := block(c); ok {
			out = append(out, acpsdk.ToolContent(b))
		}
	}
	return out
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// block converts one content block; unknown types are dropped.
func block(c tools.Content) (acpsdk.ContentBlock, bool) {
	switch c.Type {
	case tools.ContentText:
		return acpsdk.TextBlock(c.Text), true
	case tools.ContentImage:
		return acpsdk.ImageBlock(c.Data, c.MIMEType), true
	case tools.ContentAudio:
		return acpsdk.AudioBlock(c.Data, c.MIMEType), true
	case tools.ContentResource:
		if c.Data != "" {
			return acpsdk.ResourceBlock(acpsdk.EmbeddedResourceResource{BlobResourceContents: &acpsdk.BlobResourceContents{
				Uri: c.URI, Blob: c.Data, MimeType: optional(c.MIMEType)}}), true
		}
		return acpsdk.ResourceBlock(acpsdk.EmbeddedResourceResource{TextResourceContents: &acpsdk.TextResourceContents{
			Uri: c.URI, Text: c.Text, MimeType: optional(c.MIMEType)}}), true
	case tools.ContentResourceLink:
		b := acpsdk.ResourceLinkBlock(c.Name, c.URI)
		b.ResourceLink.Title = optional(c.Title)
		b.ResourceLink.Description = optional(c.Description)
		b.ResourceLink.MimeType = optional(c.MIMEType)
		return b, true
	}
	return acpsdk.ContentBlock{}, false
}
