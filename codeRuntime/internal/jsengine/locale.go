package jsengine

import _ "embed"

// LocaleSource evaluates to a function of the global object and whether to replace
// String.prototype.localeCompare's order (QuickJS; goja keeps its own behind the locale and option
// checks) that installs en-US versions of the locale-sensitive built-ins, which throw a RangeError
// for any other locale or option instead of answering wrongly.
//
//go:embed locale.js
var LocaleSource string
