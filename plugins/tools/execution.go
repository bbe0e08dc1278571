package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"github.com/dsh-go/dsh/host"
)

// Call is the caller-supplied description of one tool call. The caller's cancellation is the context.Context
// passed to [Registry.Execute] next to it.
type Call struct {
	// ID is the model's tool-call id; it is copied onto the result. It may
	// be empty; otherwise it must be valid UTF-8 without control characters
	// (C0, DEL, C1), at most [MaxCallIDLen] bytes long, so that it survives
	// JSON and a log line unchanged. A call whose ID is not is rejected
	// before any policy runs with INVALID_CALL, and its result (and its
	// Execution) carry the repaired id described at [Result].
	ID string
	// Name is the tool to call.
	Name string
	// Arguments is the argument object as the model produced it. It must be
	// lossless JSON (see canonjson.CanonicalizeObject); empty or null means {}.
	Arguments json.RawMessage
	// Agent is the agent scope the call runs for ("" = none): tool
	// resolution, scope-filtered listeners, scoped guards and approval all
	// follow it.
	Agent host.ScopeKey
	// Parent is the token of an enclosing execution (a Code Mode sub-call),
	// or zero.
	Parent Token
	// subCall marks a Code Mode sub-call, whose ID the bridge built from
	// its run_code call's checked ID (see MaxCallIDLen). Only this package
	// can set it.
	subCall bool
}

// MaxCallIDLen is the longest accepted [Call].ID, in bytes. Provider ids
// are a few dozen bytes; the limit only stops an id from carrying a
// payload into every log event. It bounds the ids callers give: a Code
// Mode sub-call's id, "<outer id>:code:<n>", which the registry builds
// from its run_code call's id, may exceed it by that suffix (at most
// maxSubCallSuffix bytes), so a run_code call whose id is up to
// MaxCallIDLen bytes long can make sub-calls.
const MaxCallIDLen = 1024

// maxSubCallSuffix is the longest suffix a Code Mode sub-call id adds to
// its run_code call's id: ":code:" and a positive int64 in decimal.
const maxSubCallSuffix = len(":code:") + 19

// checkCallID reports why id is not a valid call id of at most max bytes,
// or "" when it is.
func checkCallID(id string, max int) string {
	if len(id) > max {
		return fmt.Sprintf("is %d bytes long, longer than %d", len(id), max)
	}
	for i, r := range id {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(id[i:], "\uFFFD"):
			return fmt.Sprintf("is not valid UTF-8 (at byte %d)", i)
		case unicode.IsControl(r):
			return fmt.Sprintf("contains the control character %U at byte %d", r, i)
		}
	}
	return ""
}

// repairCallID returns id as a valid call id: each invalid UTF-8 sequence
// and control character replaced by U+FFFD, cut on a rune boundary to at
// most MaxCallIDLen bytes.
func repairCallID(id string) string {
	id = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return utf8.RuneError
		}
		return r
	}, strings.ToValidUTF8(id, "\uFFFD"))
	if len(id) > MaxCallIDLen {
		cut := MaxCallIDLen
		for cut > 0 && !utf8.RuneStart(id[cut]) {
			cut--
		}
		id = id[:cut]
	}
	return id
}

// Token is the opaque identity of one execution, assigned by the registry
// (callers can only pass an existing token as a Call's Parent). Tokens are
// comparable; the zero Token means "none". A Token exposes no state of the
// execution it names.
type Token struct{ id uint64 }

var tokenSeq atomic.Uint64

func newToken() Token { return Token{id: tokenSeq.Add(1)} }

// IsZero reports whether t is the zero ("none") token.
func (t Token) IsZero() bool { return t.id == 0 }

// String returns an opaque label for logs ("tok-17"); it is not a way to
// make tokens.
func (t Token) String() string {
	if t.id == 0 {
		return "tok-none"
	}
	return "tok-" + strconv.FormatUint(t.id, 10)
}

