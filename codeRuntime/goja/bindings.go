package goja

import (
	"bytes"
	"errors"
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
		args := []byte("{}")
		if a := fc.Argument(0); !goja.IsUndefined(a) {
			s, defined, thrown := r.argumentJSONTemp(a) // copied by NewCall below
			if thrown != nil {
				msg, _, err := r.describe(thrown)
				if err != nil {
					throw(err)
				}
				return refuse(fmt.Sprintf("%s: the argument is not JSON-serializable: %s", name, msg), "INVALID_ARGUMENTS", "TypeError")
			}
			if !defined {
				return refuse(fmt.Sprintf("%s: the argument is not JSON-serializable (a function or symbol)", name), "INVALID_ARGUMENTS", "TypeError")
			}
			args = s
		}
		r.pending++
		c := jsengine.NewCall(name, b, args)
		c.Slot = r.holdPromise(c, resolve, reject)
		r.Submit(c)
		return r.vm.ToValue(p)
	}
}

// callPromise is the resolve and reject functions of call's promise.
type callPromise struct {
	call            *jsengine.Call
	resolve, reject func(any) error
}

// holdPromise keeps the functions that settle a binding call's promise in the run's table, not in
// the call's record (which the binding may keep, see jsengine.Call.Slot), and returns their slot.
// Slots are reused, so the table holds at most MaxPendingCalls entries.
func (r *run) holdPromise(c *jsengine.Call, resolve, reject func(any) error) int {
	if n := len(r.freeSlots); n > 0 {
		i := r.freeSlots[n-1]
		r.freeSlots = r.freeSlots[:n-1]
		r.promises[i] = callPromise{c, resolve, reject}
		return i
	}
	r.promises = append(r.promises, callPromise{c, resolve, reject})
	return len(r.promises) - 1
}

// takePromise returns the functions that settle c's promise and frees their slot; ok is false
// when c's slot does not hold them (never for a completion the pool delivered: each call completes
// once), so that a second or stray completion settles no other call's promise.
func (r *run) takePromise(c *jsengine.Call) (p callPromise, ok bool) {
	i := c.Slot
	if i < 0 || i >= len(r.promises) || r.promises[i].call != c {
		return callPromise{}, false
	}
	p = r.promises[i]
	r.promises[i] = callPromise{}
	r.freeSlots = append(r.freeSlots, i)
	return p, true
}

// maxCachedString is the longest binding result (in bytes) that complete keeps as run.lastStr.
const maxCachedString = 128

// complete settles a binding call's promise on the run goroutine.
func (r *run) complete(cp jsengine.Completion) error {
	vm := r.vm
	pr, ok := r.takePromise(cp.C)
	if !ok {
		return errors.New("coderuntime: a binding completion for no call in flight")
	}
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
		return pr.reject(e)
	}
	if len(bytes.TrimSpace(cp.Result)) == 0 {
		return pr.resolve(goja.Undefined())
	}
	if r.lastStrV != nil && bytes.Equal(cp.Result, r.lastStr) {
		return pr.resolve(r.lastStrV)
	}
	if v, ok := decodeJSON(vm, cp.Result); ok {
		if len(cp.Result) <= maxCachedString && cp.Result[0] == '"' {
			r.lastStr = append(r.lastStr[:0], cp.Result...)
			r.lastStrV = v
		}
		return pr.resolve(v)
	}
	invalid := func(why string) error {
		e, err := r.h.makeError(goja.Undefined(), vm.ToValue(fmt.Sprintf("%s: the binding returned %s", cp.C.Name, why)), vm.ToValue("INVALID_RESULT"), vm.ToValue(""))
		if err != nil {
			return err
		}
		return pr.reject(e)
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
		return pr.reject(e)
	}
	return pr.resolve(v)
}
