package coderuntime

import "github.com/dop251/goja"

// logLevels are the console methods; each appends to the run's logs under its own level.
var logLevels = []string{"log", "info", "warn", "error", "debug"}

// consoleFunc is console[level]: it formats its arguments like Node and appends them to the logs,
// and interrupts the run with ErrOutputLimit once they exceed MaxLogBytes (keeping the logs up to
// the cap).
func (r *run) consoleFunc(level string) func(goja.FunctionCall) goja.Value {
	return func(fc goja.FunctionCall) goja.Value {
		if r.logBytes > r.cfg.MaxLogBytes {
			r.vm.Interrupt(ErrOutputLimit)
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
			r.logs = append(r.logs, Log{Level: level, Text: text})
			r.vm.Interrupt(ErrOutputLimit)
			return goja.Undefined()
		}
		r.logs = append(r.logs, Log{Level: level, Text: text})
		return goja.Undefined()
	}
}
