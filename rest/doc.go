// Package rest is the HTTP face of sandfs: route families on httprouter,
// each speaking the dialect of a product whose clients must work against
// sandfs unchanged, all acting on the same core.Sandbox of a Registry.
//
// # Sandboxes
//
// A Registry (registry.go) is the live set of sandboxes, which the daemon
// changes while the Server runs. The route wrapper (routes.go serve,
// selector.go) resolves the sandbox a request acts on once, at its start:
// the named family's path, or the sandbox selector of the agent and AIO
// families (X-Sandfs-Sandbox, ?sandbox=, else the token's own sandbox, else
// "default"). It holds it until the request ends and carries it in the
// request's context, where the handlers take it (Server.sandboxOf).
// Registry.Remove ends the sandbox's streams at once (streams.go) and
// waits for its holds. sandboxes.go serves GET, POST, PATCH and DELETE
// /v1/sandboxes over the daemon's Manager.
//
// # Route table
//
// routes.go holds the one route table: one line a route, with the family it
// belongs to, whether the token applies, and a comment naming its
// parameters. [Server.Routes] returns it, and the tests generate the auth
// cases and the OpenAPI coverage from it. Handlers are thin: decode the
// query or body, make one call into core, encode the answer. Today's
// families:
//
//   - service: GET /health, /v1/health, /v1/ping ({"status":"ok"}, no
//     token) and GET /openapi.json.
//   - sandbox-agent (agentfs.go, agentfs_types.go): the eight /v1/fs/*
//     routes of the sandbox-agent spec, with its wire types to the field.
//   - AIO files (aio_files.go: limits and capabilities; aio_readwrite.go:
//     read, write, stat; aio_list.go: list, search, find, glob;
//     aio_entries.go: mkdir, copy, move, delete; aio_edit.go; aio_params.go;
//     aio_files_types.go; aio_user.go): /v2/fs/* and /v1/file/* and
//     /v1/capabilities; v1 speaks the 1.x schema's models (tests validate
//     against a copy in testdata/), v2 the contract's. aio_user.go resolves
//     `user` into a core.Owner for every route that creates files.
//   - web console (ui.go, ui/): GET /ui/*file, the embedded page and its
//     modules (public: they carry no data) that browse and watch the
//     sandboxes through the authed routes; GET /v1/sandboxes lists the
//     sandbox names for its picker and the default excludes its feed hides.
//
// The AIO family (/v1/file, /v2/fs, the aio_watch*.go watchers) and the
// named-sandbox family (named.go, named_attrs.go, named_types.go,
// named_watch.go: /v1/sandboxes/:name/fs) have the same shape: handler files,
// a types file holding the wire types and the family's error renderer, and
// their lines in the table.
//
// Every family reads its query with the helpers of params.go and its JSON
// body with decodeBody (body.go); both take or return what a family needs to
// word a refusal in its own dialect (a 400 invalid_request, or the AIO
// family's 422 validation errors).
//
// Every path a family answers with is an API path (core.Info.Path, or the
// result of core.Sandbox.Clean), never the host path of the root.
//
// # Errors
//
// Core returns *fs.PathError{Op, Path (API path), Err: unix.Errno}. One
// function, classify in errors.go, turns any error a handler returns into an
// errKind: the kind of api.md §2 (not_found, already_exists, invalid_target,
// no_space_left, …) and its HTTP status, looking only at types and errnos
// (errors.As), never at message text. The op tells the two ENOTEMPTYs apart:
// on remove it is a non-empty directory (409 invalid_target), on move a
// non-empty destination (409 already_exists). ENXIO and ENODEV (open(2) of a
// unix socket, a FIFO with no reader, a device with no driver) are
// invalid_target like EINVAL, which is what core reports for them anyway. Refusals the boundary makes
// itself (a missing parameter, a bad body, a wrong media type, no token) are
// requestErrors and classify the same way; a failure reading the request
// body is blamed on the client (400, or 413 over a limit), not on the disk.
//
// errors.go holds the whole vocabulary (the kinds, the error types of every
// family, classify); each family renders an errKind in its own shape, beside
// its wire types, through writeError, which writes the header block they
// share. The sandbox-agent family
// writes application/problem+json {type: "urn:sandbox-agent:error:<kind>",
// title, status, detail} with the kinds of its own enum; where that enum has
// no kind (a full disk, a body over a limit, an unknown failure) the status
// stays true (507, 413, 500) under stream_error or invalid_request.
//
// An error classify does not know is a 500: the full error is logged with an
// id and the client gets only the id. A panic in a handler is recovered
// (middleware.go), logged with its stack and answered as a 500 in the
// family's shape, or, if the answer had already begun, the connection is
// cut. No error body carries a host path or panic text.
//
// # Names that are not UTF-8
//
// A name that is not valid UTF-8 cannot be put in a JSON string or read
// back from one without becoming U+FFFD, which is the name of another
// possible file. names.go holds the rule: no answer reports such a name
// (core leaves it out of listings, walks and grep and counts it; the
// handler answers X-Sandfs-Skipped-Names: N), no request acts on one (a
// query or multipart path that is not UTF-8 is 400 invalid_path), and no
// watcher hears of one (journal.Reportable). An error met below such a
// name carries no path, and its message spells the bytes Go-quoted.
//
// # Auth
//
// With Config.Token set, every route whose table line says so (all but the
// health routes) needs the token as "Authorization: Bearer T",
// "X-API-Key: T", or, on GET and HEAD only, the query parameter
// access_token or api_key (browsers cannot set headers on EventSource and
// websockets; a form or an <img> of another page can put a token in a URL,
// so a request that changes something must carry it in a header).
// Candidates are hashed and compared with crypto/subtle, so neither the
// content nor the length of the token leaks through timing. A missing or
// wrong token is 401 in the route's family shape (token_invalid for /v1/fs)
// with WWW-Authenticate. A sandbox's own token (Registry.Add) opens that
// sandbox only: auth.go holds the scope and why its lookups leak nothing.
//
// # Browsers
//
// browser.go guards every route, before the token, against web pages: a
// Host that is not loopback, localhost, the listen address or a
// Config.AllowHosts name is 421 misdirected_request (DNS rebinding; a unix
// socket takes any Host); a request from a page of another origin
// (Sec-Fetch-Site cross-site or same-site, or else an Origin whose host is
// not the request's Host) is 403 cross_origin_refused unless
// Config.AllowOrigins names its Origin; a JSON body must say
// application/json (415 otherwise; requireJSON, called by decodeBody for
// every family). The named watch websocket goes through the same check before
// its upgrade. Only for an allowed origin does the daemon speak CORS: OPTIONS
// (httprouter's GlobalOPTIONS) answers its preflight, and every answer to it
// carries Access-Control-Allow-Origin; no other page gets an
// Access-Control-* header, so no other page can read an answer.
//
// The errors net/http writes itself before any handler (431 for headers
// over MaxHeaderBytes, 400 for a bad Host or header) would be plain text:
// WrapListener wraps the daemon's listener so that each connection replaces
// net/http's error write (recognised by its exact form) with the same
// status in the family shape of the route the request line names, or as
// problem+json elsewhere (preroute.go).
//
// # Limits
//
// JSON request bodies are capped at Limits.MaxJSONBody (64 MiB) and tar
// bodies at Limits.MaxTarBody (4 GiB): over the cap is 413, decided from
// Content-Length before reading when it is announced, else when the reader
// crosses it. PUT /v1/fs/file has no cap but the disk (507): it streams into
// core.WriteFile and never holds the file in memory. A listing stops at
// 10,000 entries (header X-Sandfs-Truncated: true), an upload-batch answer at
// 1024 paths (truncated: true); the archive limits (entries, extracted bytes)
// are core's. Header and idle timeouts belong to the http.Server cmd/sandfs
// builds.
//
// A refusal must reach a client that writes its whole body before reading
// (Python's urllib): after every handler, drain.go sends the answer and
// then reads and discards the rest of the body, at most 128 MiB and 5 s,
// so such a client finishes writing and reads its 413, 507 or 401 instead
// of a connection reset. A body announcing more than that, or a client
// still waiting on "Expect: 100-continue", is not waited for.
//
// # OpenAPI
//
// openapi.json (embedded, served at GET /openapi.json) describes every route
// of the table with its parameters, bodies and a response schema for every
// status it returns, and records in route descriptions the decisions the
// contract left open. The tests keep it true: every table route is in the
// document and the other way round, and every response the route tests
// receive is validated against the schema of its route and status.
package rest
