// Package rest is the HTTP face of sandfs: route families on httprouter,
// each speaking the dialect of a product whose clients must work against
// sandfs unchanged, all acting on the same core.Sandbox of a Registry.
//
// # Sandboxes
//
// A Registry (registry.go) is the live set of sandboxes, which the daemon
// changes while the Server runs. The route wrapper (routes.go serve,
// selector.go) resolves the sandbox a request acts on once, at its start:
// the named family's path, or the sandbox selector of the agent, AIO and
// sandboxd families (X-Sandfs-Sandbox, ?sandbox=, else the token's own sandbox, else
// "default"). It holds it until the request ends and carries it in the
// request's context, where the handlers take it (Server.sandboxOf, lent to
// the families as httpkit.Host.SandboxOf).
// Registry.Remove ends the sandbox's streams at once (streams.go) and
// waits for its holds. sandboxes.go serves GET, POST, PATCH and DELETE
// /v1/sandboxes over the daemon's Manager; adopt.go, POST with adopt, over
// its Adopter, when the Manager is one (the daemon's --sandboxes DIR).
// With a Placement (the fleet's, placement.go), a sandbox another host
// holds is 307 there and one moving 503, before the registry is asked.
// move.go serves POST /v1/sandboxes/{name}/move over the daemon's Mover;
// while it runs, the sandbox's writes are refused 503 on this host too
// (gate.go).
//
// # Route table
//
// routes.go holds the one route table, which the Server composes from its
// own lines and those of the route families, each a package of its own:
// one line a route (httpkit.Line), with the family it belongs to, whether
// the token applies, its handler, the renderer of its family's error
// shape, and a comment naming its parameters. [Server.Routes] returns it,
// and the tests generate the auth cases and the OpenAPI coverage from it.
// Handlers are thin: decode the query or body, make one call into core,
// encode the answer. The families:
//
//   - service (rest): GET /health, /v1/health, /v1/ping ({"status":"ok"},
//     no token), GET /openapi.json and GET /metrics.
//   - sandbox-agent (rest/agentfs): the eight /v1/fs/* routes of the
//     sandbox-agent spec.
//   - AIO (rest/aio): /v2/fs/*, /v1/file/*, /v2/watch, /v1/file/watch and
//     /v1/capabilities.
//   - named sandboxes (rest/named): /v1/sandboxes/:name/… and
//     /v1/sprites/:name/….
//   - sandboxd (rest/sandboxd): KEP-539.2's /v1/files/*path (GET, HEAD,
//     PUT, DELETE), /v1/metadata and /v1/watch (SSE, sandfs's proposal
//     for the KEP's Watch); its /v1/health is the service route,
//     whose answer carries uptime_seconds and whose 503 carries the
//     standard's {code, message}.
//   - MCP (rest/mcp): POST, GET and DELETE /mcp (the token's sandbox, as
//     the agent and AIO routes select it) and /v1/sandboxes/:name/mcp
//     (/v1/sprites/:name/mcp): the Model Context Protocol over streamable
//     HTTP, stateless, on the official Go SDK; refusals as JSON-RPC errors.
//   - the sandboxes themselves (sandboxes.go, in the named family's shape).
//   - web console (ui.go, ui/): GET /ui/*file, the embedded page and its
//     modules (public: they carry no data) that browse and watch the
//     sandboxes through the authed routes; GET /v1/sandboxes lists the
//     sandbox names for its picker and the default excludes its feed hides.
//
// A family asks what it needs of the Server through httpkit.Host (host.go):
// the body limits, the request's sandbox, a value kept beside the sandbox
// (the AIO watchers'), the context its streams wait under, and what the
// sandbox was forked from (the Manager's word: changes since a fork). What the
// families share (the error vocabulary, the query and body helpers,
// preconditions, the rule for names that are not UTF-8) is rest/httpkit's.
//
// Every path a family answers with is an API path (core.Info.Path, or the
// result of core.Sandbox.Clean), never the host path of the root.
//
// # Errors
//
// httpkit.Classify turns any error a handler returns into a kind of
// api.md §2 and its status; each family renders it in its own shape, the
// renderer its table lines carry (fail.go looks it up from the table, and
// for a path no route took, from the path's prefix). The service routes
// and the refusals made before any route speak the sandbox-agent family's
// problem+json.
//
// An error Classify does not know is a 500: the full error is logged with
// an id and the client gets only the id. A panic in a handler is recovered
// (middleware.go), logged with its stack and answered as a 500 in the
// family's shape, or, if the answer had already begun, the connection is
// cut. No error body carries a host path or panic text.
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
// application/json (415 otherwise; httpkit.RequireJSON, called by
// httpkit.DecodeBody for every family). The named watch websocket goes through the same check before
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
// bodies, and a sandboxd PUT's, at Limits.MaxTarBody (4 GiB): over the cap
// is 413, decided from Content-Length before reading when it is announced,
// else when the reader crosses it. The families' own bounds (a listing's entries, an upload's
// paths, a named write's size) are in their docs; the archive limits
// (entries, extracted bytes) are core's. Header and idle timeouts belong to
// the http.Server cmd/sandfs builds.
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
