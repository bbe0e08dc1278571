package quickjs

import (
	"strings"
	"sync"

	"github.com/dsh-go/dsh/codeRuntime/internal/jsengine"
)

// quickjsPreludeWithLocale is the QuickJS prelude with locale.js called in it.
var quickjsPreludeWithLocale = sync.OnceValue(func() string {
	return strings.Replace(quickjsPrelude, "\t/*LOCALE*/\n", "\t("+strings.TrimSpace(stripLeadingComments(jsengine.LocaleSource))+")(g, true);\n", 1)
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
