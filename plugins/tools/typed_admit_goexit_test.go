package tools_test

import (
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/tools"
)

// exitsWhenDecoded is an argument type whose own UnmarshalJSON calls
// runtime.Goexit (what t.FailNow does) when it decodes "exit".
type exitsWhenDecoded struct {
	S string
}

func (e *exitsWhenDecoded) UnmarshalJSON(b []byte) error {
	var w struct{ S string }
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	if w.S == "exit" {
		runtime.Goexit()
	}
	e.S = w.S
	return nil
}

type exitsArgs struct {
	E exitsWhenDecoded `json:"e"`
}

// TestG4_GoexitDecodingTypedArgumentsIsArgumentValidation: a typed
// tool's argument type whose own UnmarshalJSON calls runtime.Goexit is
// argument validation's doing, whether the arguments are decoded in the
// one pass of stage 1 (canonical as sent) or after canonicalization: one
// INVALID_ARGS result named Goexit that says so, not an INTERNAL one
// blaming the pipeline.
func TestG4_GoexitDecodingTypedArgumentsIsArgumentValidation(t *testing.T) {
	for _, args := range []string{`{"e":{"S":"exit"}}`, `{ "e": {"S":"exit"} }`} {
		e := newEnv(t)
		mustRegister(t, e.reg, e.root, tools.MustDefine(tools.TypedTool[exitsArgs, tools.Output]{
			Name: "exits", Description: "Probe.",
			Execute: func(context.Context, exitsArgs, *tools.Execution) (tools.Output, error) { return tools.Output{}, nil },
		}))
		var notices []tools.Result
		must2(t)(host.On(e.root, tools.ResultEvent, func(_ context.Context, n tools.ResultNotice) error {
			notices = append(notices, n.Result())
			return nil
		}))
		exited := make(chan struct{})
		go func() {
			defer close(exited)
			e.reg.Execute(context.Background(), call("exits", args))
		}()
		<-exited
		if len(notices) != 1 {
			t.Fatalf("%s: %d tools/result notices, want exactly 1", args, len(notices))
		}
		r := notices[0]
		if !r.IsError || code(r) != tools.CodeInvalidArgs || r.Error.Name != "Goexit" || !strings.Contains(text(r), "argument validation") {
			t.Errorf("%s: result %+v %q, want INVALID_ARGS named Goexit, from argument validation", args, r.Error, text(r))
		}
	}
}
