package hooks

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/dsh-go/dsh/internal/safeerr"
	"github.com/dsh-go/dsh/plugins/tools/canonjson"
)

// Format is the hook protocol a payload comes in and an answer goes out
// in: the coding agent that runs the hook.
type Format string

// The formats.
const (
	// ClaudeCode is Claude Code's command hook protocol.
	ClaudeCode Format = "claude-code"
	// Codex is OpenAI Codex's command hook protocol.
	Codex Format = "codex"
)

// Formats lists the formats, in the order the command names them.
var Formats = []Format{ClaudeCode, Codex}

// ParseFormat returns the Format named s ("claude-code" or "codex"), or an
// error naming the accepted names.
func ParseFormat(s string) (Format, error) {
	for _, f := range Formats {
		if string(f) == s {
			return f, nil
		}
	}
	return "", fmt.Errorf("hooks: unknown hook format %q (want claude-code or codex)", s)
}

// Event is a hook event this package answers.
type Event string

// The events. Every other hook_event_name is an error.
const (
	// PreToolUse runs before the agent runs a tool: the answer allows,
	// denies or asks.
	PreToolUse Event = "PreToolUse"
	// PostToolUse runs after the tool ran: the answer may block (the
	// reason goes to the model) and add context.
	PostToolUse Event = "PostToolUse"
)

// MaxPayloadBytes is the largest payload [ReadPayload] and [ParsePayload]
// accept. A PreToolUse tool_input is further bounded by the pipeline (4
// MiB, see canonjson.DefaultMaxBytes).
const MaxPayloadBytes = 8 << 20

// Payload is what this package reads from a hook payload. Both formats
// share these field names; every other field is ignored.
type Payload struct {
	// Event is hook_event_name.
	Event Event
	// ToolName is tool_name: the call's name (Claude Code's Bash, Read,
	// Write, Edit, ...; Codex's Bash, apply_patch; MCP tools as
	// mcp__<server>__<tool> in both).
	ToolName string
	// ToolUseID is tool_use_id ("" when absent): the call's id.
	ToolUseID string
	// ToolInput is tool_input in canonical JSON: the call's arguments.
	ToolInput json.RawMessage
	// ToolResponse is tool_response in canonical JSON (PostToolUse only):
	// what the tool returned.
	ToolResponse json.RawMessage
	// Cwd is cwd ("" when absent or not a string): the agent's current
	// directory, which relative permission rules and paths are placed in.
	Cwd string
}

// PayloadError reports a payload this package cannot answer: what is
// wrong, where, and the event when it was read before the problem was
// found.
type PayloadError struct {
	// Event is the payload's event when it was known ("" otherwise: the
	// answer cannot use the event's JSON shape).
	Event Event
	// Field is the payload field at fault ("" for the payload as a whole).
	Field string
	// Problem says what is wrong.
	Problem string
}

// Error implements error.
func (e *PayloadError) Error() string {
	if e.Field == "" {
		return "hooks: bad hook payload: " + e.Problem
	}
	return fmt.Sprintf("hooks: bad hook payload: field %q: %s", e.Field, e.Problem)
}

// ReadPayload reads one payload from r, at most [MaxPayloadBytes] of it
// (a longer input is a *[PayloadError] without reading the rest), and
// parses it with [ParsePayload]. A read error is returned wrapped.
func ReadPayload(r io.Reader) (Payload, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxPayloadBytes+1))
	if err != nil {
		return Payload{}, fmt.Errorf("hooks: reading the hook payload: %w", err)
	}
	if len(data) > MaxPayloadBytes {
		return Payload{}, &PayloadError{Problem: fmt.Sprintf("the payload is larger than %d bytes", MaxPayloadBytes)}
	}
	return ParsePayload(data)
}

