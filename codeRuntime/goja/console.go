package goja

import (
	"fmt"

	"github.com/dop251/goja"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
)

// logLevels are the console methods; each appends to the run's logs under its own level.
var logLevels = []string{"log", "info", "warn", "error", "debug"}

// consoleFunc is console[level]: it formats its arguments like Node and appends them to the logs,
// and interrupts the run with ErrOutputLimit once they exceed MaxLogBytes (keeping the logs up to
// the cap).
func (r *run) consoleFunc(level string) func(goja.FunctionCall) goja.Value {
	return func(fc goja.FunctionCall) goja.Value {
		if r.logBytes > r.cfg.MaxLogBytes {
			r.vm.Interrupt(coderuntime.ErrOutputLimit)
			return goja.Undefined()
		}
		v, err := r.h.format(goja.Undefined(), fc.Arguments...)
		if err != nil {
			throw(err)
		}
		text := v.String()
		r.logBytes += len(text) + 1
		if r.logBytes > r.cfg.MaxLogBytes {
			if keep := r.cfg.MaxLogBytes - (r.logBytes - len(text) - 1); keep >= 0 && keep < len(text) {
				text = text[:keep]
			}
			r.logs = append(r.logs, coderuntime.Log{Level: level, Text: text})
			r.vm.Interrupt(coderuntime.ErrOutputLimit)
			return goja.Undefined()
		}
		r.logs = append(r.logs, coderuntime.Log{Level: level, Text: text})
		return goja.Undefined()
	}
}

// maxUnhandledNotes bounds the notes noteUnhandled adds.
const maxUnhandledNotes = 10

// trackRejection is the VM's promise rejection tracker: it keeps the promises rejected with no
// handler, in order, until a handler is attached.
func (r *run) trackRejection(p *goja.Promise, op goja.PromiseRejectionOperation) {
	switch op {
	case goja.PromiseRejectionReject:
		r.unhandled = append(r.unhandled, p)
	case goja.PromiseRejectionHandle:
		for i, q := range r.unhandled {
			if q == p {
				r.unhandled = append(r.unhandled[:i], r.unhandled[i+1:]...)
				break
			}
		}
	}
}

// noteUnhandled adds a warn log for each promise the program let fail unobserved (a binding call
// it did not await, say), other than its own result, so the failure is visible in the run's output:
// "unhandled rejection: <reason>". At most maxUnhandledNotes notes, then a count of the rest; each
// within the output limit, and none once the logs are at their cap.
func (r *run) noteUnhandled() {
	var left []*goja.Promise
	for _, p := range r.unhandled {
		if p != r.main && p.State() == goja.PromiseStateRejected {
			left = append(left, p)
		}
	}
	r.unhandled = nil
	for i, p := range left {
		var text string
		if i == maxUnhandledNotes {
			text = fmt.Sprintf("%d more unhandled rejections", len(left)-i)
		} else {
			msg, _, err := r.describe(p.Result())
			if err != nil {
				return // the run is out of budget: no more notes
			}
			text = "unhandled rejection: " + msg
		}
		if r.logBytes+len(text)+1 > r.cfg.MaxLogBytes {
			return
		}
		r.logBytes += len(text) + 1
		r.logs = append(r.logs, coderuntime.Log{Level: "warn", Text: text})
		if i == maxUnhandledNotes {
			return
		}
	}
}
