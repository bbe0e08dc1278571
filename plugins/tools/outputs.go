package tools

import (
	"encoding/json"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/dsh-go/dsh/internal/safeerr"
	"github.com/dsh-go/dsh/plugins/tools/canonjson"
)

// This file is the declared-output half of a call: the value a tool that
// declares an output schema returns is validated against it (at dispatch,
// after a post-execute replacement, and at finalize for a value that came
// from anywhere else), its content rendered from it, and every normalized
// result's content passed once through the tool's FinalizeContent.

// outputState is what an [Execution] remembers about its declared output.
type outputState struct {
	// valid is the last value validated against the tool's schema, in
	// canonical form: a result carrying these bytes need not be checked
	// again.
	valid string
	// finalizing is the result handed to FinalizeContent while it runs
	// (nil otherwise): a runtime.Goexit in it finalizes this result.
	finalizing *Result
	// finalized says FinalizeContent ran (or had its chance): it runs
	// once per call.
	finalized bool
}

// CanonicalValue returns the call's canonical value: Value when the tool
// declares its output, else the text of the content's text blocks (joined
// by newlines) as a JSON string. On a failure it is nil.
func (r Result) CanonicalValue() json.RawMessage {
	if r.IsError {
		return nil
	}
	if r.Value != nil {
		return append(json.RawMessage(nil), r.Value...)
	}
	if len(r.Content) == 1 && r.Content[0].Type == ContentText {
		// One text block (the common case): quoted straight into a buffer of its size.
		t := r.Content[0].Text
		return canonjson.AppendString(make([]byte, 0, len(t)+2), t)
	}
	var b strings.Builder
	n := 0
	for _, c := range r.Content {
		if c.Type == ContentText {
			if n > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(c.Text)
			n++
		}
	}
	return canonjson.AppendString(nil, b.String())
}

// RenderJSON is the default render of a declared output: the value as
// its JSON text in one text block, a string value as the string itself.
// value must be canonical JSON (as every validated value is).
func RenderJSON(value json.RawMessage) []Content {
	if len(value) > 0 && value[0] == '"' {
		var s string
		if json.Unmarshal(value, &s) == nil {
			return []Content{Text(s)}
		}
	}
	return []Content{Text(string(value))}
}

// checkOutput applies t's declared output to a result (see
// [Definition].OutputSchema): a failure carries no value; a success of a
// text-only tool must carry none; a success of a tool with an output
// schema must carry a value that matches it, which is stored canonical,
// and gets content rendered from it when it has none. A violation turns
// the result into an INVALID_OUTPUT failure that keeps the additional
// context.
func checkOutput(exec *Execution, t *Tool, res Result) Result {
	return checkOutputOf(exec, t, res, checkedValue{})
}

// checkOutputOf is checkOutput for a body's result, with the body's proof
// that its value is valid (see checkedValue; zero: none).
func checkOutputOf(exec *Execution, t *Tool, res Result, ok checkedValue) Result {
	if res.IsError {
		res.Value = nil
		return res
	}
	if t == nil || t.output == nil {
		if res.Value != nil {
			return outputFailure(res, fmt.Sprintf("tool %q returned a value but declares no output schema", exec.name))
		}
		return res
	}
	if res.Value == nil {
		return outputFailure(res, fmt.Sprintf("tool %q declares an output schema but returned no value", exec.name))
	}
	switch {
	case exec.out.valid != "" && string(res.Value) == exec.out.valid:
	case ok.by != nil && ok.by.Same(t.output) && string(res.Value) == ok.text:
		// The typed body's own encoding, checked against this schema.
		exec.out.valid = ok.text
	default:
		canon, vs := t.output.ValidateEncoded(res.Value)
		if len(vs) > 0 {
			var b strings.Builder
			fmt.Fprintf(&b, "tool %q returned a value that does not match its output schema:", exec.name)
			for _, v := range vs {
				b.WriteString("\n- ")
				b.WriteString(v.String())
			}
			return outputFailure(res, b.String())
		}
		res.Value = canon
		exec.out.valid = string(canon)
	}
	if res.Content == nil {
		content, err := renderOutput(t, res.Value, exec.out.valid)
		if err != nil {
			return outputFailure(res, fmt.Sprintf("tool %q could not render its value: %s", exec.name, safeerr.Text(err)))
		}
		res.Content = content
	}
	return res
}

// outputFailure is the INVALID_OUTPUT result replacing res.
func outputFailure(res Result, msg string) Result {
	f := failure(CodeInvalidOutput, "InvalidOutput", msg)
	f.AdditionalContext = res.AdditionalContext
	return f
}

// renderOutput renders a validated value with t's RenderOutput, or as
// JSON; a panic is an error. text is string(value), which the JSON render
// of a value other than a string shares.
func renderOutput(t *Tool, value json.RawMessage, text string) (content []Content, err error) {
	if t.render == nil {
		if len(value) > 0 && value[0] != '"' && text == string(value) {
			return []Content{Text(text)}, nil
		}
		return RenderJSON(value), nil
	}
	defer func() {
		if v := recover(); v != nil {
			content, err = nil, fmt.Errorf("%s", panicMessage("RenderOutput", v))
		}
	}()
	content, err = t.render(append(json.RawMessage(nil), value...))
	if err == nil && content == nil {
		content = []Content{}
	}
	return content, err
}

// finalizeContent runs the tool's FinalizeContent on res, once per call
// (see [Definition].FinalizeContent), and returns res with the content it
// chose. Only the content changes; a panic withholds the content.
func (r *Registry) finalizeContent(exec *Execution, res Result) Result {
	t := exec.tool
	if t == nil || t.finalizeC == nil || exec.out.finalized {
		return res
	}
	exec.out.finalized = true
	exec.out.finalizing = &res
	content, panicked := r.callFinalizeContent(t, exec, res)
	exec.out.finalizing = nil
	if panicked {
		res.Content = withheldContent(exec.name)
	} else if content != nil {
		res.Content = content
	}
	return res
}

func (r *Registry) callFinalizeContent(t *Tool, exec *Execution, res Result) (content []Content, panicked bool) {
	defer func() {
		if v := recover(); v != nil {
			if r.c != nil { // nil: run by NewExecution's offline stages
				r.c.Logger().Error().Str("panic", safeerr.Sprint(v)).Bytes("stack", debug.Stack()).Str("tool", t.name).Msg("FinalizeContent panicked; the result's content is withheld")
			}
			content, panicked = nil, true
		}
	}()
	return t.finalizeC(exec, res.Clone()), false
}

// withheldContent replaces the content of a result whose FinalizeContent
// failed: the tool's own last word on its content never ran, so what it
// would have removed must not reach the model.
func withheldContent(tool string) []Content {
	return []Content{Text(fmt.Sprintf("[the content of this %q result was withheld: its FinalizeContent failed]", tool))}
}