// ParsePayload parses one hook payload, for matching only (see the
// package documentation: numbers and strings JSON cannot carry losslessly
// are read as text, duplicate members of tool_response by their last
// value). Every problem is a *[PayloadError]: input that is not JSON,
// deeper than 64 levels, larger than MaxPayloadBytes, with a duplicate
// member name outside tool_response, or not an object; hook_event_name
// missing, not a string, or not PreToolUse / PostToolUse; tool_name
// missing, empty or not a string; tool_input missing or not an object;
// tool_use_id present but not a string; for PostToolUse, tool_response
// missing (any JSON value is accepted, null included). Other fields are
// not read.
func ParsePayload(data []byte) (Payload, error) {
	canon, err := canonjson.Canonicalize(data, canonjson.Options{MaxBytes: MaxPayloadBytes})
	if err != nil && len(data) <= MaxPayloadBytes && json.Valid(data) {
		// Read for matching only: a number or string JSON cannot carry
		// losslessly, or a duplicate member of tool_response, does not
		// fail the hook (see lenient).
		if c, lerr := lenient(data); lerr == nil {
			canon, err = c, nil
		} else {
			err = lerr
		}
	}
	if err != nil {
		var ce *canonjson.Error
		if safeerr.AsAny(err, &ce) && strings.TrimSpace(string(data)) == "" {
			return Payload{}, &PayloadError{Problem: "the payload is empty (want a JSON object on stdin)"}
		}
		return Payload{}, &PayloadError{Problem: "not lossless JSON: " + err.Error()}
	}
	doc := gjson.ParseBytes(canon)
	if !doc.IsObject() {
		return Payload{}, &PayloadError{Problem: fmt.Sprintf("the payload is a JSON %s, not an object", kind(doc))}
	}
	ev := doc.Get("hook_event_name")
	switch {
	case !ev.Exists():
		return Payload{}, &PayloadError{Field: "hook_event_name", Problem: "missing"}
	case ev.Type != gjson.String:
		return Payload{}, &PayloadError{Field: "hook_event_name", Problem: "is a JSON " + kind(ev) + ", not a string"}
	}
	p := Payload{Event: Event(ev.Str)}
	if p.Event != PreToolUse && p.Event != PostToolUse {
		return Payload{}, &PayloadError{Field: "hook_event_name", Problem: fmt.Sprintf("unknown event %.100q (dsh hook answers PreToolUse and PostToolUse)", ev.Str)}
	}
	bad := func(field, problem string) (Payload, error) {
		return Payload{}, &PayloadError{Event: p.Event, Field: field, Problem: problem}
	}
	switch name := doc.Get("tool_name"); {
	case !name.Exists():
		return bad("tool_name", "missing")
	case name.Type != gjson.String:
		return bad("tool_name", "is a JSON "+kind(name)+", not a string")
	case name.Str == "":
		return bad("tool_name", "empty")
	default:
		p.ToolName = name.Str
	}
	switch id := doc.Get("tool_use_id"); {
	case !id.Exists():
	case id.Type != gjson.String:
		return bad("tool_use_id", "is a JSON "+kind(id)+", not a string")
	default:
		p.ToolUseID = id.Str
	}
	switch in := doc.Get("tool_input"); {
	case !in.Exists():
		return bad("tool_input", "missing")
	case !in.IsObject():
		return bad("tool_input", "is a JSON "+kind(in)+", not an object")
	default:
		p.ToolInput = json.RawMessage(in.Raw)
	}
	if cwd := doc.Get("cwd"); cwd.Type == gjson.String {
		p.Cwd = cwd.Str
	}
	if p.Event == PostToolUse {
		out := doc.Get("tool_response")
		if !out.Exists() {
			return bad("tool_response", "missing")
		}
		p.ToolResponse = json.RawMessage(out.Raw)
	}
	return p, nil
}

// kind names v's JSON type for an error message.
func kind(v gjson.Result) string {
	switch {
	case v.IsObject():
		return "object"
	case v.IsArray():
		return "array"
	}
	switch v.Type {
	case gjson.String:
		return "string"
	case gjson.Number:
		return "number"
	case gjson.True, gjson.False:
		return "boolean"
	}
	return "null"
}

