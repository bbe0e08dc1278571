package goja

import (
	"errors"
	"sync"

	"github.com/dop251/goja"

	"github.com/dsh-go/dsh/codeRuntime/internal/jsengine"
)

var localeProgram = sync.OnceValue(func() *goja.Program {
	return goja.MustCompile("locale.js", jsengine.LocaleSource, true)
})

// installLocale installs locale.js in r's VM.
func (r *run) installLocale() error {
	v, err := r.vm.RunProgram(localeProgram())
	if err != nil {
		return err
	}
	f, ok := goja.AssertFunction(v)
	if !ok {
		return errLocaleSetup
	}
	_, err = f(goja.Undefined(), r.vm.GlobalObject(), r.vm.ToValue(false))
	return err
}

var errLocaleSetup = errors.New("coderuntime: locale.js is not a function")
