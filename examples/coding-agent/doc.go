// Command coding-agent is the example agent session: an agent loop that
// embeds the dsh host, driven by a scripted model (a replayable list of
// assistant turns with tool calls, testdata/session.json) in a temporary
// workspace. It shows native tool calling and Code Mode, an approval ask
// answered on the terminal (or automatically with -approve=yes), the
// timeout policy, a guard's denial and a post-execute block. Each model
// turn's calls run as one batch (Registry.ExecuteBatch): a turn with three
// reads and a bash runs the reads in parallel and the bash after them,
// with the batch's timeline printed. A finish tool, called from a Code
// Mode program, concludes the turn and so ends the session. Each call's
// cards are printed as terminal text, and the session log (tool calls,
// results, code-dispatch events, context messages) is written as JSONL.
//
// It runs offline with no keys:
//
//	go run ./examples/coding-agent
package main
