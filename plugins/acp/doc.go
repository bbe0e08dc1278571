// Package acp (import path github.com/dsh-go/dsh/plugins/acp, package name
// acp) shows the tool calls of an agent to an editor over the Agent Client
// Protocol (https://agentclientprotocol.com), and asks the editor's user
// for approval. It builds on the ACP Go SDK, github.com/coder/acp-go-sdk;
// import that under another name (acpsdk, say), as both packages are
// called acp.
//
// Load [Plugin] beside the tool registry. When the agent runtime opens an
// ACP session (session/new), it attaches the agent scope that runs the
// session's tool calls with [Bridge.Attach], giving the SDK's
// *AgentSideConnection as the [Peer]. From then on every call of that scope
// is reported as session/update notifications, rendered from the tool's
// own presentation cards (tools.CallView, tools.ResultView):
//
//	tool_call         status pending      when the call enters policy (tools/pre-execute)
//	tool_call_update  status in_progress  when its body is about to run (tools/execute)
//	tool_call_update  completed | failed  with its result (tools/result)
//
// In an agent built on the SDK (conn is its *acpsdk.AgentSideConnection):
//
//	root.Plugin(acp.Plugin, acp.Config{Approval: true})
//	bridge, _ := acp.Service.Get(root)
//
//	// session/new: one agent scope per ACP session.
//	scope, err := root.Scope(host.ScopeKey(id))
//	sess, err := bridge.Attach(scope.ScopeKey(), conn, id, acp.SessionOptions{Cwd: req.Cwd})
//
//	// session/prompt: the model's calls run for that scope; flush, then answer
//	// (also after session/cancel: Flush returns within Config.StallTimeout).
//	results := reg.ExecuteBatch(ctx, calls, tools.BatchOptions{}) // each Call.Agent == sess.Scope()
//	err = sess.Flush(context.WithoutCancel(ctx))
//
//	// session/cancel: open permission requests answer cancelled.
//	sess.Cancel()
//
// A call denied before its body goes from pending to failed. Each call's
// updates keep that order, also when a batch runs calls in parallel (their
// updates interleave). Call [Session.Flush] before answering
// session/prompt, so the turn's updates arrive first.
//
// # Card to ACP fields
//
// The pending tool_call carries toolCallId = the call's id (an empty id, or
// one the session already used, in flight or among its last 4096 calls,
// gets a "#n" suffix) and status pending, and from the call card:
//
//   - GenericCall: Title → title; Kind → kind (an ACP tool kind passes as
//     is, anything else is other); Content → content (each block as an ACP
//     content block); Locations → locations (line only when > 0); RawInput →
//     rawInput, or the call's canonical arguments when RawInput is empty.
//   - TerminalCall: Title (the command) → title; kind execute; Description →
//     content (one text block); Cwd is not sent (ACP has no field for it);
//     rawInput is the call's arguments.
//   - DiffCall: Title → title; kind edit; Diffs → content entries of type
//     diff (path, oldText, absent for a new file, newText); Locations →
//     locations; rawInput is the call's arguments.
//   - no card: the tool's name → title; kind other; the arguments → rawInput.
//
// The final tool_call_update carries status failed when Result.IsError,
// else completed, rawOutput = the final tools.Result as JSON, and from the
// result card:
//
//   - GenericResult: Title → title (when set); Content → content (when set).
//   - TerminalResult: Title → title (when set); Output, ExitCode and Signal →
//     one text block: the output in a code fence, then "exit code N" or
//     "killed by signal S". The command ran in the agent's process, not in
//     an ACP terminal, so no terminal content is sent.
//   - DiffResult: Title → title (when set); Diffs → diff content, as above.
//   - no card, or a card without content: the result's model-facing
//     content → content (for a failure, its error text).
//
// Relative paths of locations and diffs are resolved against
// SessionOptions.Cwd when it is set (ACP wants absolute paths). rawInput
// and rawOutput larger than Config.MaxRawBytes are left out. [Mapping]
// returns this table as data; the generated catalog renders it.
//
// # Approval
//
// With Config.Approval the bridge is also the registry's approval service
// ([Bridge.Approve], a tools.Approver). An ask of an attached scope becomes
// session/request_permission on its session, naming the pending tool_call
// and offering allow_once, allow_always, reject_once and reject_always. An
// always answer is remembered for the session, scoped to the tool and to
// what the card shows: a terminal card's exact command, or the paths of a
// diff or generic card (a later call is covered when every path it touches
// is among them); a card with neither covers every call of the tool.
// Remembered rejections win over remembered allows. An ask answers
// cancelled when the client says so, when the call's context is done, or
// when the agent cancels the turn with [Session.Cancel] (call it from the
// session/cancel handler) — whether or not the client ever answers. A
// client answer naming an option that was not offered denies the call
// with that reason (APPROVAL_FAILED). Asks of scopes attached to no session
// go to Config.Fallback, or are unavailable.
//
// Updates are written by one goroutine per session from a bounded queue.
// A burst of calls that fills it goes at the pace of the editor: a call's
// pending and in_progress updates wait for room (until the call's context
// is done). A peer that reads nothing for Config.StallTimeout while calls
// or [Session.Flush] wait breaks the session: it sends nothing more, its asks are
// unavailable, and the waiting calls go on. [Session.Close] detaches a
// session; disposing the plugin closes them all.
package acp
