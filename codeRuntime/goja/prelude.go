package goja

import (
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/dop251/goja"
)

// helpers are the prelude's functions, captured before the program runs so it cannot replace them.
type helpers struct {
	format, describe, makeError, stringify, parse, rangeError, syntaxError, trampoline goja.Callable
	// isArray, keys and get are Array.isArray, Object.keys and a property read (o[k]), for argJSON.
	isArray, keys, get goja.Callable
	// nativeStringify is goja's own JSON.stringify (the prelude replaces the global one).
	nativeStringify goja.Callable
	// stringPrototype is String.prototype, which goja's JSON.stringify, unlike String objects,
	// serializes as an ordinary object (see argJSON).
	stringPrototype *goja.Object
	// asyncFunction and generatorFunction are the constructors of async and generator functions.
	asyncFunction, generatorFunction *goja.Object
}

// preludeSource evaluates to a function of the nesting limit (maxNestingDepth) and the cap of a
// failure's text (Config.MaxLogBytes, in UTF-16 units) that returns the
// helpers, in the order of the fields of helpers, and replaces JSON.stringify with the guarded one.
//
//go:embed prelude.js
var preludeSource string

var prelude = sync.OnceValue(func() *goja.Program {
	return goja.MustCompile("prelude.js", preludeSource, true)
})

// loadPrelude runs the prelude in r's VM and keeps its helpers in r.h.
func (r *run) loadPrelude() error {
	vm := r.vm
	if json, ok := vm.Get("JSON").(*goja.Object); ok {
		r.h.nativeStringify, _ = goja.AssertFunction(json.Get("stringify"))
	}
	if r.h.nativeStringify == nil {
		return errors.New("coderuntime: no JSON.stringify")
	}
	if str, ok := vm.Get("String").(*goja.Object); ok {
		r.h.stringPrototype, _ = str.Get("prototype").(*goja.Object)
	}
	if r.h.stringPrototype == nil {
		return errors.New("coderuntime: no String.prototype")
	}
	pv, err := vm.RunProgram(prelude())
	if err != nil {
		return fmt.Errorf("coderuntime: prelude: %w", err)
	}
	build, ok := goja.AssertFunction(pv)
	if !ok {
		return errors.New("coderuntime: the prelude is not a function")
	}
	hv, err := build(goja.Undefined(), vm.ToValue(r.maxDepth), vm.ToValue(r.cfg.MaxLogBytes))
	if err != nil {
		return fmt.Errorf("coderuntime: prelude: %w", err)
	}
	ho, ok := hv.(*goja.Object)
	if !ok {
		return errors.New("coderuntime: the prelude returned no helpers")
	}
	fns := []*goja.Callable{&r.h.format, &r.h.describe, &r.h.makeError, &r.h.stringify, &r.h.parse, &r.h.rangeError, &r.h.syntaxError, &r.h.trampoline, &r.h.isArray, &r.h.keys, &r.h.get}
	for i, dst := range fns {
		f, ok := goja.AssertFunction(ho.Get(strconv.Itoa(i)))
		if !ok {
			return fmt.Errorf("coderuntime: prelude helper %d is not a function", i)
		}
		*dst = f
	}
	in, ok := ho.Get(strconv.Itoa(len(fns))).(*goja.Object)
	if !ok {
		return errors.New("coderuntime: the prelude returned no intrinsics")
	}
	if r.h.asyncFunction, ok = in.Get("0").(*goja.Object); !ok {
		return errors.New("coderuntime: the prelude found no AsyncFunction")
	}
	if r.h.generatorFunction, ok = in.Get("1").(*goja.Object); !ok {
		return errors.New("coderuntime: the prelude found no GeneratorFunction")
	}
	return nil
}