// Execution is the pipeline-owned identity of one call, shared by every
// phase: token, call id, tool name, the frozen canonical arguments, agent,
// parent and the tool resolved for the agent when the call entered the
// pipeline (nil for an unknown tool). It is immutable and safe for
// concurrent use: the arguments are held as a string, every accessor
// returns a copy or an immutable value, so no listener can change what
// another phase or the tool body sees.
//
// An Execution is its own call's and is never reused, but the Executions
// of one ExecuteBatch may share one allocation (eight at a time): one kept
// after its call keeps the memory of up to seven others (about 4 KB), and
// runtime.SetFinalizer must not be given one (runtime.AddCleanup may).
type Execution struct {
	token  Token
	callID string
	name   string
	// args is the canonical JSON ("" when the input was rejected), whose
	// bytes this package's own decoders read in place (argBytes).
	args   string
	agent  host.ScopeKey
	parent Token
	tool   *Tool
	// hint is appended to the UNKNOWN_TOOL message (Code Mode's "call it
	// from run_code").
	hint string
	// stage is the pipeline stage (an index into Stages) the goroutine
	// running Execute is in; only that goroutine reads and writes it (to
	// report a runtime.Goexit).
	stage uint8
	// emitting says that tools/result is being emitted (stage is
	// stageResult by then): a runtime.Goexit in a tracer's End, before,
	// still emits the call's final result, one in an observer ends that
	// one delivery. Only the goroutine running the call touches it.
	emitting bool
	twinLen  uint32
	// out is the state of the call's declared output (outputs.go).
	out outputState
	// bodies coordinates tool bodies with the end of the tools/execute
	// stage.
	bodies bodies
	// body0 is the context of the first body dispatched behind
	// tools/execute wrappers (bodyCtx), held here so that it costs no
	// allocation of its own; a retry's later bodies get their own.
	body0 bodyCtx
	// post is the result tools/post-execute runs over (post), held here
	// so that its payload, PostInput, is two words that the host's links
	// hold by value rather than a copy on the heap; written once, before
	// the stage, and never again.
	post Result
	// twin is the first of the 2*twinLen contents of one allocation that
	// holds the copies of the final result's content made for the caller
	// and for the tools/result observers (detach, noticeCopy); only the
	// goroutine running the call touches them.
	twin *Content
	// decoded hands a typed tool's arguments, decoded while they were
	// validated, to the body: the head of a *decoded[A, S] that the body
	// takes once (see Define). Policy code cannot reach it.
	decoded atomic.Pointer[decodedHead]
	// admitted names the typed decoder (a *typedDecoder) whose admitArgs
	// checked and decoded the arguments in stage 1, for its ValidateArgs
	// in stage 2 (and only then: stage 2 clears it); nil when none did.
	admitted unsafe.Pointer
	// trace follows the call when a tracer is registered (trace.go); set
	// in stage 1, before the call runs anything else.
	trace *callTraceBox
	// argBuf holds args when they are short enough (set once, in stage
	// 1, and never written again), saving their own allocation.
	argBuf [32]byte
}

// bodies is the dispatch state of one execution: a small state machine,
// under mu, that makes "no body runs after the call's result was given"
// hold by construction. Dispatch registers a body before starting it
// (begin) and unregisters it when it returns (end); the end of the
// tools/execute stage (settle) refuses every later registration and waits
// for the registered bodies, cancelling their contexts. A body therefore
// either started before the stage ended and is waited for, or never
// starts.
type bodies struct {
	mu      sync.Mutex
	over    bool // the stage is over: no body may start
	started bool // a body started (ABORTED, not ABORTED_BEFORE_DISPATCH)
	goexit  bool // a body called runtime.Goexit
	// direct says a body dispatched without wrappers (dispatchDirect) is
	// running: not under mu, since only the goroutine running the stage,
	// which calls the body itself, touches it.
	direct  bool
	running int // bodies started and not yet returned
	// cancels holds what cancels each running body's context (nil in a
	// free slot); buf backs it for the usual single body.
	cancels []bodyCanceler
	buf     [1]bodyCanceler
	idle    chan struct{} // closed when running drops to 0 after over
}

// bodyCanceler cancels a running body's context with a cause.
type bodyCanceler interface{ cancelBody(cause error) }

