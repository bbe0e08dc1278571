package coderuntime

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dop251/goja"

	"github.com/dsh-go/dsh/internal/safeerr"
)

// failure classifies an error that came out of the VM.
func (r *run) failure(err error) *Failure {
	var ie *goja.InterruptedError
	if safeerr.AsAny(err, &ie) {
		if cause, ok := ie.Value().(error); ok {
			err = cause
		}
	}
	var so *goja.StackOverflowError
	var ex *goja.Exception
	switch {
	case safeerr.Is(err, ErrCPUBudget):
		return &Failure{Kind: KindTimeout, Cause: ErrCPUBudget, Logs: r.logs,
			Message: fmt.Sprintf("the program used its %s busy-CPU budget", r.cfg.CPUBudget)}
	case safeerr.Is(err, context.DeadlineExceeded), safeerr.Is(err, context.Canceled):
		return ctxFailure(err, r.logs)
	case safeerr.Is(err, ErrOutputLimit):
		return &Failure{Kind: KindOutputLimit, Cause: ErrOutputLimit, Logs: r.logs,
			Message: fmt.Sprintf("console output exceeded %d bytes", r.cfg.MaxLogBytes)}
	case safeerr.Is(err, ErrHeapLimit):
		return &Failure{Kind: KindLimit, Cause: ErrHeapLimit, Logs: r.logs,
			Message: fmt.Sprintf("the process heap exceeded %d bytes while the program ran", r.cfg.MaxHeapBytes)}
	case safeerr.AsAny(err, &so):
		return &Failure{Kind: KindLimit, Cause: ErrStackDepth, Logs: r.logs,
			Message: fmt.Sprintf("maximum call stack size (%d) exceeded", r.cfg.MaxCallStackSize)}
	case safeerr.AsAny(err, &ex):
		f := r.exception(ex.Value())
		if f.Line == 0 {
			for _, fr := range ex.Stack() {
				if pos := fr.Position(); pos.Filename == sourceName && pos.Line > 0 {
					f.Line, f.Column = pos.Line, pos.Column
					break
				}
			}
		}
		return f
	}
	return &Failure{Kind: KindException, Message: err.Error(), Cause: err, Logs: r.logs}
}

func ctxFailure(err error, logs []Log) *Failure {
	if safeerr.Is(err, context.DeadlineExceeded) {
		return &Failure{Kind: KindTimeout, Message: "the program exceeded its time budget", Cause: context.DeadlineExceeded, Logs: logs}
	}
	return &Failure{Kind: KindAbort, Message: "the run was cancelled", Cause: context.Canceled, Logs: logs}
}

// exception describes a thrown or rejected value, with the model-source position of its stack. A
// budget or cancellation that ends the run while the value is described is that failure (a timeout
// or an abort), not an exception.
func (r *run) exception(v goja.Value) *Failure {
	msg, stack, err := r.describe(v)
	if err != nil {
		return r.failure(err)
	}
	f := &Failure{Kind: KindException, Message: msg, Logs: r.logs}
	f.Line, f.Column = stackPosition(stack)
	return f
}

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
		if safeerr.AsAny(err, &ie) || safeerr.Is(err, ErrCPUBudget) {
			return notPrintable, "", err
		}
		return notPrintable, "", nil
	}
	o, ok := out.(*goja.Object)
	if !ok {
		return notPrintable, "", nil
	}
	return capText(o.Get("0").String(), r.cfg.MaxLogBytes), capText(o.Get("1").String(), r.cfg.MaxLogBytes), nil
}

// capText cuts s to at most max bytes (at a character boundary), saying so at its end.
func capText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	const note = " … (cut: the text is longer than the output limit)"
	cut := max - len(note)
	if cut < 0 {
		cut = 0
	}
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + note
}

var stackPosRe = regexp.MustCompile(regexp.QuoteMeta(sourceName) + `:(\d+):(\d+)`)

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
