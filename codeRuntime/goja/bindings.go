package goja

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/dop251/goja"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
	"github.com/dsh-go/dsh/codeRuntime/internal/jsengine"
	"github.com/dsh-go/dsh/internal/safeerr"
)

// bindingFunc is the native function installed as namespace[name].
func (r *run) bindingFunc(name string, b coderuntime.Binding) func(goja.FunctionCall) goja.Value {
	return func(fc goja.FunctionCall) goja.Value {
		p, resolve, reject := r.vm.NewPromise()
		refuse := func(msg, code, errName string) goja.Value {
			e, err := r.h.makeError(goja.Undefined(), r.vm.ToValue(msg), r.vm.ToValue(code), r.vm.ToValue(errName))
			if err != nil {
				throw(err)
			}
			if err := reject(e); err != nil {
				throw(err)
			}
			return r.vm.ToValue(p)
		}
		if r.settled || (r.main != nil && r.main.State() != goja.PromiseStatePending) {
			return refuse(fmt.Sprintf("%s.%s: %v", coderuntime.DefaultNamespace, name, coderuntime.ErrRunSettled), "RUN_SETTLED", "Error")
		}
		if r.pending >= r.cfg.MaxPendingCalls {
			return refuse(fmt.Sprintf("%s: too many pending binding calls (limit %d)", name, r.cfg.MaxPendingCalls), "TOO_MANY_CALLS", "RangeError")
		}
		args := json.RawMessage("{}")
		if a := fc.Argument(0); !goja.IsUndefined(a) {
			s, err := r.stringifyArg(a)
			if err != nil {
				var ex *goja.Exception
				if safeerr.AsAny(err, &ex) {
					msg, _, err := r.describe(ex.Value())
					if err != nil {
						throw(err)
					}
					return refuse(fmt.Sprintf("%s: the argument is not JSON-serializable: %s", name, msg), "INVALID_ARGUMENTS", "TypeError")
				}
				throw(err)
			}
			if goja.IsUndefined(s) {
				return refuse(fmt.Sprintf("%s: the argument is not JSON-serializable (a function or symbol)", name), "INVALID_ARGUMENTS", "TypeError")
			}
			args = json.RawMessage(s.String())
		}
		r.pending++
		r.Submit(&jsengine.Call{Name: name, Fn: b, Args: args, Resolve: resolve, Reject: reject})
		return r.vm.ToValue(p)
	}
}

// complete settles a binding call's promise on the run goroutine.
func (r *run) complete(cp jsengine.Completion) error {
	vm := r.vm
	if cp.Err != nil {
		a := jsengine.AnswerOf(cp.Err)
		details := goja.Undefined()
		if a.Details != nil {
			// A plain object of strings: no Go value reaches the program.
			obj := vm.NewObject()
			for k, v := range a.Details {
				if err := obj.Set(k, v); err != nil {
					return err
				}
			}
			details = obj
		}
		e, err := r.h.makeError(goja.Undefined(), vm.ToValue(a.Message), vm.ToValue(a.Code), vm.ToValue(a.Name), details)
		if err != nil {
			return err
		}
		return cp.C.Reject(e)
	}
	if len(bytes.TrimSpace(cp.Result)) == 0 {
		return cp.C.Resolve(goja.Undefined())
	}
	if v, ok := decodeJSON(vm, cp.Result); ok {
		return cp.C.Resolve(v)
	}
	invalid := func(why string) error {
		e, err := r.h.makeError(goja.Undefined(), vm.ToValue(fmt.Sprintf("%s: the binding returned %s", cp.C.Name, why)), vm.ToValue("INVALID_RESULT"), vm.ToValue(""))
		if err != nil {
			return err
		}
		return cp.C.Reject(e)
	}
	if jsengine.JSONTooDeep(cp.Result, r.maxDepth) {
		// goja's JSON.parse would recurse once per level on the Go stack.
		return invalid(fmt.Sprintf("JSON nested more than %d levels deep", r.maxDepth))
	}
	v, err := r.h.parse(goja.Undefined(), vm.ToValue(string(cp.Result)))
	if err != nil {
		var ex *goja.Exception
		if !safeerr.AsAny(err, &ex) {
			return err
		}
		e, err := r.h.makeError(goja.Undefined(), vm.ToValue(fmt.Sprintf("%s: the binding returned invalid JSON", cp.C.Name)), vm.ToValue("INVALID_RESULT"), vm.ToValue(""))
		if err != nil {
			return err
		}
		return cp.C.Reject(e)
	}
	return cp.C.Resolve(v)
}

// stringifyArg is JSON.stringify(v) for a binding argument, through a Go replacer instead of the
// prelude's JavaScript one (a binding call is the bridge's hot path): the same guard, without a
// JavaScript frame per value. goja's stringify recurses natively and never checks for an interrupt,
// so the replacer refuses values nested more than maxDepth levels (a RangeError, as the prelude's) and
// stops once the run was interrupted.
func (r *run) stringifyArg(v goja.Value) (goja.Value, error) {
	if r.argGuard == nil {
		r.argGuard = r.vm.ToValue(r.guardArg)
	}
	r.argStack = r.argStack[:0]
	s, err := r.h.nativeStringify(goja.Undefined(), v, r.argGuard)
	clear(r.argStack)
	r.argStack = r.argStack[:0]
	return s, err
}

// guardArg is the replacer of stringifyArg: it keeps the chain of holders from the root to the value
// (popping those the walk has left) and refuses a chain deeper than maxDepth.
func (r *run) guardArg(fc goja.FunctionCall) goja.Value {
	if r.interrupted.Load() {
		r.throwRange("the run was interrupted") // the pending interrupt ends the run at the next instruction
	}
	v := fc.Argument(1)
	o, ok := v.(*goja.Object)
	if !ok {
		return v
	}
	if _, fn := goja.AssertFunction(o); fn {
		return v
	}
	holder, _ := fc.This.(*goja.Object)
	for n := len(r.argStack); n > 0 && r.argStack[n-1] != holder; n-- {
		r.argStack = r.argStack[:n-1]
	}
	r.argStack = append(r.argStack, o)
	if len(r.argStack) > r.maxDepth {
		r.throwRange(fmt.Sprintf("JSON.stringify: the value is nested more than %d levels deep", r.maxDepth))
	}
	return v
}