// noCancel is the canceler of a body run under the caller's own context
// (no wrapper): called directly by the stage, it cannot outlive it.
type noCancel struct{}

func (noCancel) cancelBody(error) {}

// begin registers a body about to start, whose context cancel cancels (nil:
// the body runs under the caller's context, called directly, so it cannot
// outlive the stage); it returns the body's slot, or false when the stage
// is over.
func (b *bodies) begin(cancel bodyCanceler) (slot int, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.over {
		return 0, false
	}
	b.started = true
	b.running++
	if cancel == nil {
		cancel = noCancel{} // a taken slot is never nil
	}
	if b.cancels == nil {
		b.cancels = b.buf[:0]
	}
	for i, c := range b.cancels {
		if c == nil {
			b.cancels[i] = cancel
			return i, true
		}
	}
	b.cancels = append(b.cancels, cancel)
	return len(b.cancels) - 1, true
}

// end unregisters the body in slot; goexit says it called runtime.Goexit.
func (b *bodies) end(slot int, goexit bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.cancels[slot] = nil
	b.goexit = b.goexit || goexit
	if b.running--; b.running == 0 && b.idle != nil {
		close(b.idle)
	}
}

// settle ends the stage: no body starts after it returns, every body still
// running is cancelled with cause and waited for. It is idempotent and
// reports whether any body started.
func (b *bodies) settle(cause error) (started bool) {
	b.mu.Lock()
	b.over = true
	if b.running == 0 {
		started = b.started
		b.mu.Unlock()
		return started
	}
	if b.idle == nil {
		b.idle = make(chan struct{})
	}
	idle := b.idle
	cancels := slices.Clone(b.cancels)
	b.mu.Unlock()
	for _, c := range cancels {
		if c != nil {
			c.cancelBody(cause)
		}
	}
	<-idle
	return true
}

// bodyCtx is the context of a tool body dispatched behind tools/execute
// wrappers: the context the wrapper passed to next (wctx, untrusted),
// cancelled too by the caller's context (merged by dispatch: a wrapper
// that replaced the context cannot detach the body from the caller), by
// the end of the stage (settle, cause ErrAbandoned) and when the body
// returns. It behaves as context.WithCancelCause(wctx) cancelled by those
// does, and is that context, made lazily: made only when something needs
// it (the body asks for Done, derives a context, or reads Err or Value
// after a cancellation), which costs two allocations that a body ignoring
// its context, or only polling Err, never pays.
//
// Before it is made, Err reports a recorded cancellation or wctx's own,
// making the context first, so the cause read next (context.Cause reads
// Err, then Value) is the one the made context holds; Value asks wctx,
// as the made context would; Deadline is wctx's. A cancellation recorded
// before the context is made is applied when it is, after wctx's own: a
// cancellation of wctx already visible when one is recorded makes the
// context first, so the earlier cause wins, as it would have.
type bodyCtx struct {
	wctx    context.Context // what the wrapper passed to next
	claimed atomic.Bool     // Execution.body0 is in use
	made    atomic.Bool     // ctx and cancel are set, for good
	pending atomic.Bool     // a cancellation is recorded in cause
	mu      sync.Mutex
	ctx     context.Context
	cancel  context.CancelCauseFunc
	cause   error // the first recorded cancellation's cause (nil: Canceled)
}

// newBodyCtx returns the context for a body exec dispatches under wctx:
// exec.body0 the first time, a fresh one for a retry's later bodies.
func newBodyCtx(exec *Execution, wctx context.Context) *bodyCtx {
	c := &exec.body0
	if !c.claimed.CompareAndSwap(false, true) {
		c = new(bodyCtx)
	}
	c.wctx = wctx
	return c
}

// Deadline is wctx's, as a context derived from it has.
func (c *bodyCtx) Deadline() (time.Time, bool) { return c.wctx.Deadline() }

// Done makes the context and returns its channel.
func (c *bodyCtx) Done() <-chan struct{} { return c.get().Done() }

