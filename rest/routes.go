package rest

import (
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/julienschmidt/httprouter"

	"sandfs/rest/agentfs"
	"sandfs/rest/httpkit"
	"sandfs/rest/named"
)

const (
	public = httpkit.Public // no token needed
	authed = httpkit.Authed // token needed when one is configured
)

// table is the one route table: rest's own lines and each family's
// (Family.Routes of rest/agentfs, rest/aio, rest/named), in this order. One
// line a route; the comment names its parameters (q: query, b: body).
func (s *Server) table() []httpkit.Line {
	svc := httpkit.Shape{Name: FamilyService, Render: agentfs.RenderProblem}
	sandboxes := httpkit.Shape{Name: FamilyNamed, Render: named.Render}
	return slices.Concat(
		[]httpkit.Line{
			// Service (api.md §1).
			svc.On("GET", "/health", public, s.health),           // → {"status":"ok"}
			svc.On("GET", "/v1/health", public, s.health),        // → {"status":"ok"}
			svc.On("GET", "/v1/ping", public, s.ping),            // → {"status":"ok"}
			svc.On("GET", "/openapi.json", authed, s.openapiDoc), // → OpenAPI 3.1 document
			svc.On("GET", "/metrics", authed, s.metrics),         // → Prometheus text (metrics.go)

			// Web console (ui.go): the page (GET /ui/), its scripts and style sheet, embedded; public (they carry no data). GET /ui → 301 /ui/.
			svc.On("GET", "/ui/*file", public, s.uiAsset), // → an embedded file; anything else 404
		},
		// sandbox-agent (rest/agentfs): /v1/fs/*.
		s.agent.Routes(),
		// AIO (rest/aio): /v2/watch, /v1/file/watch, /v2/fs/*, /v1/file/*, /v1/capabilities.
		s.aio.Routes(),
		[]httpkit.Line{
			// The sandboxes themselves (sandfs's own, api.md §5 "The sandboxes"; sandboxes.go): list (the console's picker), create, quota, remove.
			sandboxes.On("GET", "/v1/sandboxes", authed, s.listSandboxes),          // → {sandboxes: [{name, usage: {bytes, entries}, quota: {bytes, entries}}], count}, "default" first
			sandboxes.On("GET", "/v1/sprites", authed, s.listSandboxes),            // → as above
			sandboxes.On("POST", "/v1/sandboxes", authed, s.createSandbox),         // b: {name, quota?: {bytes?, entries?}} → 201 {name, token, quota}
			sandboxes.On("POST", "/v1/sprites", authed, s.createSandbox),           // b: as above → as above
			sandboxes.On("PATCH", "/v1/sandboxes/:name", authed, s.patchSandbox),   // b: {quota: {bytes?, entries?}} → {name, quota, usage}
			sandboxes.On("PATCH", "/v1/sprites/:name", authed, s.patchSandbox),     // b: as above → as above
			sandboxes.On("DELETE", "/v1/sandboxes/:name", authed, s.deleteSandbox), // → {name, removed: true}
			sandboxes.On("DELETE", "/v1/sprites/:name", authed, s.deleteSandbox),   // → as above
			// A fork's merge into its parent (merge.go); the daemon's token only.
			sandboxes.On("POST", "/v1/sandboxes/:name/merge", authed, s.mergeFork), // b: {into?, dry_run?, paths?, strategy?: fail|ours|theirs} → {fork, into, checkpoint, strategy, dryRun, undo, written, removed, conflicts, skipped, count}; conflicts under fail → 409 with the same
			sandboxes.On("POST", "/v1/sprites/:name/merge", authed, s.mergeFork),   // b: as above → as above
			// A move to another host of the fleet (move.go); the daemon's token only.
			sandboxes.On("POST", "/v1/sandboxes/:name/move", authed, s.moveSandbox), // b: {to} → {name, from, to, url, checkpoint, seq, seconds, sent: {objects, bytes}, fetched: {objects, bytes}}
			sandboxes.On("POST", "/v1/sprites/:name/move", authed, s.moveSandbox),   // b: as above → as above
		},
		// Named sandboxes (rest/named): /v1/sandboxes/:name/…, /v1/sprites/:name/….
		s.named.Routes(),
		// sandboxd (rest/sandboxd, KEP-539.2): /v1/files/*path, /v1/metadata, /v1/watch; its /v1/health is the service line above.
		s.sandboxd.Routes(),
		// MCP (rest/mcp): /mcp (the token's sandbox) and /v1/sandboxes/:name/mcp.
		s.mcp.Routes(),
	)
}

// handle wraps a route's handler: recover, the browser guard (Host and
// Origin, browser.go), then serve, with any error rendered in the route's
// family shape.
func (s *Server) handle(rt httpkit.Line) httprouter.Handle {
	fam := httpkit.Shape{Name: rt.Family, Render: rt.Render}
	st := newRouteStats(rt.Route)
	s.stats = append(s.stats, st)
	sel := routeSelector(rt.Route)
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		start := time.Now()
		tw := &trackingWriter{ResponseWriter: w}
		var body *countingBody
		if r.Body != nil && r.Body != http.NoBody {
			body = &countingBody{ReadCloser: r.Body}
			r.Body = body
		}
		defer func() {
			var in int64
			if body != nil {
				in = body.n
			}
			st.done(tw.status, in, tw.n, time.Since(start))
		}()
		defer s.recoverPanic(tw, r, fam, rt.Path)
		if err := s.browser.check(r); err != nil {
			s.fail(tw, r, fam, rt.Path, err)
			return
		}
		s.browser.allowPage(tw, r)
		if err := s.serve(tw, r, rt, sel, ps); err != nil {
			s.fail(tw, r, fam, rt.Path, err)
		}
		drainBody(tw, r, body) // the answer reaches a client that sends its whole body first
	}
}

// serve is a request past the browser guard: the sandbox it names
// (selector.go), auth and the token's scope (auth.go), the actor header
// (httpkit/actor.go), the placement's answer for a sandbox another host
// holds or one moving (placement.go), the sandbox it acts on, held until
// the handler returns, then the handler.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, rt httpkit.Line, sel selectorKind, ps httprouter.Params) error {
	named, nameErr := namedSandbox(sel, r, ps)
	own, err := s.authorize(r, rt.Route, sel, named)
	if err != nil {
		return err // 401 before a bad selector's 400
	}
	if nameErr != nil {
		return nameErr
	}
	if own != "" && sel == selectNone {
		// Only a route on no sandbox (the list) asks whose token it was:
		// a route on a sandbox already acts on the token's own.
		r = r.WithContext(context.WithValue(r.Context(), tokenSandboxKey{}, own))
	}
	if r, err = httpkit.WithActor(r); err != nil {
		return err
	}
	name := actsOn(sel, named, own)
	if sel == selectNone {
		name = ps.ByName("name") // PATCH and DELETE /v1/sandboxes/{name}
	}
	if done, err := s.routePlaced(w, r, name); done || err != nil {
		return err
	}
	r, held, err := s.withSandbox(r, sel, name)
	if err != nil {
		return err
	}
	if held != nil {
		defer held.release()
	}
	if held == nil && name != "" && mayWrite(r) && s.reg.gated(name) {
		return errMovingHere(w, name) // PATCH, DELETE, a move of a sandbox moving (gate.go)
	}
	done, err := enterWrite(w, r, held)
	if err != nil {
		return err
	}
	defer done()
	return rt.Handle(w, r, ps)
}
