// Package mcpclient mounts an MCP server's tools into the tool registry
// (import path github.com/dsh-go/dsh/plugins/mcp-client, package name
// mcpclient). Load [Plugin] once per server with a [Config]; the server's
// tools then run through the registry's full pipeline (policy, approval,
// timeouts, batches, Code Mode) like any other tool.
//
//	f, err := root.Plugin(mcpclient.Plugin, mcpclient.Config{
//		Name:    "fs",
//		Command: "npx",
//		Args:    []string{"-y", "@modelcontextprotocol/server-filesystem", "/srv/data"},
//	})
//	// the server's tool read_text_file is now the registry tool mcp__fs__read_text_file
//	_ = f.Dispose() // every tool gone, the session closed, the process ended
//
// # Transports and bounds
//
// Config.Command runs a stdio server; Config.URL reaches a streamable HTTP
// server, or a legacy HTTP+SSE one with Config.SSE. Every inbound message
// is bounded by Config.MaxMessageBytes: a stdio line, an HTTP JSON body,
// one SSE event. A server that cannot start is reported with its exit
// status and the tail of its stderr; an HTTP server's URL appears in
// errors with its user info and query values masked.
//
// # Names
//
// Each server tool becomes a registry tool named mcp__<server>__<tool>
// ([ToolName]). Model APIs accept [A-Za-z0-9_-] and at most 64 characters,
// so a name outside that is normalized (other characters become "_", the
// name is cut to fit) and gets a stable eight-hex-digit hash suffix of the
// original; two tools whose names would still be equal get distinct
// suffixes ([ToolNames]). The server's own name is what calls are sent
// with.
//
// # Tools follow the server
//
// The input schema is the server's, unvalidated by the harness (the server
// validates its input); a tool whose schema is not lossless JSON (see
// package canonjson) is not mounted, and the log says why. A result's content blocks pass through unchanged
// (binary data as base64). A tool whose outputSchema is inside the
// structured-output subset (package schema, object root) is mounted with
// it as its declared output (tools.Definition.OutputSchema), and its
// structured content is the result's canonical value (tools.Result.Value),
// validated: a mismatch or a missing value is INVALID_OUTPUT, naming the
// server that broke its own schema. Without a declared output (no
// outputSchema, or one outside the subset, not validated) structured
// content is kept in the result's Meta ({"structuredContent": ...}). Empty
// content is rendered from the structured content. An isError result
// becomes a tool error (MCP_TOOL_ERROR) whose text is the server's.
//
// When the server announces notifications/tools/list_changed the plugin
// lists its tools again: removed tools are unregistered, new ones
// registered, changed ones replaced, all through the plugin's context, so
// disposing the plugin removes whatever is registered at that moment.
//
// # Failures
//
// The call's context cancels the MCP request (notifications/cancelled is
// sent) and the call is ABORTED; Config.CallTimeout does the same with
// TOOL_TIMEOUT. A server that dies, closes its connection or sends an
// oversized message during a call fails the call at once with
// MCP_SERVER_UNAVAILABLE, never a hang; so do calls while it is not
// connected. A JSON-RPC error answer is MCP_SERVER_ERROR.
//
// After a lost session (or a failed start, unless FailOnStartError) the
// plugin reconnects with exponential backoff, at most
// Config.Reconnect.MaxAttempts times, and lists the tools again on
// success; the tools stay registered while it retries and are removed when
// it gives up. [StatusChanged] reports every step.
//
// # Annotations and trust
//
// A tool's annotations (readOnlyHint, destructiveHint, idempotentHint,
// openWorldHint) are copied to its tools.Definition.Annotations and shown
// on its call card and in the catalog. MCP says a client must not trust
// annotations from an untrusted server, so they inform behaviour only when
// Config.Trusted is set: then a read-only tool runs in parallel in a batch
// (tools.Parallel), its card kind says "read", and
// tools.Annotations.Trusted tells policy plugins they may act on the
// hints. Untrusted, every call is exclusive and the card says the hints
// are untrusted.
//
// # Elicitation
//
// A server may ask the user for input during a call (elicitation/create).
// The request goes to Config.Elicitor, else to the approval service
// (tools.ApprovalService) for the agent of the call in progress, else it
// is declined. It is never accepted by default; see [Elicitor].
//
// # Processes
//
// A stdio server runs in its own process group with this process's
// environment plus Config.Env. Its stderr is logged at debug level. When
// the session ends its stdin is closed, then the group gets SIGTERM and
// SIGKILL after a short grace each, and the process is always reaped.
package mcpclient