// Err is the made context's error; before it is made, nil unless a
// cancellation was recorded or wctx is done, in which case the context is
// made first (so that its cause is there to read).
func (c *bodyCtx) Err() error {
	if !c.made.Load() {
		if !c.pending.Load() && c.wctx.Err() == nil {
			return nil
		}
	}
	return c.get().Err()
}

// Value is the made context's value for key; before it is made, and while
// nothing cancelled it, wctx's, which is what the made context would
// return for any key but the context package's own (read by Cause and by
// a derived context, after Err or Done, which make it).
func (c *bodyCtx) Value(key any) any {
	if !c.made.Load() && c.Err() == nil && !c.made.Load() {
		return c.wctx.Value(key)
	}
	return c.get().Value(key)
}

// String names the context (fmt, context's own String methods).
func (c *bodyCtx) String() string { return "tools.bodyContext" }

// get makes the context, once, applying a recorded cancellation.
func (c *bodyCtx) get() context.Context {
	if c.made.Load() {
		return c.ctx
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.made.Load() {
		parent := c.wctx
		if c.pending.Load() {
			// Cancelled already: wctx's values, but not a later
			// cancellation of wctx, which would replace the cause.
			parent = context.WithoutCancel(parent)
		}
		ctx, cancel := context.WithCancelCause(parent)
		if c.pending.Load() {
			cancel(c.cause)
		}
		c.ctx, c.cancel = ctx, cancel
		c.made.Store(true)
	}
	return c.ctx
}

// cancelBody cancels the body's context with cause (nil: Canceled), or
// records the cancellation until the context is made; the first one wins.
func (c *bodyCtx) cancelBody(cause error) {
	if !c.made.Load() && !c.pending.Load() && c.wctx.Err() != nil {
		// wctx's cancellation came first: make the context now, so that
		// its cause is the one kept.
		c.get()
	}
	c.mu.Lock()
	if c.made.Load() {
		cancel := c.cancel
		c.mu.Unlock()
		cancel(cause)
		return
	}
	if !c.pending.Load() {
		c.cause = cause
		c.pending.Store(true)
	}
	c.mu.Unlock()
}

// goexited reports whether a body called runtime.Goexit.
func (b *bodies) goexited() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.goexit || b.direct
}

// Token returns the execution's opaque identity.
func (e *Execution) Token() Token { return e.token }

// CallID returns the model's tool-call id.
func (e *Execution) CallID() string { return e.callID }

// Name returns the called tool's name.
func (e *Execution) Name() string { return e.name }

// Args returns a copy of the canonical argument bytes (nil when the input
// was rejected; such executions never reach a policy or a tool). Prefer
// [Execution.Arg] or [Execution.Decode] on hot paths.
func (e *Execution) Args() json.RawMessage {
	if e.args == "" {
		return nil
	}
	return json.RawMessage(e.args)
}

// argBytes returns the canonical arguments as bytes ("{}" when the input
// was rejected), for this package's own decoders, which only read them.
func (e *Execution) argBytes() []byte {
	if e.args == "" {
		return []byte("{}")
	}
	return unsafe.Slice(unsafe.StringData(e.args), len(e.args))
}

// ArgsString returns the canonical arguments as a string, without copying.
func (e *Execution) ArgsString() string { return e.args }

// Arg reads one value of the arguments without decoding the rest, by keys
// from the argument object down: each key is a property name, matched
// exactly whatever characters it holds ("file.path", "@this", "a|b", "#",
// "*" and "" are names like any other), or, where the value is an array, an
// element index in decimal without sign or leading zero ("0", "12"), as the
// reference tokens of a JSON Pointer. Arg("edits", "0", "old") reads what
// decoding the arguments into map[string]any and indexing it the same way
// would. With no keys it returns the whole object. A key that matches
// nothing gives a [Value] whose Exists() is false.
//
// This is the accessor for policy code: a name taken from a tool's schema
// or a model's call cannot change what it reads.
func (e *Execution) Arg(keys ...string) Value {
	return Value{Raw: e.args}.Get(keys...)
}

