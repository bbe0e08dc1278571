// Package audit is the record of every tool call and the console's
// approval inbox (import path github.com/dsh-go/dsh/plugins/audit).
//
// # The store
//
// A [Store] holds call records ([Call]) and the asks routed to the console
// ([Ask]). Two implementations pass one conformance suite:
// [OpenSQLite] (embedded, one file, pure Go) and [OpenPostgres] (shared
// by several gateways). Both bring the schema up to date at open with
// versioned migrations (table dsh_schema; concurrent starts take turns).
// Times are stored as Unix nanoseconds.
//
// # The recorder
//
// A [Recorder] installed on a registry ([Recorder.Install]) writes each
// call twice: an entry record when the call enters tools/pre-execute
// (its listener runs first), and the completed record when the result is
// final (the tracer's End, just before tools/result). A call rejected
// before pre-execute (INVALID_ARGS, INVALID_CALL) has only the completed
// record. The entry record is written before the policy's decision takes
// effect: the listener queues it, lets the policy decide, then waits for
// the write, so a call never runs unrecorded, and a gateway that dies
// mid-call leaves the call on record, unfinished. The record carries the
// decisions and who took them ([Decision]): the permission rule (through
// [Config].Explain), the approver and channel ([SetApprover]), the guard
// that denied, a post-execute block.
//
// A recorder made without a store ([Config].Store nil) keeps no record:
// it only tells [Config].Live of each call (begin, stages, end), with the
// same decisions and redacted arguments, and no call waits for a write
// (`dsh mcp serve` feeds its JSON call log so when there is no audit
// store).
//
// Writes go through a bounded queue ([WriterConfig]) and one writer
// goroutine that writes what is queued in batches, one transaction each.
// When the queue of entry records is full, [Block] waits up to
// BlockTimeout and [Fail] fails at once; either way the call is denied
// with [CodeUnavailable]. A completion always has room (each call holds at
// most one entry and one completion), and a batch that cannot be written
// after retries is logged at error level and counted
// ([Recorder.Stats]); nothing is dropped silently.
//
// Arguments are redacted ([Redactor]: values under secret-looking names,
// URL user info and query values) and cut to a bound; the preview of the
// result likewise.
//
// # The inbox
//
// An [Inbox] is a tools.Approver for asks routed to the console. Each ask
// is stored (pending), any console sharing the store answers it
// ([Store.AnswerAsk]: exactly once, by a conditional update), and the
// asking gateway, told by a notification (PostgreSQL LISTEN/NOTIFY, or in
// process for SQLite) or by its periodic look, applies the answer through
// plugins/approval's slot: once, and only while the caller still waits.
// The ask ends applied, late (the caller had stopped waiting: nothing
// granted), withdrawn (cancelled or timed out before any answer) or
// abandoned (its gateway is gone: never granted). A gateway is alive while
// it holds a connection named after its instance (PostgreSQL,
// pg_stat_activity) or while its process runs (SQLite, same host).
// "always" allows the call and later calls of the same tool from the same
// session and identity.
package audit
