package rest

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strings"

	"sandfs/rest/httpkit"
)

// fail classifies err, logs what the client will not see, and renders it in
// the family's shape.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, fam httpkit.Shape, pattern string, err error) {
	k := httpkit.Classify(err)
	if k.Internal {
		id := errorID()
		s.log.Error("request failed", "id", id, "method", r.Method, "route", pattern, "err", err)
		k.Detail = "internal error " + id + "; the server log has the details"
	}
	if k.Kind == httpkit.KindPreconditionFailed && k.ETag != "" {
		w.Header().Set("ETag", k.ETag)
	}
	fam.Render(w, k)
}

func errorID() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// shapeOf is the error shape of the family named name: the renderer its
// table lines carry. Service routes (health, openapi) and unknown paths
// speak problem+json too: the only error they give is 401/404/405.
func (s *Server) shapeOf(name string) httpkit.Shape {
	if sh, ok := s.shapes[name]; ok {
		return sh
	}
	return s.shapes[FamilyService]
}

// shapeForPath picks the family of a path no route matched (404, 405).
func (s *Server) shapeForPath(p string) httpkit.Shape {
	switch {
	case p == "/mcp" || (strings.HasPrefix(p, "/v1/sandboxes/") || strings.HasPrefix(p, "/v1/sprites/")) && strings.HasSuffix(p, "/mcp"):
		return s.shapeOf(FamilyMCP)
	case strings.HasPrefix(p, "/v1/fs/"):
		return s.shapeOf(FamilyAgent)
	case p == "/v1/file" || strings.HasPrefix(p, "/v1/file/"):
		return s.shapeOf(FamilyAIOv1)
	case strings.HasPrefix(p, "/v2/"):
		return s.shapeOf(FamilyAIOv2)
	case strings.HasPrefix(p, "/v1/sandboxes/"), strings.HasPrefix(p, "/v1/sprites/"):
		return s.shapeOf(FamilyNamed)
	case p == "/v1/files" || strings.HasPrefix(p, "/v1/files/"):
		return s.shapeOf(FamilySandboxd)
	}
	return s.shapeOf(FamilyService)
}

// notFound answers a path no route matches.
func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	if s.refuseBrowser(w, r) {
		return
	}
	s.familyForPath(r.URL.Path).Render(w, httpkit.ErrKind{Kind: httpkit.KindRouteNotFound, Status: http.StatusNotFound,
		Detail: "no route " + r.Method + " " + r.URL.Path})
}

// methodNotAllowed answers a known path asked with the wrong method
// (httprouter has set Allow).
func (s *Server) methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	if s.refuseBrowser(w, r) {
		return
	}
	s.familyForPath(r.URL.Path).Render(w, httpkit.ErrKind{Kind: httpkit.KindMethodNotAllowed, Status: http.StatusMethodNotAllowed,
		Detail: "method " + r.Method + " not allowed on " + r.URL.Path + "; allowed: " + w.Header().Get("Allow")})
}
