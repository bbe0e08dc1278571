package tools_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/plugins/tools"
)

// Every error the package returns to a Go caller starts with "tools: ",
// once, whichever call made it. (An error of the host's, such as a
// registration through a disposed fiber, passes through with the host's
// own prefix.)
func TestErrorsCarryThePackagePrefix(t *testing.T) {
	e := newEnv(t)
	ag := e.scope(t, "agent")
	mustRegister(t, e.reg, e.root, echo("dup", "x"))
	for name, call := range map[string]func() error{
		"Definition.Validate": func() error { return tools.Definition{Name: "a b"}.Validate() },
		"Define": func() error {
			_, err := tools.Define(tools.TypedTool[struct{}, tools.Output]{Name: "x", Description: "d", Timeout: -1})
			return err
		},
		"Register duplicate": func() error { _, err := e.reg.Register(e.root, echo("dup", "x")); return err },
		"Restrict global":    func() error { _, err := e.reg.Restrict(e.root, tools.Restriction{Deny: []string{"dup"}}); return err },
		"Restrict empty":     func() error { _, err := e.reg.Restrict(ag, tools.Restriction{}); return err },
		"Guard nil":          func() error { _, err := e.reg.Guard(e.root, nil); return err },
		"PreDecision":        func() error { return tools.PreDecision{Kind: tools.Deny}.Validate() },
		"PostDecision":       func() error { return tools.PostDecision{}.Validate() },
		"Content":            func() error { return tools.Content{Type: "weird"}.Validate() },
		"Result":             func() error { return tools.Result{Error: &tools.ErrorInfo{Code: "X"}}.Validate() },
		"Config":             func() error { return tools.Config{Mode: "weird"}.Validate() },
		"NewExecution args": func() error {
			_, err := tools.NewExecution(tools.Call{Arguments: json.RawMessage(`[`)}, echo("n", "x"))
			return err
		},
		"NewExecution name": func() error { _, err := tools.NewExecution(tools.Call{Name: "m"}, echo("n", "x")); return err },
		"NewExecution def":  func() error { _, err := tools.NewExecution(tools.Call{}, tools.Definition{}); return err },
		"ErrAbandoned":      func() error { return tools.ErrAbandoned },
	} {
		t.Run(name, func(t *testing.T) {
			err := call()
			if err == nil {
				t.Fatal("no error")
			}
			if msg := err.Error(); !strings.HasPrefix(msg, "tools: ") || strings.Count(msg, "tools: ") > 1 {
				t.Errorf("%q does not start with the package prefix once", msg)
			}
		})
	}
}
