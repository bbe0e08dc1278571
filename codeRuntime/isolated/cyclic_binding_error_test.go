package isolated

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
	"github.com/dsh-go/dsh/codeRuntime/goja"
	"github.com/dsh-go/dsh/codeRuntime/quickjs"
)

// cyclicBindingErr is a binding's error whose Unwrap returns itself:
// errors.As over it never returns.
type cyclicBindingErr struct{}

func (cyclicBindingErr) Error() string   { return "cyclic binding error" }
func (e cyclicBindingErr) Unwrap() error { return e }

// Defect: the in-process engines read a failed binding call's error (its
// code, name and details) with errors.As, unbounded: a binding returning a
// cyclic error hung the run. The program now sees the rejection, as it
// does in the isolated engine (which reads the error through safeerr).
func TestCyclicBindingErrorRejectsTheCall(t *testing.T) {
	engines := map[string]func() (coderuntime.Runtime, error){
		"goja": func() (coderuntime.Runtime, error) {
			return goja.NewInProcess(coderuntime.Config{Timeout: time.Minute, CPUBudget: time.Minute})
		},
		"quickjs": func() (coderuntime.Runtime, error) {
			return quickjs.NewInProcess(coderuntime.Config{Timeout: time.Minute, CPUBudget: time.Minute})
		},
	}
	for name, mk := range engines {
		for _, tc := range []struct {
			name string
			err  error
		}{
			{"Unwrap returns itself", cyclicBindingErr{}},
			{"behind %w", fmt.Errorf("wrapped: %w", cyclicBindingErr{})},
		} {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				rt, err := mk()
				if err != nil {
					t.Fatal(err)
				}
				p := coderuntime.Program{
					Source: `try { await tools.f({}); return "resolved" } catch (e) { return e.message }`,
					Bindings: map[string]coderuntime.Binding{"f": func(context.Context, json.RawMessage) (json.RawMessage, error) {
						return nil, tc.err
					}},
				}
				type out struct {
					res *coderuntime.Result
					err error
				}
				ch := make(chan out, 1)
				go func() {
					res, err := rt.Run(context.Background(), p)
					ch <- out{res, err}
				}()
				var o out
				select {
				case o = <-ch:
				case <-time.After(time.Minute): // a safety net: a passing run takes milliseconds
					t.Fatal("Run did not return: an unbounded walk of the binding's cyclic error?")
				}
				if o.err != nil {
					t.Fatalf("Run: %v", o.err)
				}
				var msg string
				if err := json.Unmarshal(o.res.Value, &msg); err != nil || msg != tc.err.Error() {
					t.Fatalf("program returned %s (%v), want the binding's message %q", o.res.Value, err, tc.err.Error())
				}
			})
		}
	}
}
