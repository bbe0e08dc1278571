package toolotel

import (
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/dsh-go/dsh/internal/textcut"
	"github.com/dsh-go/dsh/plugins/tools"
)

// maxCodeLen bounds an error code, error name or tool type in an
// attribute: the pipeline's own are a few dozen bytes.
const maxCodeLen = 64

// maxCodes bounds the distinct error.type values the metrics record: a
// tool or a remote peer may invent any number of codes, and each would be
// a new series held for the process's life.
const maxCodes = 64

// truncatedMark ends a value cut by truncate.
const truncatedMark = "…[truncated]"

// truncate returns s if it is at most max bytes long; otherwise its
// longest prefix that ends on a UTF-8 boundary and leaves room for
// truncatedMark, followed by the mark, at most max bytes in all (see
// textcut.Fit). s must be valid UTF-8 (clean makes any string so).
func truncate(s string, max int) string { return textcut.Fit(s, max, truncatedMark) }

// clean makes an untrusted string fit for an attribute: each invalid
// UTF-8 byte replaced by U+FFFD and control characters (C0, DEL, C1)
// dropped, cut to at most max bytes as truncate does. It reads at most
// about max bytes of s beyond what it keeps.
func clean(s string, max int) string {
	if len(s) <= max && isPlain(s) {
		return s
	}
	var b strings.Builder
	for _, r := range s { // an invalid byte is utf8.RuneError, U+FFFD
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			continue
		}
		if b.Len()+utf8.RuneLen(r) > max {
			return truncate(b.String()+string(r), max)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// isPlain reports whether s is printable ASCII.
func isPlain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}

// boundedSet admits at most max distinct values besides the pipeline's
// own error codes, which it always admits.
type boundedSet struct {
	m   sync.Map // string → struct{}
	mu  sync.Mutex
	n   int // values admitted beyond the pipeline's codes; under mu
	max int
}

func newBoundedSet(max int) *boundedSet {
	b := &boundedSet{max: max}
	for _, c := range []tools.ErrorCode{
		tools.CodeUnknownTool, tools.CodeInvalidArgs, tools.CodeInvalidCall, tools.CodeAborted,
		tools.CodeAbortedBeforeDispatch, tools.CodeToolError, tools.CodeDenied, tools.CodeGuardFailed,
		tools.CodeApprovalRejected, tools.CodeApprovalCancelled, tools.CodeApprovalUnavailable,
		tools.CodeApprovalFailed, tools.CodeBlocked, tools.CodeListenerError, tools.CodeInvalidDecision,
		tools.CodeInvalidResult, tools.CodeToolTimeout, tools.CodeCodeRunFailed, tools.CodeRunSettled,
		tools.CodeInternal,
	} {
		b.m.Store(string(c), struct{}{})
	}
	return b
}

// bound returns v when it is admitted (already seen, or admitted now
// while fewer than max others were), else "_OTHER". v must be clean.
func (b *boundedSet) bound(v string) string {
	if _, ok := b.m.Load(v); ok {
		return v
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.m.Load(v); ok {
		return v
	}
	if b.n >= b.max {
		return otherValue
	}
	b.n++
	b.m.Store(v, struct{}{})
	return v
}
