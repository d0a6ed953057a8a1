package rest

import (
	"net/http"

	"github.com/julienschmidt/httprouter"
)

// Route is one line of the route table.
type Route struct {
	Method string // GET, PUT, POST, DELETE
	Path   string // httprouter pattern (":name" for a path parameter)
	Family string // FamilyService, FamilyAgent, …: which error shape the route speaks
	Auth   bool   // whether the token (when one is configured) is required
}

// Families: each renders errors in its own shape (see errors.go).
const (
	FamilyService = "service"       // /health, /v1/ping, /openapi.json
	FamilyAgent   = "sandbox-agent" // /v1/fs/*
	FamilyAIOv1   = "aio-v1"        // /v1/file/*: AIO envelope, filesystem failures 200 + success:false
	FamilyAIOv2   = "aio-v2"        // /v2/fs/*, /v2/watch: AIO envelope, the status of API.md §2
)

// handlerFunc is a thin handler: decode, one core call, encode. A non-nil
// error has written nothing yet; handle renders it in the route's family.
type handlerFunc func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error

type route struct {
	Route
	h handlerFunc
}

const (
	public = false // no token needed
	authed = true  // token needed when one is configured
)

// table is the one route table. One line a route; the comment names its
// parameters (q: query, b: body). sessionId/session_id is accepted and
// ignored on every /v1/fs route.
func (s *Server) table() []route {
	return []route{
		// Service (API.md §1).
		{Route{"GET", "/health", FamilyService, public}, s.health},           // → {"status":"ok"}
		{Route{"GET", "/v1/health", FamilyService, public}, s.health},        // → {"status":"ok"}
		{Route{"GET", "/v1/ping", FamilyService, public}, s.health},          // → {"status":"ok"}
		{Route{"GET", "/openapi.json", FamilyService, authed}, s.openapiDoc}, // → OpenAPI 3.1 document

		// sandbox-agent (API.md §3, seed 000).
		{Route{"GET", "/v1/fs/entries", FamilyAgent, authed}, s.fsEntries},           // q: path (default ".") → [FsEntry]
		{Route{"GET", "/v1/fs/file", FamilyAgent, authed}, s.fsReadFile},             // q: path; Range → bytes
		{Route{"PUT", "/v1/fs/file", FamilyAgent, authed}, s.fsWriteFile},            // q: path; b: bytes → FsWriteResponse
		{Route{"DELETE", "/v1/fs/entry", FamilyAgent, authed}, s.fsDeleteEntry},      // q: path, recursive → FsActionResponse
		{Route{"POST", "/v1/fs/mkdir", FamilyAgent, authed}, s.fsMkdir},              // q: path → FsActionResponse
		{Route{"POST", "/v1/fs/move", FamilyAgent, authed}, s.fsMove},                // b: {from,to,overwrite} → FsMoveResponse
		{Route{"GET", "/v1/fs/stat", FamilyAgent, authed}, s.fsStat},                 // q: path → FsStat
		{Route{"POST", "/v1/fs/upload-batch", FamilyAgent, authed}, s.fsUploadBatch}, // q: path (default "."); b: tar → FsUploadBatchResponse

		// AIO watch (API.md §4, §6, seed 001): v2.
		{Route{"POST", "/v2/watch", FamilyAIOv2, authed}, s.watchCreate},           // b: {path, recursive, debounce, exclude, include_patterns} → {watcher_id, path, status, created_at, reused, initial_cursor}
		{Route{"GET", "/v2/watch", FamilyAIOv2, authed}, s.watchList},              // → {watchers, count}
		{Route{"GET", "/v2/watch/:id/poll", FamilyAIOv2, authed}, s.watchPollV2},   // q: cursor, limit, timeout → {events, cursor, overflow}; Accept: text/event-stream → SSE
		{Route{"GET", "/v2/watch/:id/events", FamilyAIOv2, authed}, s.watchEvents}, // q: cursor; Last-Event-ID → SSE
		{Route{"DELETE", "/v2/watch/:id", FamilyAIOv2, authed}, s.watchStop},       // → {watcher_id, status, subscribers}
		// AIO watch: v1 (the 1.x schema's models).
		{Route{"POST", "/v1/file/watch", FamilyAIOv1, authed}, s.watchCreate},           // b: CreateWatchRequest → as v2
		{Route{"GET", "/v1/file/watch", FamilyAIOv1, authed}, s.watchList},              // → as v2
		{Route{"POST", "/v1/file/watch/wait", FamilyAIOv1, authed}, s.watchWait},        // b: {path, timeout, event_types} → the first matching event; 503 on timeout
		{Route{"POST", "/v1/file/watch/:id/poll", FamilyAIOv1, authed}, s.watchPollV1},  // b: PollRequest {cursor, limit, timeout} → {events, cursor, overflow}
		{Route{"GET", "/v1/file/watch/:id/events", FamilyAIOv1, authed}, s.watchEvents}, // q: cursor; Last-Event-ID → SSE
		{Route{"DELETE", "/v1/file/watch/:id", FamilyAIOv1, authed}, s.watchStop},       // → as v2
	}
}

// handle wraps a route's handler: recover, auth, then the handler, with any
// error rendered in the route's family shape.
func (s *Server) handle(rt route) httprouter.Handle {
	fam := familyOf(rt.Family)
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		tw := &trackingWriter{ResponseWriter: w}
		defer s.recoverPanic(tw, r, fam, rt.Path)
		if rt.Auth && !s.auth.ok(r) {
			s.fail(tw, r, fam, rt.Path, errUnauthorized)
			return
		}
		if err := rt.h(tw, r, ps); err != nil {
			s.fail(tw, r, fam, rt.Path, err)
		}
	}
}
