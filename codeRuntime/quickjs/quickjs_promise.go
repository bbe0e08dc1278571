package quickjs

import (
	"errors"
	"reflect"
	"sync"
	"unsafe"

	"modernc.org/libc"
	lib "modernc.org/libquickjs"
	"modernc.org/quickjs"
)

// The QuickJS runtime must know, when the program makes a binding call, whether the program's
// promise has settled: a call made after that is refused, as the goja engine refuses it (no tool
// runs after settlement). JavaScript cannot see a promise's state synchronously and
// modernc.org/quickjs does not expose the engine's JS_PromiseState, so qjsPromiseSettled calls it
// on the engine value inside a quickjs.Value. That value is an unexported field: its layout is
// checked once (qjsValueLayout), and NewInProcess fails instead of running without the check when a
// new version of the module changed it.

// qjsValueLayout is the offset of the engine value in a quickjs.Value, or an error when the field
// is not there with the engine's value type.
var qjsValueLayout = sync.OnceValues(func() (uintptr, error) {
	f, ok := reflect.TypeFor[quickjs.Value]().FieldByName("v")
	if !ok || f.Type != reflect.TypeFor[lib.TJSValue]() {
		return 0, errors.New("coderuntime: this version of modernc.org/quickjs keeps a Value's engine value elsewhere; the run cannot tell when the program settled")
	}
	return f.Offset, nil
})

// qjsPromiseReader reads promise states for one run, on the run's goroutine.
type qjsPromiseReader struct {
	tls *libc.TLS // a thread of the engine's C runtime of its own, for the call's stack
}

// settled reports whether p is a promise that is no longer pending; a value that is not a promise
// counts as settled, so the answer is never "pending" by mistake.
func (r *qjsPromiseReader) settled(p *quickjs.Value) bool {
	off, err := qjsValueLayout()
	if err != nil {
		return true
	}
	if r.tls == nil {
		r.tls = libc.NewTLS()
	}
	raw := *(*lib.TJSValue)(unsafe.Add(unsafe.Pointer(p), off))
	return lib.XJS_PromiseState(r.tls, 0, raw) != lib.EJS_PROMISE_PENDING
}

// close frees the reader's thread.
func (r *qjsPromiseReader) close() {
	if r.tls != nil {
		r.tls.Close()
		r.tls = nil
	}
}
