// Package aio is the AIO family of sandfs's HTTP face: the file routes
// /v2/fs/* and /v1/file/*, the watchers of /v2/watch and /v1/file/watch,
// and GET /v1/capabilities, in the dialect of the AIO sandbox, whose
// clients must work against sandfs unchanged. It may import the shared
// kit (rest/httpkit), core and its subpackages, api and internal; never
// rest (which imports it and composes Family.Routes into its one route
// table), another family, daemon, natsout, fusefs or cmd. What it needs of
// the server (the request's sandbox, body limits, the end of streams) it
// asks of an httpkit.Host.
//
// # Routes
//
// routes.go holds the family's lines of the table. Handlers are thin:
// decode the query or body, make one call into core, encode the answer.
// files.go: limits and capabilities; readwrite.go: read, write, stat;
// list.go: list, search, find, glob; entries.go: mkdir, copy, move,
// delete; edit.go and undo.go: the editor and its undo history; grep.go;
// transfer.go: upload, download, tree; xattr.go; params.go and lax.go: the
// family's way of reading queries and bodies; files_types.go and
// watch_types.go: the wire types. v1 speaks the 1.x schema's models
// (rest's tests validate against a copy in rest/testdata/), v2 the
// contract's. user.go resolves `user` into a core.Owner for every route
// that creates files.
//
// # Errors
//
// Every answer, success or failure, is the envelope {success, message,
// data, hint} (aio.go, which renders an httpkit.ErrKind). The two dialects
// differ only in the status of an expected filesystem failure: /v1/file/*
// answers it 200 with success:false, /v2/* with the status of api.md §2. A
// malformed body, a missing field or one of the wrong type is 422 with the
// fields worded as pydantic words them.
//
// # Watchers
//
// watch.go, watch_sse.go: a watcher on a directory or a file, polled, long
// polled, waited on, or streamed as server-sent events. What the family
// remembers of a sandbox's watchers is kept beside the sandbox
// (Host.SandboxValue) and goes with it; a stream waits under
// Host.StreamContext, so that the daemon's stop and the sandbox's removal
// end it with a last message.
package aio
