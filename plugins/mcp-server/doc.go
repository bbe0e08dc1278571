// Package mcpserver serves a tool registry to MCP clients (import path
// github.com/dsh-go/dsh/plugins/mcp-server, package name mcpserver), with
// the go-sdk's server over stdio or streamable HTTP.
//
// Every tool the registry holds is served with every policy of the host
// in force: each tools/call runs the registry's full pipeline
// (pre-execute, guards, approval, the tools/execute wrappers, post-execute,
// tools/result), exactly as an in-process call does.
//
//	srv, err := mcpserver.New(root, reg, mcpserver.Config{})
//	...
//	err = srv.Run(ctx, &mcp.StdioTransport{}) // one session over stdin/stdout
//
//	h, err := srv.Handler(nil) // or streamable HTTP, one scope per session
//	http.ListenAndServe(":8080", h)
//
// # Sessions are agent scopes
//
// Each MCP session is an agent scope of its own (keys "mcp-1", "mcp-2",
// ...), created when the session opens and disposed, with everything
// registered through it, when the session ends. Tools, guards, restrictions
// and listeners registered through that scope ([Config].OnSession hands it
// over) concern that session only. The session's tool list is what its
// agent sees (tools.Registry.Visible), and it stays current: a
// registration, an unregistration or a restriction change is reflected in
// the list and announced with notifications/tools/list_changed. Under the
// registry's Code Mode (tools mode code or both) the list holds run_code,
// whose description carries the TypeScript SDK of the session's tools
// (an MCP client has no tools:sdk prompt section to read it from); its
// sub-calls run the pipeline for the session's agent as in-process.
//
// A tool with behaviour hints (tools.Annotations) is served with its title
// and MCP annotations, and _meta "dsh/annotations" {"trusted": bool}: false
// when the hints are only what an untrusted server claims. A tool that
// declares its output (tools.Definition.OutputSchema) with an object root,
// as MCP requires, is served with it as its outputSchema.
//
// # Results
//
// A result's content blocks map one to one to MCP content blocks (text,
// image, audio, embedded resource, resource link) and isError is kept. A
// successful result of a tool served with an outputSchema carries its
// canonical value (tools.Result.Value) as structuredContent, beside the
// content rendered from it; otherwise a successful result whose Meta has a
// "structuredContent" member (as tools mounted by plugins/mcp-client keep
// a server's structured content when they declare no output) serves it as
// structuredContent. An
// isError result carries its error class in _meta under "dsh/error": the
// result's error code and name, for example {"code": "DENIED", "name":
// "ToolDenied"} for a call a tools/pre-execute listener denied (a
// permission rule of plugins/permissions), "GuardDenied" for a guard's
// plain error; additional context from the pipeline is under
// "dsh/additionalContext".
//
// # Approval
//
// The server provides tools.ApprovalService while it runs. An ask from a
// session whose client declared elicitation support in its initialize
// request becomes an elicitation/create to that client, in form mode,
// whose message renders the tool, its call card and the reason, with an
// empty form, and whose _meta "dsh/approval" has the tool, call id and
// reason: accept allows the call once, decline rejects it, cancel cancels
// it, and any other answer, or a failed request, fails closed
// (APPROVAL_FAILED); [Config].ElicitationTimeout bounds the wait
// (unavailable when it passes). The message of an ask on run_code shows
// its whole program, and that of an ask on a call a served run_code
// program makes shows the program that makes it, each line sanitized and
// prefixed "| ", under the program's SHA-256 and size (a call card would
// cut it). Other asks
// go to [Config].Approver, or to the approval service provided when the
// server was created; with neither, the ask is answered unavailable and
// the call denied.
//
// Over HTTP a session records the identity that opened it
// ([SessionInfo].Identity: the go-sdk auth.TokenInfo's UserID, set by an
// authentication middleware in front of [Server.Handler]); the go-sdk
// refuses the session's id to any other identity, and an HTTP DELETE of a
// session cancels its calls before closing it, so it answers at once. A
// call whose HTTP request goes away before it answers (the client
// disconnected or dropped the request) is cancelled, with or without a
// notifications/cancelled.
// [SessionInfo].Token is the token information of that middleware (its
// Extra, such as a JWT's claims), and [Config].SessionRules gives each
// session its own Hidden and Access (the dsh gateway's per-identity
// permission profiles), used for its tool list, run_code's SDK, and its
// resource and prompt listings, reads and gets.
// [Config].NoClientApproval keeps asks from the calling client altogether:
// a client answering its own session's elicitation is that client's
// consent, which an untrusted agent must not give itself.
//
// [Server.ForwardElicitation] sends a mounted server's own elicitation
// (its message, prefixed with the server's name, and its requested
// schema) to the client of the calling session, and returns that client's
// answer; it declines when the client cannot take it or NoClientApproval
// is set. The dsh gateway uses it as its mounted servers' Elicitor.
//
// # Limits
//
// [Config].MaxSessions and MaxSessionsPerIdentity bound the sessions (a
// session past them is refused: HTTP 503 with a JSON-RPC error of code
// [CodeLimit]); MaxCallsPerSession and MaxCalls bound the tools/call
// requests in flight (a call past them is a JSON-RPC error of code
// CodeLimit, and does not run).
//
// # Protocol versions
//
// The served versions are [ProtocolVersions], the session-based ones
// (2025-11-25 and earlier). A session is the unit of scope and of
// approval, and an elicitation is a request the server sends in the middle
// of a call; the 2026-07-28 protocol is sessionless and replaces both, so a
// client offering it is answered with 2025-11-25 (the go-sdk client falls
// back on its own). For the same reason the HTTP handler refuses
// Stateless.
//
// # Lifetime
//
// With [Config].Upstream, the mounted servers' resources, resource
// templates and prompts are served too (resources/list, resources/read,
// resources/templates/list, prompts/list, prompts/get), under the tools'
// namespacing: names mcp__<server>__<name>, URIs dsh://<server>/<upstream
// URI>; [Config].Hidden applies to the namespaced names, and
// [Config].Access decides each read and get, its asks going to the
// approval service as a tool call's do (see proxy.go).
//
// Completions (completion/complete) of a mounted server's prompt
// (ref/prompt mcp__<server>__<name>) or resource template (ref/resource
// dsh://<server>/<template>) go to that server with the names mapped
// back; the capability is offered when a server connected at the
// session's start offers it (a session's capabilities are fixed when it
// starts; so are subscriptions'). A completion is refused when the prompt or
// template is hidden or [Config].Access denies it (for a prompt, with the
// completion context's arguments; for a template, {"uri": <template>});
// an ask refuses it too: a completion is never asked for (asking on every
// keystroke would be unusable), and its candidate values may be what the
// ask rule protects, so an ask fails closed. The answer is cut to 100 values of at most
// 4 KiB (hasMore set).
//
// With an Upstream that reports its servers' notifications
// ([UpstreamWatcher], as mcpclient's *Upstreams does), resource
// subscriptions are proxied too (see subscribe.go): a session's
// resources/subscribe of dsh://<server>/<uri> is decided as a read (a
// hidden or denied resource, or an ask not allowed once, is refused) and
// subscribes <uri> on the server once for every session (reference
// counted); the server's updates go, under the namespaced URI, to the
// sessions subscribed to it while a read of it is not hidden or denied;
// unsubscribing, or the session's end, releases its share, the last one
// unsubscribing on the server; a reconnected server is subscribed again.
// A session holds at most 1,024 subscriptions. The servers' resources and
// prompts list_changed (and a server's connection or removal) reach every
// session as list_changed.
//
// A [Server] belongs to the context it was created with: disposing that
// fiber closes it. [Server.Close] ends every session and returns once
// their scopes are disposed, their calls have returned and no goroutine of
// the server is left.
package mcpserver
