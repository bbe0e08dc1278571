// Package hooks answers Claude Code and Codex tool hooks with the
// pipeline's policies (import path github.com/dsh-go/dsh/plugins/hooks,
// package name hooks). It is what `dsh hook claude-code` and
// `dsh hook codex` run: the coding agent starts the command before and
// after each tool call with a JSON payload on stdin; the command decides
// with the configured policies, through the pipeline's policy stages
// ([tools.Registry.Check], [tools.Registry.CheckPost]), without running
// any tool and without asking anyone, and answers in the hook's JSON.
//
//	pol := reg // a *tools.Registry with the policy plugins loaded
//	code := hooks.Run(ctx, hooks.ClaudeCode, os.Stdin, os.Stdout, os.Stderr,
//		func(context.Context, hooks.Payload) (hooks.Policy, func(), error) { return pol, nil, nil },
//		hooks.Options{})
//	os.Exit(code)
//
// Installed as hooks, with the gateway's dsh.json as the policy; Claude
// Code (.claude/settings.json):
//
//	{"hooks": {
//	  "PreToolUse":  [{"matcher": "*", "hooks": [{"type": "command", "command": "dsh hook claude-code --config /path/dsh.json"}]}],
//	  "PostToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "dsh hook claude-code --config /path/dsh.json"}]}]}}
//
// Codex (~/.codex/hooks.json, or <repo>/.codex/hooks.json):
//
//	{"hooks": {
//	  "PreToolUse":  [{"matcher": "Bash|apply_patch|mcp__.*", "hooks": [{"type": "command", "command": "dsh hook codex --config /path/dsh.json"}]}],
//	  "PostToolUse": [{"matcher": "Bash|apply_patch|mcp__.*", "hooks": [{"type": "command", "command": "dsh hook codex --config /path/dsh.json"}]}]}}
//
// # Payload fields read
//
// Both formats, both events ([ParsePayload]; every other field, such as
// session_id, transcript_path, permission_mode, model and turn_id, is
// ignored):
//
//   - hook_event_name: PreToolUse or PostToolUse; anything else is an
//     error.
//   - tool_name (non-empty string): the call's name, as the agent names
//     it: Claude Code's Bash, Read, Write, Edit, Glob, Grep, WebFetch, ...,
//     Codex's Bash and apply_patch, and MCP tools as mcp__<server>__<tool>
//     in both, the name the dsh MCP gateway gives them, so one rule covers
//     the tool whichever way it is reached. Names are not translated:
//     Codex's apply_patch carries its file paths inside the patch text
//     (tool_input.command), so a rule on Edit or Write does not cover it.
//   - tool_input (object): the call's arguments, canonicalized as the
//     pipeline does (not lossless JSON, or larger than 4 MiB, denies).
//   - tool_use_id (string, optional): the call's id (an invalid id denies,
//     as INVALID_CALL).
//   - tool_response (any JSON value; PostToolUse only, required): the
//     tool's result as post-execute sees it: a string as one text block of
//     itself, any other value as one text block of its JSON.
//   - cwd (string, optional): the session's current directory, which
//     `dsh hook` gives the permission rules as their current directory
//     (Read(./.env) is the .env in cwd).
//
// The payload is read for matching only. It must be JSON of at most
// [MaxPayloadBytes], at most 64 levels deep, without duplicate member
// names outside tool_response (in tool_input the agent and a rule could
// read different values). Numbers JSON readers disagree on (integers
// beyond ±(2^53-1)) are read as strings of their digits, which rules
// match as the same text; lone surrogates and invalid UTF-8 are read as
// U+FFFD, except in tool_input, where they are an error like duplicate
// members (a rule would read another name than the agent); a duplicate
// member inside tool_response counts by its last value. None of these
// fails the hook.
//
// # Output written
//
// PreToolUse, from the [tools.Verdict]; Claude Code:
//
//   - deny: {"hookSpecificOutput": {"hookEventName": "PreToolUse",
//     "permissionDecision": "deny", "permissionDecisionReason": <the
//     denial's text>}}
//   - ask: the same with "ask" and "dsh policy requires approval: <the
//     ask's reason>"; Claude Code asks the user.
//   - allow that a policy decided (a tools/pre-execute listener returned
//     allow without passing the call on): "allow", without a reason.
//   - allow that no policy decided (Verdict.Default: every listener passed
//     the call on, as the permissions plugin does for its allow rules, and
//     no guard denied): {} — no decision, so the agent's own permission
//     settings apply. dsh only tightens them.
//
// Codex honours only a deny from PreToolUse (an allow without updatedInput
// and an ask are rejected by Codex as unsupported, which lets the call
// through), so for Codex: deny as above; ask is a deny whose reason says
// that approval is required and Codex hooks cannot ask; every allow is {}.
//
// PostToolUse, both formats, from the result post-execute left
// ([tools.Registry.CheckPost]):
//
//   - a blocked (or failed) result: "decision": "block", "reason": its
//     text (the block's feedback), which the agent gives the model;
//   - additional context of post-execute listeners, joined by blank lines:
//     "hookSpecificOutput": {"hookEventName": "PostToolUse",
//     "additionalContext": ...};
//   - nothing to say: {}.
//
// Content a post-execute listener puts in place of the result is not
// written (no updatedMCPToolOutput, no updatedToolOutput): the agent keeps
// the tool's own output, and a listener that must keep it from the model
// blocks instead. No other output field is written (no updatedInput: dsh
// never changes a call's arguments; no continue, stopReason,
// suppressOutput or systemMessage).
//
// # Failures fail closed
//
// Every answer is a JSON object on stdout and exit code 0, except when the
// payload's event is not known (not JSON, not an object, larger than
// MaxPayloadBytes, no hook_event_name, an event other than PreToolUse and
// PostToolUse, stdin not complete within [Options].Timeout): then the
// answer is exit code 2 with the reason on stderr
// and nothing on stdout, which both agents treat as a blocking error.
// When the event is known, a problem (a missing or mistyped field, a
// configuration that does not load, a panicking or hung policy, see
// [Options].Timeout) is that event's denial: PreToolUse deny, PostToolUse
// block, with a reason that names what was wrong, also written to stderr.
package hooks
