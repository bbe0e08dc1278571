package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"weak"

	"github.com/dsh-go/dsh/plugins/tools"
)

// tracked records, through a weak pointer, the value it was decoded into.
type tracked struct {
	N int `json:"n"`
}

var lastTracked atomic.Pointer[weak.Pointer[tracked]]

func (t *tracked) UnmarshalJSON(b []byte) error {
	w := weak.Make(t)
	lastTracked.Store(&w)
	type plain tracked
	return json.Unmarshal(b, (*plain)(t))
}

type trackedArgs struct {
	T tracked `json:"t"`
}

// TestG1_ADeniedCallKeepsNoDecodedValue: the value a typed tool's
// validation decodes lives on the call's execution only, so a call that
// policy denied leaves nothing behind (no per-tool slot holds it until
// the tool's next call).
func TestG1_ADeniedCallKeepsNoDecodedValue(t *testing.T) {
	e := newEnv(t)
	mustRegister(t, e.reg, e.root, tools.MustDefine(tools.TypedTool[trackedArgs, tools.Output]{
		Name: "tracked", Description: "Probe.",
		Execute: func(context.Context, trackedArgs, *tools.Execution) (tools.Output, error) { return tools.Output{}, nil },
	}))
	must2(t)(e.reg.Guard(e.root, func(*tools.Execution) error { return errors.New("no") }))
	if res := e.reg.Execute(context.Background(), call("tracked", `{"t":{"n":7}}`)); code(res) != tools.CodeDenied {
		t.Fatalf("%+v", res)
	}
	w := lastTracked.Load()
	if w == nil {
		t.Fatal("validation did not decode the arguments")
	}
	runtime.GC()
	runtime.GC()
	if w.Value() != nil {
		t.Fatal("the denied call's decoded arguments are still reachable after Execute returned")
	}
}

// TestR6_AGuardDeniesWithItsErrorsCode: a guard denies by returning an
// error; the result carries the error's Coder code and Namer name (a
// *tools.Error, or any error with Code()), or DENIED / GuardDenied for a
// plain error, with the error's message after "Tool call denied: ".
func TestR6_AGuardDeniesWithItsErrorsCode(t *testing.T) {
	for _, tc := range []struct {
		name      string
		err       error
		code      tools.ErrorCode
		errorName string
		text      string
	}{
		{"plain", errors.New("not on Sundays"), tools.CodeDenied, "GuardDenied", "Tool call denied: not on Sundays"},
		{"coded", tools.NewError("QUOTA", "QuotaError", "over quota"), "QUOTA", "QuotaError", "Tool call denied: over quota"},
		{"wrapped coded", errors.Join(errors.New("quota check"), quotaErr{}), "QUOTA", "quotaErr", "Tool call denied: quota check\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			var ran atomic.Int32
			mustRegister(t, e.reg, e.root, bodyCounter("t", &ran))
			must2(t)(e.reg.Guard(e.root, func(*tools.Execution) error { return tc.err }))
			res := e.reg.Execute(context.Background(), call("t", `{}`))
			if !res.IsError || res.Error.Code != tc.code || res.Error.Name != tc.errorName || !strings.HasPrefix(res.Content[0].Text, tc.text) || ran.Load() != 0 {
				t.Fatalf("result %+v (error %+v), body runs %d", res, res.Error, ran.Load())
			}
		})
	}
}
