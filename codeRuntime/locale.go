package coderuntime

import (
	_ "embed"
	"errors"
	"strings"
	"sync"

	"github.com/dop251/goja"
)

// localeSource evaluates to a function of the global object and whether to replace
// String.prototype.localeCompare (QuickJS only) that installs en-US versions of the locale-sensitive
// built-ins, which throw a RangeError for any other locale or option instead of answering wrongly.
//
//go:embed locale.js
var localeSource string

var localeProgram = sync.OnceValue(func() *goja.Program {
	return goja.MustCompile("locale.js", localeSource, true)
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

// quickjsPreludeWithLocale is the QuickJS prelude with locale.js called in it.
var quickjsPreludeWithLocale = sync.OnceValue(func() string {
	return strings.Replace(quickjsPrelude, "\t/*LOCALE*/\n", "\t("+strings.TrimSpace(stripLeadingComments(localeSource))+")(g, true);\n", 1)
})

// stripLeadingComments drops the line comments before the function expression.
func stripLeadingComments(s string) string {
	for strings.HasPrefix(s, "//") {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			return ""
		}
		s = s[i+1:]
	}
	return s
}

var errLocaleSetup = errors.New("coderuntime: locale.js is not a function")
