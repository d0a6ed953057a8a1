// Package mcp serves the Model Context Protocol over streamable HTTP: the
// route family of POST, GET and DELETE /mcp and /v1/sandboxes/:name/mcp,
// whose tools act on the request's sandbox.
//
// # The rule
//
// Every tool makes its calls into sandfs core (or core/grep,
// core/changes, core/checkpoint) on the sandbox the route wrapper of rest
// resolved and holds for the request (httpkit.Host.SandboxOf): a tool never
// opens a host path, so everything it reads or writes is confined to the
// sandbox's root as on every other route, and every change is journaled
// with origin api. What this package imports is the route families' rule
// (.ci/layering): httpkit, core and its subpackages, api and internal, never
// rest or another family.
//
// # The protocol
//
// The protocol itself (JSON-RPC framing, streamable HTTP, version
// negotiation) is the official Go SDK's
// (github.com/modelcontextprotocol/go-sdk), in its stateless mode: every
// POST is a whole exchange, the daemon keeps no session, and GET and DELETE
// answer 405 as the specification lets a server without streams do. The
// tool handlers run under the HTTP request's context, so they see the
// sandbox it holds and the actor of its X-Sandfs-Actor header. A tool's
// schemas are inferred from its Go types and its arguments validated by
// the SDK's own schema library (github.com/google/jsonschema-go), as the
// SDK's typed tools are, but wired here (tool.go) at a fraction of the
// cost per call.
//
// # The tools
//
// tools_ref.go holds the 14 tools of the reference filesystem server
// (@modelcontextprotocol/server-filesystem) with its names, arguments and
// answer texts, refops.go and readpart.go their file work; reftext.go the
// formats they answer in (the git-style diff, sizes, dates, globs, Node's
// error wording). tools_sandfs.go holds sandfs's own tools (delete, copy,
// grep, changes_since, checkpoint, list_checkpoints, restore), tools_log.go
// the log tool (the journal event by event); resources.go the files as
// MCP resources (resources/list and resources/read). A failure is
// a tool result with isError set and a text naming an API path, never a
// host path. refusal.go turns the SDK's plain-text refusals into the
// family's JSON-RPC errors. docs/mcp.md lists the tools and where sandfs
// answers otherwise than the reference.
//
// # Who acts
//
// A change is attributed, as on every route, to the X-Sandfs-Actor header;
// without it, to the clientInfo.name the MCP client gave (per request in
// the 2026-07-28 protocol; a client speaking an older one names itself only
// in initialize, which a stateless server does not keep, so its changes
// carry no name unless it sends the header). A name the header check would
// refuse (a label of the daemon's own, a control character) is dropped.
package mcp
