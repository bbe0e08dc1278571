package goja

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/dop251/goja"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
	"github.com/dsh-go/dsh/codeRuntime/internal/jsengine"
	"github.com/dsh-go/dsh/internal/safeerr"
)

// failure classifies an error that came out of the VM.
func (r *run) failure(err error) *coderuntime.Failure {
	var ie *goja.InterruptedError
	if safeerr.AsAny(err, &ie) {
		if cause, ok := ie.Value().(error); ok {
			err = cause
		}
	}
	var so *goja.StackOverflowError
	var ex *goja.Exception
	switch {
	case safeerr.Is(err, coderuntime.ErrCPUBudget):
		return &coderuntime.Failure{Kind: coderuntime.KindTimeout, Cause: coderuntime.ErrCPUBudget, Logs: r.logs,
			Message: fmt.Sprintf("the program used its %s busy-CPU budget", r.cfg.CPUBudget)}
	case safeerr.Is(err, context.DeadlineExceeded), safeerr.Is(err, context.Canceled):
		return jsengine.ContextFailure(err, r.logs)
	case safeerr.Is(err, coderuntime.ErrOutputLimit):
		return &coderuntime.Failure{Kind: coderuntime.KindOutputLimit, Cause: coderuntime.ErrOutputLimit, Logs: r.logs,
			Message: fmt.Sprintf("console output exceeded %d bytes", r.cfg.MaxLogBytes)}
	case safeerr.Is(err, coderuntime.ErrHeapLimit):
		return &coderuntime.Failure{Kind: coderuntime.KindLimit, Cause: coderuntime.ErrHeapLimit, Logs: r.logs,
			Message: fmt.Sprintf("the process heap exceeded %d bytes while the program ran", r.cfg.MaxHeapBytes)}
	case safeerr.AsAny(err, &so):
		return &coderuntime.Failure{Kind: coderuntime.KindLimit, Cause: coderuntime.ErrStackDepth, Logs: r.logs,
			Message: fmt.Sprintf("maximum call stack size (%d) exceeded", r.cfg.MaxCallStackSize)}
	case safeerr.AsAny(err, &ex):
		f := r.exception(ex.Value())
		if f.Line == 0 {
			for _, fr := range ex.Stack() {
				if pos := fr.Position(); pos.Filename == jsengine.SourceName && pos.Line > 0 {
					f.Line, f.Column = pos.Line, pos.Column
					break
				}
			}
		}
		return f
	}
	return &coderuntime.Failure{Kind: coderuntime.KindException, Message: err.Error(), Cause: err, Logs: r.logs}
}

// exception describes a thrown or rejected value, with the model-source position of its stack. A
// budget or cancellation that ends the run while the value is described is that failure (a timeout
// or an abort), not an exception.
func (r *run) exception(v goja.Value) *coderuntime.Failure {
	msg, stack, err := r.describe(v)
	if err != nil {
		return r.failure(err)
	}
	if msg == "ReferenceError: require is not defined" {
		msg += noModulesNote
	}
	f := &coderuntime.Failure{Kind: coderuntime.KindException, Message: msg, Logs: r.logs}
	f.Line, f.Column = stackPosition(stack)
	return f
}

// noModulesNote follows the ReferenceError an import(name) rejects with (esbuild lowers it to a
// require call) or a call of require: no program can load a module.
const noModulesNote = " (a program cannot load modules: import() and require are not available)"

// notPrintable is the description of a thrown value whose description threw.
const notPrintable = "Uncaught exception (not printable)"

// describe returns "name: message" (or "Uncaught <value>") and the stack of a thrown value, each
// capped to Config.MaxLogBytes bytes. err is the interrupt (a budget, or the run's context ending)
// that stopped the description, if one did: the run is over then.
func (r *run) describe(v goja.Value) (msg, stack string, err error) {
	if v == nil {
		v = goja.Undefined()
	}
	var out goja.Value
	if err := r.enter(func() (err error) { out, err = r.h.describe(goja.Undefined(), v); return }); err != nil {
		var ie *goja.InterruptedError
		if safeerr.AsAny(err, &ie) || safeerr.Is(err, coderuntime.ErrCPUBudget) {
			return notPrintable, "", err
		}
		return notPrintable, "", nil
	}
	o, ok := out.(*goja.Object)
	if !ok {
		return notPrintable, "", nil
	}
	return jsengine.CapText(o.Get("0").String(), r.cfg.MaxLogBytes), jsengine.CapText(o.Get("1").String(), r.cfg.MaxLogBytes), nil
}

var stackPosRe = regexp.MustCompile(regexp.QuoteMeta(jsengine.SourceName) + `:(\d+):(\d+)`)

// stackPosition finds the innermost frame of the model's program in a goja stack string.
func stackPosition(stack string) (line, col int) {
	for _, l := range strings.Split(stack, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "at ") {
			continue
		}
		m := stackPosRe.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		line, _ = strconv.Atoi(m[1])
		col, _ = strconv.Atoi(m[2])
		if line > 0 {
			return line, col
		}
	}
	return 0, 0
}

// sourceMapMarker starts the inline source map jsengine.WrapProgram appends to its JavaScript.
const sourceMapMarker = "//# sourceMappingURL=data:application/json;base64,"

// withGojaColumns returns js with its inline source map's generated columns moved one to the right.
// goja looks a position up with its 1-based column where the map's generated columns are 0-based,
// so without the move a position found the segment that starts one character later: a call
// (recorded at its opening parenthesis) was reported at its first argument or its closing
// parenthesis (o.f() at the ")", JSON.parse('{') at the string), not at its callee as V8 reports
// it. Generated columns are delta-encoded within a line, so only each line's first segment changes.
// A map that cannot be decoded is left as it is.
func withGojaColumns(js string) string {
	i := strings.LastIndex(js, sourceMapMarker)
	if i < 0 {
		return js
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(js[i+len(sourceMapMarker):]))
	if err != nil {
		return js
	}
	var m map[string]json.RawMessage
	var mappings string
	if json.Unmarshal(raw, &m) != nil || json.Unmarshal(m["mappings"], &mappings) != nil {
		return js
	}
	groups := strings.Split(mappings, ";")
	for l, group := range groups {
		segs := strings.Split(group, ",")
		for i, seg := range segs {
			if seg == "" {
				continue
			}
			f, err := jsengine.DecodeVLQ(seg)
			if err != nil || len(f) == 0 {
				return js
			}
			f[0]++
			segs[i] = jsengine.EncodeVLQ(f)
			groups[l] = strings.Join(segs, ",")
			break
		}
	}
	var b strings.Builder
	b.WriteString(strings.Join(groups, ";"))
	enc, err := json.Marshal(b.String())
	if err != nil {
		return js
	}
	m["mappings"] = enc
	out, err := json.Marshal(m)
	if err != nil {
		return js
	}
	return js[:i] + sourceMapMarker + base64.StdEncoding.EncodeToString(out) + "\n"
}
