package main

import (
	"fmt"
	"strings"

	"github.com/dsh-go/dsh/plugins/tools"
)

// renderCall renders a pending call card, or a generic one from the raw
// arguments when the tool presents nothing.
func renderCall(v tools.CallView, c ScriptCall) string {
	switch v := v.(type) {
	case tools.TerminalCall:
		s := ""
		if v.Description != "" {
			s += "# " + v.Description + "\n"
		}
		return s + "$ " + v.Title + "\n"
	case tools.GenericCall:
		return fmt.Sprintf("%s [%s]\n", v.Title, v.Kind)
	case tools.DiffCall:
		return v.Title + "\n"
	}
	return fmt.Sprintf("%s %s\n", c.Name, c.Arguments)
}

// renderResult renders a completed call.
func renderResult(v tools.ResultView, r tools.Result) string {
	if r.IsError {
		code := ""
		if r.Error != nil {
			code = " " + r.Error.Code
		}
		return fmt.Sprintf("✗ error%s: %s\n", code, contentText(r.Content))
	}
	switch v := v.(type) {
	case tools.TerminalResult:
		exit := ""
		if v.ExitCode != nil {
			exit = fmt.Sprintf("[exit %d]\n", *v.ExitCode)
		}
		return v.Output + exit
	case tools.DiffResult:
		var b strings.Builder
		b.WriteString(v.Title + "\n")
		for _, d := range v.Diffs {
			if d.OldText == nil {
				fmt.Fprintf(&b, "+++ %s (new)\n", d.Path)
			}
		}
		return b.String()
	}
	return "✓ " + contentText(r.Content) + "\n"
}

func contentText(cs []tools.Content) string {
	var parts []string
	for _, c := range cs {
		if c.Type == tools.ContentText {
			parts = append(parts, c.Text)
		} else {
			parts = append(parts, "["+c.Type+"]")
		}
	}
	return strings.Join(parts, "\n")
}
