package goja

import (
	"time"

	"github.com/dlclark/regexp2/v2"
)

// regexpMatchTimeout is the bound LimitRegexpMatchTime sets: far above what a legitimate match
// takes, short against a busy-CPU budget of seconds.
const regexpMatchTimeout = 250 * time.Millisecond

// LimitRegexpMatchTime makes every regexp2 match in the process give up after 250ms, finding
// nothing. A program that runs untrusted code in a [Runtime] calls it once, early in main (before the
// first Run), to keep a catastrophic regular expression from holding Run past its budgets; this
// package never calls it, so importing it changes nothing process-wide.
//
// Why it is needed: goja runs the patterns Go's regexp cannot (backreferences, lookaround) on
// github.com/dlclark/regexp2, which backtracks in native code that no interrupt reaches, so
// /^(a+)+(?=b)/ tested on 60 a's would keep Run busy forever. With the bound, such a match ends
// within 250ms (plus regexp2's clock granularity, 100ms), and the run's budgets apply again.
//
// Why it is process-wide: goja compiles those patterns with regexp2's defaults and offers no
// per-runtime setting, so the only handle is regexp2.DefaultMatchTimeout, which LimitRegexpMatchTime
// lowers to 250ms (it never raises it: a lower value set by the program stays). It therefore also
// bounds regexp2 patterns compiled by other code in the process without their own MatchTimeout.
// Patterns compiled before the call keep the timeout they were compiled with, including those of
// programs a Goja has already compiled and cached. It writes a variable regexp2 reads without
// synchronization: do not call it while other goroutines compile regexp2 patterns or Run programs.
func LimitRegexpMatchTime() {
	if regexp2.DefaultMatchTimeout > regexpMatchTimeout {
		regexp2.DefaultMatchTimeout = regexpMatchTimeout
	}
}
