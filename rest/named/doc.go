// Package named is the named-sandbox family of sandfs's HTTP face: the
// routes under /v1/sandboxes/:name/ and, the same, /v1/sprites/:name/ (fs/*
// reads and writes, events, the watch websocket, changes, checkpoints and
// restore), in the dialect of the named-sandbox spec, whose clients must
// work against sandfs unchanged. It may import the shared kit
// (rest/httpkit), core and its subpackages, api and internal; never rest
// (which imports it and composes Family.Routes into its one route table),
// another family, daemon, natsout, fusefs or cmd. The sandbox a route acts
// on is the one its path names, which the server resolves and holds before
// the handler runs (httpkit.Host.SandboxOf).
//
// routes.go holds the family's lines of the table; named.go, attrs.go: the
// fs routes; events.go and changes.go: the journal read back; watch.go: the
// websocket, whose streams end with the daemon's stop or the sandbox's
// removal (Host.StreamContext); checkpoints.go: checkpoints and restore;
// types.go: the wire types and the family's error shape, {error, code,
// path} with the errno name as code (Render). rest's sandboxes routes
// (/v1/sandboxes itself) speak the same shape and use Render. The body of
// a write is capped at MaxWrite (16 MiB, 413 over it).
package named
