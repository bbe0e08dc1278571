// Package approval is the approval service that answers a tool pipeline's
// "ask" (import path github.com/dsh-go/dsh/plugins/approval, package
// approval). Load [Plugin] with a [Config] to provide a [*Service] under
// tools.ApprovalService ("approval"); the registry looks it up for every
// ask, so load order does not matter and a deployment without it keeps the
// ask→deny degrade.
//
// A request ([tools.ApprovalRequest]) carries the agent, the tool name, the
// call id, the ask's reason and the tool's own presentation of the call
// (its call card, or nil), plus the execution for its raw arguments. The
// answer is one of tools.AllowedOnce (the call proceeds), tools.Rejected,
// tools.Cancelled or tools.Unavailable (each denies with its own code).
//
// # Answerers
//
// The service delegates the question to an [Answerer] (with the
// [AnswerFunc] adapter):
//
//   - [AnswerFunc]: a Go function, for policies in code.
//   - [Queue]: a channel of [*Pending] requests an embedding runtime or UI
//     receives and answers with [Pending.Respond]; [Pending.Done] tells it
//     when to take a withdrawn request off the screen.
//   - [Handoff]: a function given each request as a [*Pending] with the
//     call's context, for an answer that comes from elsewhere (the
//     console's inbox in plugins/audit stores it and applies a stored
//     answer with [Pending.Respond], learning whether it was taken).
//   - [Terminal]: an interactive prompt on an io.Reader/io.Writer pair that
//     renders the call card ([Render]), asks whether to allow the call once (y/N), and asks
//     one question at a time however many calls ask at once.
//
// # Deadline, cancellation, failure
//
// [Config.Timeout] bounds how long a request waits: past it the request is
// withdrawn from the answerer (context cause [ErrTimeout]) and the answer
// is unavailable. If the call itself is cancelled while waiting, the
// request is withdrawn too and [Service.Approve] returns ctx.Err(), which
// the registry reports as ABORTED_BEFORE_DISPATCH. Approve returns at once
// in both cases, even for an answerer slow to notice; [Service.Close] (run
// when the plugin's fiber is disposed) withdraws what is waiting
// (unavailable) and waits for every answerer call to return.
//
// # The withdrawal wins
//
// Each request is decided exactly once, by its answer or by its
// withdrawal, and the withdrawal wins every race by construction rather
// than by timing: from the moment its condition holds (the call's context
// is done, the clock has reached the deadline, Close has begun) the request
// counts as withdrawn for everyone who looks, whether or not the goroutine
// waiting for it has run yet. An answer given from then on, even in the
// same instant, grants nothing, and whoever answered learns it:
// [Pending.Respond] returns an error matching [ErrWithdrawn] (and the
// cause), [Terminal] shows that the answer came too late and was not
// applied (and never applies that line to the next question), and an
// [Answerer]'s late return value is logged and ignored. Approve never
// returns [tools.AllowedOnce] for a withdrawn request, nor when its ctx is
// done by the time it returns.
//
// A misbehaving answerer fails closed: an error, a panic or an outcome
// outside the four makes Approve return an [*AnswererError] (matching
// [ErrAnswerer]) rather than a made-up outcome, so the registry denies the
// call with APPROVAL_FAILED and a message saying what went wrong (a
// "rejected" would falsely claim that a person said no). The answerer's
// error and a caller's cancellation cause are read bounded and under
// recover: a cyclic chain, or an Error method that panics, cannot hang
// or crash Approve, the [Terminal] or [Service.Close].
//
// Time-dependent behaviour uses context deadlines and timers only, so it is
// tested with testing/synctest.
package approval