// lenient returns valid JSON data in canonical form for matching, where
// [canonjson] refuses it: integers beyond ±(2^53-1) and other numbers it
// cannot carry become strings of their digits (a rule matches numbers as
// their JSON text, so it reads the same), lone surrogates and invalid
// UTF-8 become U+FFFD. Duplicate member names are accepted inside
// tool_response only (the last one counts there); anywhere else, and in
// tool_input above all, where the agent and a rule could read different
// values, they are still an error.
func lenient(data []byte) ([]byte, error) {
	if at, ok := duplicateMember(data); ok && at != "tool_response" {
		return nil, fmt.Errorf("duplicate member name under %q (the agent and a rule could read different values)", at)
	}
	if in := gjson.GetBytes(data, "tool_input"); in.Exists() && (!utf8.ValidString(in.Raw) || loneSurrogate(in.Raw)) {
		return nil, errors.New("tool_input holds text JSON cannot carry (invalid UTF-8 or a lone surrogate): the agent and a rule could read different values")
	}
	d := json.NewDecoder(strings.NewReader(string(data)))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	v = numbersAsText(v, 0)
	out, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return canonjson.Canonicalize(out, canonjson.Options{MaxBytes: 2 * MaxPayloadBytes})
}

// numbersAsText replaces the numbers canonjson refuses with strings.
func numbersAsText(v any, depth int) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = numbersAsText(e, depth+1)
		}
	case []any:
		for i, e := range x {
			x[i] = numbersAsText(e, depth+1)
		}
	case json.Number:
		if _, err := canonjson.Canonicalize([]byte(x), canonjson.Options{}); err != nil {
			return x.String()
		}
	}
	return v
}

// duplicateMember reports whether data (valid JSON) has an object with a
// repeated member name, and the top-level member it is under ("" for the
// top level itself).
func duplicateMember(data []byte) (under string, found bool) {
	d := json.NewDecoder(strings.NewReader(string(data)))
	type frame struct {
		obj  bool
		keys map[string]bool
		key  bool // the next token is a key
	}
	var stack []*frame
	top := ""
	for {
		t, err := d.Token()
		if err != nil {
			return "", false
		}
		var f *frame
		if len(stack) > 0 {
			f = stack[len(stack)-1]
		}
		if f != nil && f.obj && f.key {
			if s, ok := t.(string); ok {
				if f.keys[s] {
					if len(stack) == 1 {
						return "", true
					}
					return top, true
				}
				f.keys[s] = true
				f.key = false
				if len(stack) == 1 {
					top = s
				}
				continue
			}
		}
		switch t {
		case json.Delim('{'):
			stack = append(stack, &frame{obj: true, keys: map[string]bool{}, key: true})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		if len(stack) == 0 {
			return "", false
		}
		if p := stack[len(stack)-1]; p.obj {
			p.key = true
		}
	}
}

// loneSurrogate reports whether the JSON text s escapes a UTF-16
// surrogate that is not part of a pair.
func loneSurrogate(s string) bool {
	hex4 := func(i int) (rune, bool) {
		if i+6 > len(s) || s[i] != '\\' || s[i+1] != 'u' {
			return 0, false
		}
		n, err := strconv.ParseUint(s[i+2:i+6], 16, 32)
		return rune(n), err == nil
	}
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			continue
		}
		if s[i+1] != 'u' {
			i++ // an escaped character, maybe a backslash
			continue
		}
		r, ok := hex4(i)
		if !ok {
			return true
		}
		switch {
		case r >= 0xD800 && r < 0xDC00:
			lo, ok := hex4(i + 6)
			if !ok || lo < 0xDC00 || lo > 0xDFFF {
				return true
			}
			i += 11
		case r >= 0xDC00 && r <= 0xDFFF:
			return true
		default:
			i += 5
		}
	}
	return false
}