// Decode unmarshals the arguments into v (a pointer), as encoding/json
// does.
func (e *Execution) Decode(v any) error {
	args := e.args
	if args == "" {
		args = "{}"
	}
	return json.Unmarshal([]byte(args), v)
}

// Agent returns the agent scope of the call ("" = none).
func (e *Execution) Agent() host.ScopeKey { return e.agent }

// Parent returns the enclosing execution's token, or zero.
func (e *Execution) Parent() Token { return e.parent }

// Tool returns the tool this call dispatches to, as resolved for the agent
// when the call entered the pipeline, or nil for an unknown tool.
func (e *Execution) Tool() *Tool { return e.tool }

// ErrorInfo is the structured failure class of an isError result: Code is
// the stable code to switch on, Name the failure's class name (a [Namer]'s
// Name, or the error's Go type name).
type ErrorInfo struct {
	Name string    `json:"name"`
	Code ErrorCode `json:"code"`
}

// Result is the outcome of one call. It is
// a value: every copy the pipeline hands out (to the caller, to each
// observer, to each post-execute listener) shares no mutable memory with
// another, so nobody can change what someone else sees. Use
// [Result.Clone] when keeping one.
type Result struct {
	// CallID is the call's id. When the call was rejected with
	// INVALID_CALL it is the repaired id: each invalid UTF-8 sequence and
	// control character replaced by U+FFFD, cut to [MaxCallIDLen] bytes.
	CallID string `json:"callId"`
	// Content is the model-facing content.
	Content []Content `json:"content"`
	// IsError marks a failed call.
	IsError bool `json:"isError"`
	// Error is the structured failure class. Execute sets it on every
	// isError result (TOOL_ERROR when nothing more specific is known) and
	// never on a success, so a failed result's Error is never nil.
	Error *ErrorInfo `json:"error,omitempty"`
	// AdditionalContext is context for the agent loop to append after the
	// step's tool results, in the order tool, wrapper, post-execute (for
	// run_code: its sub-calls' first, in submission order). See
	// [BatchContext].
	AdditionalContext []string `json:"additionalContext,omitempty"`
	// ConcludeTurn asks the agent loop to end the turn after this step
	// instead of calling the model again (the tool, a wrapper, or for
	// run_code one of its sub-calls asked). Only a successful result
	// carries it: finalize clears it on an isError. See [ConcludesTurn].
	ConcludeTurn bool `json:"concludeTurn,omitempty"`
	// Meta is the tool's opaque presentation payload (lossless JSON) from a
	// successful execute.
	Meta json.RawMessage `json:"meta,omitempty"`
	// Value is the canonical value of a successful call of a tool that
	// declares its output ([Definition].OutputSchema): canonical JSON that
	// matched the schema (MCP's structuredContent). Nil on a failure and
	// for a text-only tool; see [Result.CanonicalValue].
	Value json.RawMessage `json:"value,omitempty"`
}

// Clone returns a deep copy of r.
func (r Result) Clone() Result {
	r.cloneIn()
	return r
}

// cloneIn makes *r a deep copy of itself.
func (r *Result) cloneIn() {
	r.Content = slices.Clone(r.Content)
	r.AdditionalContext = slices.Clone(r.AdditionalContext)
	r.Meta = slices.Clone(r.Meta)
	r.Value = slices.Clone(r.Value)
	if r.Error != nil {
		e := *r.Error
		r.Error = &e
	}
}

// cloneOrZero is r.Clone(), or the zero Result when r is nil.
func (r *Result) cloneOrZero() Result {
	if r == nil {
		return Result{}
	}
	return r.Clone()
}

// Data returns what presentResult receives about r (a copy).
func (r Result) Data() ResultData {
	c := r.Clone()
	return ResultData{Content: c.Content, IsError: c.IsError, Meta: c.Meta, Value: c.Value}
}

// Validate reports whether r is losslessly JSON-serializable: valid content
// blocks, meta that is lossless JSON, no error info on a success.
func (r Result) Validate() error {
	if _, err := validateResult(&r); err != nil {
		return fmt.Errorf("tools: invalid result: %w", err)
	}
	return nil
}
